//! A guest's reopen of its own stdio by name when the invoker redirected
//! it to regular host files (`supervisor run -- prog < in.txt > out.txt`):
//! `cat /dev/stdin`, `echo x >> /dev/stdout`, `tee -a /dev/stderr`,
//! Python's `open('/dev/stdout', 'a')`, `/proc/self/fd/N`, `/dev/fd/N`.
//! The files lie outside the view, and a root invoker's guest runs as
//! ids of a range of its own: the supervisor serves such a reopen within
//! the access the handed descriptor gave (`syscalls/src/handed.rs`). Each
//! case is compared with the same script run natively on files made
//! afresh with the same contents, as root and as `tester`, by `run` and
//! through the pool, and by static programs (the static loader's
//! rewritten open site, `static_stdio.c` and busybox's shell), and Go's
//! and Python's creates of their stdout anew (`O_RDWR|O_TRUNC`, served
//! write-only); then the refusals: no reopen beyond the handed access,
//! no other host file.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::pool::Pool;
use common::*;

/// Reads, writes, appends and a truncation, each by another name.
const SCRIPT: &str = r#"
read first < /dev/stdin
echo "first: $first"
echo "lines: $(cat /proc/self/fd/0 | wc -l)"
echo "by name" >> /dev/stdout
echo "to stderr" >> /dev/stderr
echo "by fd" >> /dev/fd/1
/usr/bin/python3 -c 'print("python:", open("/dev/fd/0").read().split()[-1], file=open("/dev/stdout", "a"))'
echo tee | tee -a /dev/stderr > /dev/null
echo "truncated" > /proc/self/fd/2
echo "end"
"#;

const INPUT: &str = "one\ntwo\nthree\n";

/// What a run left: its exit code and stdin, stdout and stderr files.
#[derive(Debug, PartialEq)]
struct Left {
    code: Option<i32>,
    input: String,
    out: String,
    err: String,
}

/// Runs `c` (whose user is `user`, if any) with stdin from `in.txt` and
/// stdout and stderr to `out.txt`, `err.txt` in `dir`, made afresh
/// (owned by `user`, mode 0644; stdout and stderr appended to when
/// `append`, else truncated as the shell's `>` does).
fn with_files(mut c: Command, dir: &Path, user: Option<(u32, u32)>, append: bool) -> Left {
    let path = |name: &str| dir.join(name);
    for (name, text) in [
        ("in.txt", INPUT),
        ("out.txt", "old out\n"),
        ("err.txt", "old err\n"),
    ] {
        std::fs::write(path(name), text).expect("write");
        std::fs::set_permissions(path(name), PermissionsExt::from_mode(0o644)).expect("chmod");
        if let Some((uid, gid)) = user {
            chown(path(name), Some(uid), Some(gid)).expect("chown");
        }
    }
    let output = |name: &str| -> File {
        let mut o = OpenOptions::new();
        o.write(true);
        match append {
            true => o.append(true),
            false => o.truncate(true),
        };
        o.open(path(name)).expect("open")
    };
    c.stdin(File::open(path("in.txt")).expect("open"))
        .stdout(output("out.txt"))
        .stderr(output("err.txt"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid);
    }
    let mut child = c.spawn().expect("spawn");
    let guard = kill_after(child.id(), Duration::from_secs(60));
    let status = child.wait().expect("wait");
    drop(guard);
    let read = |name: &str| std::fs::read_to_string(path(name)).expect("read");
    Left {
        code: status.code(),
        input: read("in.txt"),
        out: read("out.txt"),
        err: read("err.txt"),
    }
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("/bin/sh");
    c.args(["-c", script]);
    c
}

fn supervised(bin: &Path, sup: &[String], script: &str) -> Command {
    let mut c = Command::new(bin);
    c.arg("run").args(sup).args(["--", "/bin/sh", "-c", script]);
    c
}

