//! `--trace[=FILE]`: one strace-style line per trapped call, with decoded
//! arguments, the result, and the sandbox's pid; nothing when off.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

#[test]
fn trace_to_a_file_decodes_serviced_and_denied_calls() {
    let t = Tree::new();
    let log = t.join("trace.log");
    let script = "import os\nfd = os.open('/etc/hostname', os.O_RDONLY | os.O_CLOEXEC)\nos.lseek(fd, 0, os.SEEK_SET)\nos.close(fd)\nos.close(os.open('/tmp/new', os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))\nos.close(os.open('/proc/meminfo', os.O_RDONLY))\ntry:\n    os.chroot('/')\nexcept OSError as e:\n    print(e.errno)\ntry:\n    os.rmdir('/nonexistent/x')\nexcept OSError as e:\n    print(e.errno)\nimport ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nif libc.unshare(0x10020000) == -1:\n    print(ctypes.get_errno())";
    let out = Run::new(&[PY, "-c", script])
        .sup(&[
            format!("--trace={}", log.display()),
            "--memory=1g".to_string(),
        ])
        .supervised()
        .ok("traced run");
    assert_eq!(
        out.stdout, "1\n2\n1\n",
        "EPERM for chroot, ENOENT for rmdir, EPERM for unshare"
    );
    assert_eq!(out.stderr, "", "--trace=FILE writes nothing to stderr");
    let text = std::fs::read_to_string(&log).unwrap();
    let has = |needle: &str| {
        assert!(
            text.lines().any(|l| l.contains(needle)),
            "no line with {needle:?} in the trace:\n{text}"
        )
    };
    // (glibc adds O_LARGEFILE on its own.)
    let open = text
        .lines()
        .find(|l| l.contains(r#"openat(AT_FDCWD, "/etc/hostname", O_RDONLY|"#));
    let open = open.unwrap_or_else(|| panic!("no openat of /etc/hostname:\n{text}"));
    // Resolved by the VFS, opened by the kernel (nothing to create).
    assert!(
        open.contains("|O_CLOEXEC, 00) = ? <passed to the kernel>"),
        "{open}"
    );
    let line_of = |needle: &str| {
        let line = text.lines().find(|l| l.contains(needle));
        line.unwrap_or_default().to_string()
    };
    // An open that writes (or creates) passes the filter: never traced.
    assert!(
        !text.contains(r#""/tmp/new""#),
        "a writing open was trapped:\n{text}"
    );
    // Served by the supervisor (the limit's meminfo), installed as fd 3.
    let meminfo = line_of(r#""/proc/meminfo""#);
    assert!(meminfo.contains(", 00) = 3 <"), "{meminfo}");
    has(r#"chroot("/") = -1 EPERM (Operation not permitted) [denied by policy]"#);
    // A rewind is trapped (it may re-serve a /proc file); a plain file's
    // goes back to the kernel.
    has(r#"lseek(3, 0, SEEK_SET) = ? <passed to the kernel>"#);
    has(r#"rmdir("/nonexistent/x") = -1 ENOENT"#);
    has("unshare(CLONE_NEWNS|CLONE_NEWUSER) = -1 EPERM (Operation not permitted) [denied by policy]");
    has("= -1 ENOENT (No such file or directory)");
    for line in text.lines() {
        assert!(line.starts_with("[pid "), "line without a pid: {line}");
        assert!(line.ends_with('>'), "line without a duration: {line}");
    }
    // The guest's own pid in the sandbox (its main process is pid 2).
    assert!(text.lines().all(|l| l.starts_with("[pid 2] ")), "{text}");
}

#[test]
fn trace_goes_to_stderr_and_costs_nothing_when_off() {
    let run = Run::new(&["/bin/cat", "/etc/hostname"]);
    let quiet = run.clone().supervised().ok("untraced");
    assert_eq!(quiet.stderr, "");
    let traced = run.sup(&["--trace"]).supervised().ok("traced to stderr");
    assert_eq!(traced.stdout, quiet.stdout);
    assert!(
        traced
            .stderr
            .contains(r#"openat(AT_FDCWD, "/etc/hostname", O_RDONLY"#),
        "{}",
        traced.dump()
    );
}

#[test]
fn trace_to_an_unwritable_file_is_a_setup_error() {
    let out = Run::new(&["/bin/true"])
        .sup(&["--trace=/nonexistent/dir/trace.log"])
        .supervised();
    assert_eq!(out.code, Some(125), "{}", out.dump());
    assert!(out
        .stderr
        .starts_with("supervisor: --trace=/nonexistent/dir/trace.log: "));
    assert_eq!(out.stderr.lines().count(), 1);
}

#[test]
fn trace_decodes_socket_calls_like_strace() {
    let t = Tree::new();
    let log = t.join("trace.log");
    // A listener and a client on the sandbox's loopback, an IPv6 and a
    // unix socket: each address the trace should spell out.
    let script = "import socket\n\
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n\
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
        s.bind(('127.0.0.1', 0)); s.listen(4)\n\
        port = s.getsockname()[1]\n\
        c = socket.create_connection(('127.0.0.1', port))\n\
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n\
        a, _ = s.accept()\n\
        c.sendall(b'hi'); print(a.recv(2).decode(), port)\n\
        u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n\
        u.bind(('::1', 0))\n\
        u.sendto(b'x', ('::1', u.getsockname()[1]))\n\
        try:\n    socket.socket(socket.AF_UNIX).connect('/nonexistent.sock')\n\
        except OSError as e:\n    print(e.errno)\n";
    let out = Run::new(&[PY, "-c", script])
        .sup(&[format!("--trace={}", log.display())])
        .supervised()
        .ok("traced sockets");
    let mut words = out.stdout.split_whitespace();
    assert_eq!(words.next(), Some("hi"), "{}", out.dump());
    let port = words.next().unwrap_or_default().to_string();
    let text = std::fs::read_to_string(&log).unwrap();
    let has = |needle: &str| {
        assert!(
            text.lines().any(|l| l.contains(needle)),
            "no line with {needle:?} in the trace:\n{text}"
        )
    };
    has("socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, ");
    has("setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4)");
    has("bind(3, {AF_INET, 127.0.0.1:0}, 16) = 0");
    has(&format!(
        "connect(4, {{AF_INET, 127.0.0.1:{port}}}, 16) = 0"
    ));
    has("setsockopt(4, IPPROTO_TCP, TCP_NODELAY, [1], 4) = 0");
    has("accept4(3, ");
    has("socket(AF_INET6, SOCK_DGRAM|SOCK_CLOEXEC, ");
    has("bind(6, {AF_INET6, [::1]:0}, 28) = 0");
    has("sendto(6, ");
    has(", 1, 0, {AF_INET6, [::1]:");
    has(r#"{AF_UNIX, "/nonexistent.sock"}, "#);
}
