//! The netstack's loopback TCP (issue 4): ordinary Python servers and
//! clients (asyncio v4/v6, http.server with urllib, socketserver,
//! multiprocessing.connection), addresses, bind conflicts and options
//! compared with a native run; signals during a blocking accept; denied
//! egress (inside a fresh network namespace); curl against a guest server.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const TCP_SUITE: &str = include_str!("tcp_suite.py");
const SIGNALS: &str = include_str!("signals.py");
const EGRESS: &str = include_str!("egress.py");

/// `python3 -c SCRIPT ARGS...`
fn py(script: &str, args: &[&str]) -> Run {
    let mut v = vec![PY, "-c", script];
    v.extend_from_slice(args);
    Run::new(&v)
}

/// Runs in a fresh network namespace (the guest's destinations are then
/// unreachable even if the policy failed).
fn isolated(run: Run) -> Run {
    let mut run = run;
    run.wrap = vec!["unshare".into(), "-n".into()];
    run
}

#[test]
fn python_tcp_matches_native() {
    let run = py(TCP_SUITE, &[]);
    let native = run.native().ok("native tcp suite");
    let sandboxed = isolated(run).supervised().ok("sandboxed tcp suite");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    assert!(native.stdout.ends_with("done\n"));
}

#[test]
fn python_tcp_over_ipv6() {
    let out = isolated(py(TCP_SUITE, &["v6"])).supervised().ok("v6 suite");
    out.assert_lines(&[
        "asyncio ::1 b'HELLO ASYNCIO\\n'",
        "unbound getsockname :: 0",
        "accept peer ::1 True",
        "accepted local ::1 True",
        "accept peer ::ffff:127.0.0.1 True",
        "client peer ::ffff:127.0.0.1 True",
        "bind 127.0.0.1 -> EADDRINUSE",
        "v4 beside v6only True",
        "done",
    ]);
}

/// SIGINT reaches a guest blocked in `mode`'s call as it would natively:
/// Python prints `want` and both runs end alike.
fn interrupted_like_natively(mode: &str, want: &str) {
    let run = py(SIGNALS, &[mode]);
    let native = run.native();
    let sandboxed = isolated(run).supervised();
    assert_eq!(sandboxed.stdout, want, "{}", sandboxed.dump());
    assert_eq!(
        (sandboxed.code, sandboxed.stdout),
        (native.code, native.stdout)
    );
}

#[test]
fn sigint_interrupts_a_blocked_accept() {
    interrupted_like_natively("sigint", "KeyboardInterrupt in accept\n");
}

#[test]
fn sigint_interrupts_a_blocked_recvfrom() {
    interrupted_like_natively("udp_sigint", "KeyboardInterrupt in recvfrom\n");
}

#[test]
fn signal_handlers_during_accept_lose_no_connection() {
    let out = isolated(py(SIGNALS, &["alarm"])).supervised().ok("alarm");
    assert_eq!(
        out.stdout,
        "accepted 40 in order True alarms fired True\n",
        "{}",
        out.dump()
    );
}

#[test]
fn ctrl_c_forwarded_to_a_server_in_accept() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    // "ready" is printed inside the try: a signal that comes before
    // accept is entered is caught the same way.
    let script = "import socket,sys\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen()\n\
                  try:\n print('ready',flush=True)\n s.accept()\nexcept KeyboardInterrupt:\n \
                  print('interrupted',flush=True);sys.exit(7)\n";
    let mut child = Command::new("unshare")
        .args(["-n"])
        .arg(bin())
        .args(["run", "--", PY, "-c", script])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let bound = kill_after(child.id(), TIMEOUT);
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    // The supervisor forwards SIGINT to the guest.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("kill");
    assert_eq!(
        lines.next().and_then(Result::ok).as_deref(),
        Some("interrupted")
    );
    drop(bound);
    assert_eq!(child.wait().expect("wait").code(), Some(7));
}