/// A directory `user` (or root) owns, searchable by all.
fn dir_for(user: Option<(u32, u32)>) -> Tree {
    let t = Tree::new();
    std::fs::set_permissions(t.path(), PermissionsExt::from_mode(0o755)).expect("chmod");
    if let Some((uid, gid)) = user {
        t.give_to(uid, gid);
    }
    t
}

/// SCRIPT natively and supervised (`sup`, by `bin`), stdout and stderr
/// truncated and then appended to: the same files left.
fn compare(bin: &Path, sup: &[String], user: Option<(u32, u32)>) {
    let t = dir_for(user);
    for append in [false, true] {
        let native = with_files(sh(SCRIPT), t.path(), user, append);
        assert_eq!(native.code, Some(0), "{native:?}");
        assert!(native.out.contains("python: three"), "{native:?}");
        let sandboxed = with_files(supervised(bin, sup, SCRIPT), t.path(), user, append);
        assert_eq!(sandboxed, native, "append: {append}");
    }
}

fn tester() -> Option<(u32, u32, PathBuf)> {
    tester_bin().ok()
}

#[test]
fn a_guest_reopens_its_stdio_files_as_natively() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    compare(&bin(), &[], None);
}

#[test]
fn an_unprivileged_invoker_s_guest_reopens_its_stdio_files_as_natively() {
    let Some((uid, gid, bin)) = tester() else {
        skip!("needs root and the user tester");
    };
    compare(&bin, &[], Some((uid, gid)));
}

#[test]
fn a_pooled_guest_reopens_its_stdio_files_as_natively() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    let pool = Pool::start(&[]);
    compare(&bin(), &pool.flag(), None);
}

#[test]
fn an_unprivileged_pooled_guest_reopens_its_stdio_files_as_natively() {
    let Some((uid, gid, bin)) = tester() else {
        skip!("needs root and the user tester");
    };
    let pool = Pool::start_as(&[], Some((uid, gid)), &bin);
    compare(&bin, &pool.flag(), Some((uid, gid)));
}

/// Each attempt prints `NAME ok` or `NAME ERRNO`: reopens of stdin (open
/// for reading only) for writing, for reading and writing, truncating;
/// another host file beside it, by path and from stdin's descriptor.
const BEYOND: &str = r#"
import os, sys
def attempt(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
attempt("read", lambda: os.open("/dev/stdin", os.O_RDONLY))
attempt("write", lambda: os.open("/dev/stdin", os.O_WRONLY))
attempt("append", lambda: os.open("/proc/self/fd/0", os.O_WRONLY | os.O_APPEND))
attempt("read-write", lambda: os.open("/dev/fd/0", os.O_RDWR))
attempt("truncate", lambda: os.open("/dev/stdin", os.O_RDONLY | os.O_TRUNC))
attempt("secret", lambda: os.open(sys.argv[1], os.O_RDONLY))
attempt("beside", lambda: os.open("/proc/self/fd/0/../secret", os.O_RDONLY))
attempt("from-fd", lambda: os.open("../secret", os.O_RDONLY, dir_fd=os.open("/proc/self/fd/0", os.O_PATH)))
attempt("init", lambda: os.open("/proc/1/fd/0", os.O_RDONLY))
"#;

/// A root invoker's guest, handed a stdin file open for reading only,
/// reopens it for reading and for nothing more (natively root could:
/// refused by rule), and reaches no other host file; the file is left
/// as it was. Natively the same attempts succeed where root may: the
/// test can tell.
#[test]
fn a_guest_reopens_its_stdin_file_for_no_more_than_reading() {
    if !is_root() {
        skip!("compares with what root may do natively");
    }
    // Outside the guest's view: not the current directory, and beneath
    // the host's /tmp, which the guest's own /tmp hides.
    let host = dir_for(None);
    std::fs::write(host.join("secret"), "secret\n").expect("write");
    let secret = host.join("secret").display().to_string();
    let cwd = dir_for(None);
    let run = |mut c: Command| {
        c.arg(&secret)
            .stdin(File::open(host.join("in.txt")).expect("open"))
            .current_dir(cwd.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        let out = c.output().expect("run");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    std::fs::write(host.join("in.txt"), INPUT).expect("write");
    let mut native = Command::new("/usr/bin/python3");
    native.args(["-c", BEYOND]);
    let native = run(native);
    let native_lines: Vec<&str> = native.lines().collect();
    let opened = [
        "read ok",
        "write ok",
        "append ok",
        "read-write ok",
        "truncate ok",
    ];
    assert_eq!(native_lines[..5], opened, "{native}");
    assert!(native.contains("secret ok"), "{native}");
    std::fs::write(host.join("in.txt"), INPUT).expect("write");
    let mut sandboxed = Command::new(bin());
    sandboxed.args(["run", "--", "/usr/bin/python3", "-c", BEYOND]);
    let sandboxed = run(sandboxed);
    let eacces = libc::EACCES;
    let expected = format!(
        "read ok\nwrite {eacces}\nappend {eacces}\nread-write {eacces}\ntruncate {eacces}\n\
         secret {}\nbeside {}\nfrom-fd {}\ninit {eacces}\n",
        libc::ENOENT,
        libc::ENOTDIR,
        libc::ENOTDIR
    );
    assert_eq!(sandboxed, expected);
    let left = std::fs::read_to_string(host.join("in.txt")).expect("read");
    assert_eq!(left, INPUT, "the stdin file changed");
}

/// Reopens of a stdout file handed for writing only, reported on
/// stderr: a read, a read-write open that keeps the content, and one
/// that truncates (Go's `os.Create`), with what a read and `F_GETFL` of
/// that one give.
const STDOUT_BEYOND: &str = r#"
import fcntl, os, sys
def attempt(name, flags):
    try:
        fd = os.open("/dev/stdout", flags)
        print(name, "ok", file=sys.stderr)
        return fd
    except OSError as e:
        print(name, e.errno, file=sys.stderr)
attempt("read", os.O_RDONLY)
attempt("read-write", os.O_RDWR)
fd = attempt("create", os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"created\n")
try:
    os.pread(fd, 8, 0)
    print("pread ok", file=sys.stderr)
except OSError as e:
    print("pread", e.errno, file=sys.stderr)
print("access", fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY, file=sys.stderr)
"#;

/// A guest handed a stdout file for writing only reopens it for no
/// reading: a read or read-write open is refused, and a truncating
/// read-write one (the file's old content gone) is served write-only, its
/// reads EBADF. Natively all succeed: the test can tell.
#[test]
fn a_guest_reopens_its_stdout_file_for_no_reading() {
    if !is_root() {
        skip!("compares with what root may do natively");
    }
    let t = dir_for(None);
    let run = |c: Command| {
        let left = with_files(c, t.path(), None, false);
        assert_eq!(left.code, Some(0), "{left:?}");
        assert_eq!(left.out, "created\n", "{left:?}");
        left.err
    };
    let mut native = Command::new("/usr/bin/python3");
    native.args(["-c", STDOUT_BEYOND]);
    let native = run(native);
    assert_eq!(
        native,
        "read ok\nread-write ok\ncreate ok\npread ok\naccess False\n"
    );
    let mut sandboxed = Command::new(bin());
    sandboxed.args(["run", "--", "/usr/bin/python3", "-c", STDOUT_BEYOND]);
    let expected = format!(
        "read {eacces}\nread-write {eacces}\ncreate ok\npread {}\naccess True\n",
        libc::EBADF,
        eacces = libc::EACCES
    );
    assert_eq!(run(sandboxed), expected);
}

/// A static program's reopens (no preload): `tests/c/static_stdio.c`
/// (glibc's freopen, fopen and open) and busybox's shell (`>>` and `>`
/// onto `/dev/stdout`, `/dev/stderr`, `/proc/self/fd/1`). Each reads its
/// stdin by name first, the trapped open that rewrites the C library's
/// open site; the static loader makes a write-only open that the kernel
/// refused there again by openat2, which the supervisor serves
/// (docs/fast-reads.md, "Rewritten sites").
const BUSYBOX_SCRIPT: &str = r#"
read first < /dev/stdin
echo "first: $first" >> /dev/stdout
echo "to stderr" >> /dev/stderr
echo "by fd" >> /proc/self/fd/1
echo "truncated" > /dev/stderr
"#;

fn static_stdio() -> PathBuf {
    built_once("static_stdio.static", |out| {
        let mut cc = Command::new("cc");
        cc.args(["-O1", "-Wall", "-static", "-o"])
            .arg(out)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/static_stdio.c"));
        cc
    })
}

/// `argv` natively and supervised (by `bin`, with `flags` and the built
/// programs' directory), stdout and stderr truncated and then appended
/// to: the same files left, the native stdout holding `marker`.
fn compare_static(
    bin: &Path,
    flags: &[&str],
    argv: &[String],
    user: Option<(u32, u32)>,
    marker: &str,
) {
    let mounts = c_mounts();
    let flags: Vec<&str> = flags
        .iter()
        .copied()
        .chain(mounts.iter().map(String::as_str))
        .collect();
    compare_argv(bin, &flags, argv, user, marker);
}

/// [`compare_static`] with `flags` alone (a pooled run takes no mounts:
/// its pool's flags shape its sandboxes).
fn compare_argv(
    bin: &Path,
    flags: &[&str],
    argv: &[String],
    user: Option<(u32, u32)>,
    marker: &str,
) {
    let t = dir_for(user);
    for append in [false, true] {
        let mut native = Command::new(&argv[0]);
        native.args(&argv[1..]);
        let native = with_files(native, t.path(), user, append);
        assert_eq!(native.code, Some(0), "{native:?}");
        assert!(native.out.contains(marker), "{native:?}");
        let mut sandboxed = Command::new(bin);
        sandboxed.arg("run").args(flags).arg("--").args(argv);
        let sandboxed = with_files(sandboxed, t.path(), user, append);
        assert_eq!(sandboxed, native, "{flags:?} {argv:?} append: {append}");
    }
}

fn static_cases() -> Vec<Vec<String>> {
    let busybox = ["/bin/busybox", "sh", "-c", BUSYBOX_SCRIPT];
    vec![
        vec![static_stdio().display().to_string()],
        busybox.iter().map(|s| s.to_string()).collect(),
    ]
}

#[test]
fn a_static_guest_reopens_its_stdio_files_as_natively() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    for argv in static_cases() {
        compare_static(&bin(), &[], &argv, None, "first: one");
    }
}

#[test]
fn an_unprivileged_invoker_s_static_guest_reopens_its_stdio_files_as_natively() {
    let Some((uid, gid, bin)) = tester() else {
        skip!("needs root and the user tester");
    };
    for argv in static_cases() {
        compare_static(&bin, &[], &argv, Some((uid, gid)), "first: one");
    }
}

/// `tests/c/stdio_write.c` built by `compiler` (`cc` or `musl-gcc`),
/// dynamic or `-static`.
fn stdio_write(compiler: &str, linking: &str) -> PathBuf {
    let name = format!("stdio_write.{compiler}{linking}");
    built_once(&name, |out| {
        let mut cc = Command::new(compiler);
        cc.args(["-O1", "-Wall", linking, "-o"])
            .arg(out)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/stdio_write.c"));
        cc
    })
}

/// `tests/go/stdio_write.go` built without cgo: a static program.
fn go_stdio_write() -> PathBuf {
    go_build("stdio_write")
}

/// `tests/go/NAME.go` built without cgo.
fn go_build(name: &str) -> PathBuf {
    let cache = tempfile::tempdir().expect("tempdir");
    built_once(&format!("{name}.go"), |out| {
        let mut go = Command::new("go");
        go.args(["build", "-o"])
            .arg(out)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/go/{name}.go")))
            .env("CGO_ENABLED", "0")
            .env("GO111MODULE", "off")
            .env("GOCACHE", cache.path())
            .env("HOME", cache.path());
        go
    })
}

/// `tests/go/stdio_create.go` built without cgo: a static program.
fn go_stdio_create() -> PathBuf {
    go_build("stdio_create")
}

/// Python's `open(name, "w+")` of its stdout and stderr:
/// `O_RDWR|O_CREAT|O_TRUNC`, as Go's `os.Create`.
const PYTHON_CREATE: &str = r#"
print("python: stdout created", file=open("/dev/stdout", "w+"))
print("python: stderr created", file=open("/dev/fd/2", "w+"))
"#;

/// Programs that create their stdout and stderr files anew by name
/// (`O_RDWR|O_CREAT|O_TRUNC`), each with its native stdout's marker.
fn create_cases() -> Vec<(Vec<String>, &'static str)> {
    let python = ["/usr/bin/python3", "-c", PYTHON_CREATE];
    vec![
        (vec![go_stdio_create().display().to_string()], "go: end"),
        (
            python.iter().map(|s| s.to_string()).collect(),
            "python: stdout created",
        ),
    ]
}

/// Each of create_cases as the sandbox runs it and under
/// `--no-rewrite`: the same files left as natively. The open is read-write
/// and the stdout and stderr were handed for writing only: served
/// write-only (`syscalls/src/handlers/open/handed.rs`), where the old rule
/// refused it EACCES.
fn compare_creates(bin: &Path, user: Option<(u32, u32)>) {
    for (argv, marker) in create_cases() {
        for flags in [&[][..], &["--no-rewrite"][..]] {
            compare_static(bin, flags, &argv, user, marker);
        }
    }
}

#[test]
fn a_guest_creates_its_stdio_files_anew_as_natively() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    compare_creates(&bin(), None);
}

#[test]
fn a_pooled_guest_creates_its_stdio_files_anew_as_natively() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    let mounts = c_mounts();
    let pool = Pool::start(&mounts.iter().map(String::as_str).collect::<Vec<_>>());
    let flag = pool.flag();
    let flags: Vec<&str> = flag.iter().map(String::as_str).collect();
    for (argv, marker) in create_cases() {
        compare_argv(&bin(), &flags, &argv, None, marker);
    }
}