#[test]
fn egress_is_refused_at_once_and_reported() {
    let report = std::env::temp_dir().join(format!("net-egress-{}.json", std::process::id()));
    let run = isolated(py(EGRESS, &[])).sup(&["--report", report.to_str().unwrap()]);
    let out = run.supervised().ok("egress");
    let expected = "tcp 10.0.0.1 ECONNREFUSED\ntcp 169.254.169.254 ECONNREFUSED\n\
                    tcp 8.8.8.8 ECONNREFUSED\ntcp mapped ECONNREFUSED\nudp ENETUNREACH\n\
                    icmp 3 EPERM\nicmp echo ENETUNREACH\npacket EPERM\n";
    assert_eq!(out.stdout, expected, "{}", out.dump());
    let text = std::fs::read_to_string(&report).expect("report");
    let _ = std::fs::remove_file(&report);
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    let denied = json["denied_connections"]
        .as_array()
        .expect("denied_connections");
    let seen: Vec<String> = denied
        .iter()
        .map(|d| {
            format!(
                "{} {}:{}",
                d["proto"].as_str().unwrap_or("?"),
                d["address"].as_str().unwrap_or("?"),
                d["port"]
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            "tcp 10.0.0.1:80",
            "tcp 169.254.169.254:80",
            "tcp 8.8.8.8:80",
            "tcp 10.0.0.1:443",
            "udp 10.0.0.1:53",
            "udp 8.8.8.8:0"
        ],
        "{text}"
    );
    assert!(denied
        .iter()
        .all(|d| !d["reason"].as_str().unwrap_or("").is_empty()));
    assert_eq!(json["syscalls"]["denied"]["socket"], 2, "{text}");
}

#[test]
fn curl_against_a_guest_http_server() {
    if !have("curl") {
        eprintln!("skipped: no curl");
        return;
    }
    let script = "import http.server,subprocess,threading\n\
        class H(http.server.SimpleHTTPRequestHandler):\n def log_message(self,*a): pass\n\
        s=http.server.ThreadingHTTPServer(('127.0.0.1',0),H)\n\
        threading.Thread(target=s.serve_forever,daemon=True).start()\n\
        r=subprocess.run(['curl','-sS','-o','/dev/null','-w','%{http_code} %{remote_ip}','http://127.0.0.1:%d/etc/' % s.server_address[1]],capture_output=True,text=True)\n\
        print(r.returncode,r.stdout,r.stderr)\n";
    let out = isolated(py(script, &[])).supervised().ok("curl");
    assert_eq!(out.stdout, "0 200 127.0.0.1 \n", "{}", out.dump());
}

#[test]
fn pyzmq_req_rep_and_pub_sub() {
    let probe = Run::new(&[PY, "-c", "import zmq"]).native();
    if probe.code != Some(0) {
        eprintln!("skipped: no python3-zmq");
        return;
    }
    let run = py(include_str!("zmq_reqrep.py"), &[]);
    let native = run.native().ok("native zmq");
    let sandboxed = isolated(run).supervised().ok("sandboxed zmq");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    assert!(native.stdout.contains("rep b'CCC'\nsub got True"));
}

#[test]
fn interfaces_are_lo_only() {
    let script = "import socket\nprint(socket.if_nameindex())\n\
        import ctypes,ctypes.util\nlibc=ctypes.CDLL(ctypes.util.find_library('c'),use_errno=True)\n\
        p=ctypes.c_void_p()\nprint('getifaddrs', libc.getifaddrs(ctypes.byref(p)))\n";
    let out = isolated(py(script, &[])).supervised().ok("interfaces");
    assert_eq!(out.stdout, "[(1, 'lo')]\ngetifaddrs 0\n", "{}", out.dump());
}

/// Ping sockets to the sandbox's loopback are answered (net_ping.rs
/// compares with native ping).
#[test]
fn ping_loopback_is_answered() {
    if !have("ping") {
        eprintln!("skipped: no ping");
        return;
    }
    let out = isolated(Run::new(&["ping", "-c", "1", "-W", "5", "127.0.0.1"])).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("1 received"), "{}", out.dump());
}

#[test]
fn guest_unix_sockets_work_as_before() {
    let script = "import socket,os,threading\n\
        for name in ('/tmp/u.sock','\\0guest-abstract'):\n\
        \x20s=socket.socket(socket.AF_UNIX);s.bind(name);s.listen()\n\
        \x20if os.fork()==0:\n\
        \x20\x20c=socket.socket(socket.AF_UNIX);c.connect(name);c.sendall(b'child');os._exit(0)\n\
        \x20a,_=s.accept();print(a.recv(10));os.wait()\n\
        a,b=socket.socketpair();a.send(b'pair');print(b.recv(4))\n";
    let out = isolated(py(script, &[])).supervised().ok("unix sockets");
    assert_eq!(
        out.stdout,
        "b'child'\nb'child'\nb'pair'\n",
        "{}",
        out.dump()
    );
}

/// A host process's abstract socket, next to the supervisor's own
/// sockets: a netstack socket never reaches it (the handlers refuse
/// AF_UNIX addresses; the calls that pass look the name up in the
/// sandbox's own network namespace, where it does not exist; see also
/// tests/net/netns.rs).
#[test]
fn netstack_sockets_cannot_reach_host_abstract_names() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
    let name = format!("net-core-probe-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("name");
    // Both kinds under one name: unix datagram and stream names are apart.
    let dgram = UnixDatagram::bind_addr(&addr).expect("bind dgram");
    let stream = UnixListener::bind_addr(&addr).expect("bind stream");
    dgram.set_nonblocking(true).expect("nonblocking");
    stream.set_nonblocking(true).expect("nonblocking");
    let prog = c_prog("netescape");
    // Not in a fresh network namespace: the name must be reachable by
    // the supervisor's namespace for the test to mean anything.
    let out = Run::new(&[prog.to_str().unwrap(), &name])
        .sup(&c_mounts())
        .supervised()
        .ok("escape");
    assert_eq!(
        out.stdout,
        "sendmsg EAFNOSUPPORT\nsendmsg nosignal EAFNOSUPPORT\nsendmmsg EAFNOSUPPORT\nsendto EAFNOSUPPORT\nconnect dgram EAFNOSUPPORT\nconnect stream EAFNOSUPPORT\n",
        "{}",
        out.dump()
    );
    let mut buf = [0u8; 8];
    assert!(dgram.recv(&mut buf).is_err(), "a datagram got through");
    assert!(stream.accept().is_err(), "a connection got through");
}