#[test]
fn an_unprivileged_guest_creates_its_stdio_files_anew_as_natively() {
    let Some((uid, gid, bin)) = tester() else {
        skip!("needs root and the user tester");
    };
    compare_creates(&bin, Some((uid, gid)));
}

/// Programs whose first opens reopen their stdio for writing, by every
/// route a C library or Go takes: glibc's and musl's open, fopen and
/// freopen (the preload's, or a static program's site not yet rewritten,
/// which the static loader's filter traps), Go's openat. Each with its
/// native stdout's marker.
fn write_cases() -> Vec<(Vec<String>, &'static str)> {
    let c = |p: PathBuf| vec![p.display().to_string()];
    vec![
        (c(stdio_write("cc", "-pthread")), "by freopen, fd 1"),
        (c(stdio_write("cc", "-static")), "by freopen, fd 1"),
        (c(stdio_write("musl-gcc", "-static")), "by freopen, fd 1"),
        (c(musl_prog("stdio_write")), "by freopen, fd 1"),
        (c(go_stdio_write()), "go: again"),
    ]
}

/// Each of write_cases, as the sandbox runs it and with the program's
/// text as built (`--no-rewrite`: every open the static loader's filter
/// traps pays a signal, none is rewritten).
fn compare_writes(bin: &Path, user: Option<(u32, u32)>) {
    for (argv, marker) in write_cases() {
        for flags in [&[][..], &["--no-rewrite"][..]] {
            compare_static(bin, flags, &argv, user, marker);
        }
    }
}

#[test]
fn a_guest_reopens_its_stdio_files_for_writing_as_natively_whatever_its_library() {
    if !is_root() {
        skip!("the files are a root invoker's only when the test is root");
    }
    compare_writes(&bin(), None);
}

#[test]
fn an_unprivileged_guest_reopens_its_stdio_files_for_writing_as_natively_whatever_its_library() {
    let Some((uid, gid, bin)) = tester() else {
        skip!("needs root and the user tester");
    };
    compare_writes(&bin, Some((uid, gid)));
}
