//! Statically linked programs, which no preload reaches: glibc's and
//! musl's `-static` builds of `tests/c/static_reads.c` and a Go program
//! (`tests/go/static_reads.go`, no C library at all) make their read opens
//! with their own `syscall` instructions. Each runs natively and under the
//! supervisor and must print the same: the open family and its errors,
//! opens in a row, with every signal blocked, beside the program's own
//! SIGSYS handler, under an interval timer, in threads, in forked and
//! exec'd children (the program itself, a dynamic program, a shell),
//! `/proc/self/exe` named and read, the program's own seccomp filter and
//! SIGSYS handler, threads racing to a site's first opens, a timer's
//! handler that opens while opens are interrupted, a vforked exec, and a
//! checksum of the program's own text; the Go program also opens beside
//! busy loops that only its runtime's SIGURG preempts, in threads started
//! and ended, under SIGUSR1, catches a SIGSYS it sends itself before and
//! after an exec, and serves HTTP on loopback. In a fenced guest all three
//! start through the static loader, whose handler makes their opens
//! marked and rewrites each trapped open site of the C programs into a
//! jump to a trampoline (the default): every line then matches native but
//! the text's, which changed at the rewritten sites alone; with
//! `--no-rewrite` every line matches, the checksum's included. The report
//! counts how few opens are serviced. A `--rootfs` tree of static
//! programs only starts them through the loader too. `.ci/run` installs
//! musl-tools and golang-go for these; without them the tests fail.

use crate::common;
use crate::fast_reads::tree;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn source(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// `tests/go/static_reads.go` built without cgo: a static binary.
fn go_static() -> PathBuf {
    let cache = tempfile::tempdir().expect("tempdir");
    built_once("static_reads.go", |out| {
        let mut go = Command::new("go");
        go.args(["build", "-o"])
            .arg(out)
            .arg(source("tests/go/static_reads.go"))
            .env("CGO_ENABLED", "0")
            .env("GO111MODULE", "off")
            .env("GOCACHE", cache.path())
            .env("HOME", cache.path());
        go
    })
}

/// `prog DIR` run natively and supervised (as `user`, with its copy of
/// the binary, when given; with the supervisor's `flags`).
fn native_and_supervised(
    user: Option<(u32, u32, PathBuf)>,
    prog: &Path,
    tag: &str,
    flags: &[&str],
) -> (Out, Out) {
    let dir = tree(tag);
    let mut run = Run::new(&[prog.as_os_str(), dir.path().as_os_str()])
        .sup(&c_mounts())
        .sup(flags)
        .rw(dir.path());
    if let Some((uid, gid, bin)) = user {
        run = run.user(uid, gid).bin(bin);
    }
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    (native, supervised)
}

/// Runs `prog DIR` natively and supervised with `--no-rewrite` (the
/// program's text left as built): the outputs must match and hold every
/// line of `want`.
fn matches_native_as(user: Option<(u32, u32, PathBuf)>, prog: &Path, tag: &str, want: &[&str]) {
    matches_native_with(user, prog, tag, want, &["--no-rewrite"]);
}

/// Runs `prog DIR` natively and supervised with `flags`: the outputs must
/// match and hold every line of `want`.
fn matches_native_with(
    user: Option<(u32, u32, PathBuf)>,
    prog: &Path,
    tag: &str,
    want: &[&str],
    flags: &[&str],
) {
    let (native, supervised) = native_and_supervised(user, prog, tag, flags);
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    for line in want {
        assert!(native.stdout.contains(line), "{line}: {}", native.dump());
    }
}

/// Runs `prog DIR` natively and supervised with the loader's rewriting
/// (the default): every line matches native (and `C_LINES` holds) but the
/// text's: in a fenced guest the supervised text changed, at rewritten
/// sites alone, at least one.
fn matches_native_rewritten(user: Option<(u32, u32, PathBuf)>, prog: &Path, tag: &str) {
    let (native, supervised) = native_and_supervised(user, prog, tag, &[]);
    assert_static_reads_as_native(&supervised.stdout, &native, &supervised.dump());
    native.assert_lines(&["text unchanged: 1", "rewritten sites: 0"]);
    if landlock_abi() >= 1 {
        supervised.assert_lines(&[
            "text unchanged: 0",
            "text changed only at rewritten sites: 1",
        ]);
        let sites = supervised.field("rewritten sites");
        assert!(sites >= 1, "{}", supervised.dump());
    }
}

/// What a native run prints, and a supervised one with `--no-rewrite`:
/// every line of [`STATIC_READS_LINES`] and the text unchanged.
fn c_lines() -> Vec<&'static str> {
    let mut lines = STATIC_READS_LINES.to_vec();
    lines.push("text unchanged: 1");
    lines
}

fn matches_native(prog: &Path, tag: &str, want: &[&str]) {
    matches_native_as(None, prog, tag, want);
}

#[test]
fn a_static_glibc_program_matches_native() {
    matches_native(&c_static("cc"), "glibc", &c_lines());
}

#[test]
fn a_static_musl_program_matches_native() {
    matches_native(&c_static("musl-gcc"), "musl", &c_lines());
}

#[test]
fn a_static_musl_program_matches_native_unprivileged() {
    match tester_bin() {
        Ok(t) => matches_native_as(Some(t), &c_static("musl-gcc"), "musl-user", &c_lines()),
        Err(e) => skip!("{e}"),
    }
}

const GO_LINES: &[&str] = &[
    "read rel: \"text of b\"",
    "read missing: errno 2",
    "read dir: errno 21",
    "2000 opens: true",
    "8 goroutines x 500 opens: [true true true true true true true true]",
    "opens beside busy loops and GCs: [true true true true]",
    "opens in 64 threads started and ended: true",
    "40 FIFO opens blocked at once: true",
    "opens under SIGUSR1: true, caught: true",
    "SIGSYS by kill, before an exec: bad system call",
    "exec'd child: \"exec'd child read: \\\"text of b\\\"\\n\" <nil>",
    "exec'd cat: \"text of b\\n\" <nil>",
    "SIGSYS by kill, after an exec: bad system call",
    "http on loopback: \"text of a\\n\"",
    "/proc/self/exe is the program: true",
];

#[test]
fn a_rewritten_static_glibc_program_matches_native() {
    matches_native_rewritten(None, &c_static("cc"), "glibc-rw");
}

#[test]
fn a_rewritten_static_musl_program_matches_native() {
    matches_native_rewritten(None, &c_static("musl-gcc"), "musl-rw");
}

#[test]
fn a_rewritten_static_glibc_program_matches_native_unprivileged() {
    match tester_bin() {
        Ok(t) => matches_native_rewritten(Some(t), &c_static("cc"), "glibc-rw-user"),
        Err(e) => skip!("{e}"),
    }
}

/// Runs the Go program natively and supervised with the loader's
/// rewriting (the default): every line matches native (and `GO_LINES`
/// holds) but the text's: in a fenced guest the supervised text changed
/// at Syscall6's site alone.
fn go_matches_native_rewritten(user: Option<(u32, u32, PathBuf)>, tag: &str) {
    let (native, supervised) = native_and_supervised(user, &go_static(), tag, &[]);
    assert_eq!(
        but_the_text(&supervised.stdout),
        but_the_text(&native.stdout),
        "{}",
        supervised.dump()
    );
    for line in GO_LINES {
        assert!(native.stdout.contains(line), "{line}: {}", native.dump());
    }
    native.assert_lines(&["text unchanged: 1", "rewritten sites: 0"]);
    supervised.assert_lines(&["text changed only at rewritten sites: 1"]);
    if landlock_abi() >= 1 {
        supervised.assert_lines(&["text unchanged: 0"]);
        let sites = supervised.field("rewritten sites");
        assert!(sites >= 1, "{}", supervised.dump());
    }
}

/// Go's one site, `runtime/internal/syscall.Syscall6`, is rewritten (the
/// default): every system call of the `syscall` and `os` packages goes
/// through its slot, a plain read openat marked on the thread's signal
/// stack, the rest made in the slot.
#[test]
fn a_go_program_matches_native() {
    go_matches_native_rewritten(None, "go");
}

#[test]
fn a_go_program_matches_native_unprivileged() {
    match tester_bin() {
        Ok(t) => go_matches_native_rewritten(Some(t), "go-user"),
        Err(e) => skip!("{e}"),
    }
}

/// With `--no-rewrite` the Go program's text stays as built and every
/// line matches native.
#[test]
fn a_go_program_matches_native_without_rewriting() {
    let mut want = GO_LINES.to_vec();
    want.push("text unchanged: 1");
    matches_native_with(None, &go_static(), "go-norw", &want, &["--no-rewrite"]);
}

/// A musl program that links pthread_cancel makes its calls through
/// `__syscall_cp_asm`, which the loader leaves on the signal by rule
/// (cancellation reads the interrupted address): its text stays as
/// built, its opens are right and a thread blocked in a read is
/// cancelled, as natively.
#[test]
fn a_musl_program_with_pthread_cancel_stays_on_the_signal() {
    let prog = built_once("cancel_reads.musl-gcc", |out| {
        let mut cc = Command::new("musl-gcc");
        cc.args(["-O1", "-Wall", "-static", "-o"])
            .arg(out)
            .arg(source("tests/c/cancel_reads.c"));
        cc
    });
    matches_native_with(
        None,
        &prog,
        "musl-cancel",
        &[
            "2000 opens: 1",
            "cancelled in a blocked read: 1",
            "2000 opens after: 1",
            "text unchanged: 1",
        ],
        &[],
    );
}

/// The openat calls the supervisor served for `prog DIR` with the
/// supervisor's `flags` (its output checked against `want`).
fn serviced_opens(prog: &Path, tag: &str, want: &str, flags: &[&str]) -> u64 {
    let dir = tree(tag);
    let rep = tempfile::NamedTempFile::new().expect("report file");
    let rep_s = rep.path().display().to_string();
    let mut sup = c_mounts();
    sup.extend(["--report".to_string(), rep_s]);
    sup.extend(flags.iter().map(|f| f.to_string()));
    let out = Run::new(&[prog.as_os_str(), dir.path().as_os_str()])
        .sup(&sup)
        .rw(dir.path())
        .supervised()
        .ok("supervised");
    assert!(out.stdout.contains(want), "{}", out.dump());
    served_opens(rep.path())
}

/// Through the loader, a static C program's 12,000 plain read opens pass
/// the filter marked, whether their sites are rewritten (the default) or
/// each trapped (`--no-rewrite`), and so do the Go program's 8,000 or so:
/// the few served are the loader's own and those of the dynamic loader of
/// the programs they exec.
#[test]
fn static_programs_open_fast_go_included() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    for (compiler, tag) in [("cc", "count-glibc"), ("musl-gcc", "count-musl")] {
        let served = serviced_opens(
            &c_static(compiler),
            tag,
            "text unchanged: 1",
            &["--no-rewrite"],
        );
        assert!(
            served < STATIC_READS_MAX_SERVED,
            "{compiler}: {served} opens served through the loader"
        );
        let tag = format!("{tag}-rw");
        let served = serviced_opens(&c_static(compiler), &tag, "text unchanged: 0", &[]);
        assert!(
            served < 200,
            "{compiler}: {served} opens served through rewritten sites"
        );
    }
    let served = serviced_opens(&go_static(), "count-go", "2000 opens: true", &[]);
    assert!(served < 200, "go: {served} opens served through the loader");
}

/// A `--rootfs` tree of static programs only (the program, and busybox
/// as its `/bin/sh` and `/bin/cat`): the tree's /etc gets the loader as
/// it gets the preload, the program prints what it prints natively, and
/// its opens pass marked.
#[test]
fn a_static_tree_starts_its_programs_through_the_loader() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    assert!(
        common::oci::have_busybox(),
        "no busybox-static at /bin/busybox (apt-get install busybox-static)"
    );
    for (compiler, tag) in [("cc", "tree-glibc"), ("musl-gcc", "tree-musl")] {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        for d in ["bin", "etc", "data"] {
            std::fs::create_dir_all(r.join(d)).expect("mkdir");
        }
        std::fs::copy(c_static(compiler), r.join("bin/static_reads")).expect("copy");
        std::fs::copy(common::oci::BUSYBOX, r.join("bin/busybox")).expect("copy busybox");
        for applet in ["sh", "cat"] {
            std::os::unix::fs::symlink("busybox", r.join("bin").join(applet)).expect("link");
        }
        fill_static_reads_dir(&r.join("data"));
        let here = tree(tag);
        let native = Run::new(&[c_static(compiler).as_os_str(), here.path().as_os_str()])
            .native()
            .ok("native");
        let rootfs = r.display().to_string();
        let rep = tempfile::NamedTempFile::new().expect("report file");
        let rep_s = rep.path().display().to_string();
        let supervised = Run::new(&["/bin/static_reads", "/data"])
            .sup(&["--rootfs", &rootfs, "--report", &rep_s])
            .supervised()
            .ok("supervised");
        assert_static_reads_as_native(&supervised.stdout, &native, &supervised.dump());
        let served = served_opens(rep.path());
        assert!(
            served < STATIC_READS_MAX_SERVED,
            "{compiler}: {served} opens served in a static tree"
        );
        let ls = Run::new(&["/bin/busybox", "ls", "/etc"])
            .sup(&["--rootfs", &rootfs])
            .supervised()
            .ok("ls");
        assert_eq!(
            ls.stdout,
            "group\nhostname\nhosts\npasswd\nresolv.conf\nsandbox-static-loader\n",
            "{}",
            ls.dump()
        );
        // The program's own arguments, not the loader's two words: the
        // command line reads as a native run's.
        let cmdline = Run::new(&["/bin/cat", "/proc/self/cmdline"])
            .sup(&["--rootfs", &rootfs])
            .supervised()
            .ok("cat");
        assert_eq!(
            cmdline.stdout,
            "/bin/cat\0/proc/self/cmdline\0",
            "{}",
            cmdline.dump()
        );
    }
}

/// A static program's served /proc files however a path reaches them
/// (busybox-static, through the loader, its sites rewritten): absolute,
/// through a symlink of the guest's onto a cover under /proc/sys or into
/// procfs, by `..`, with a doubled slash, relative to a /proc directory.
/// The loader passes without a check only what an `openat2` with no
/// symlink opened by a path spelled off /proc (docs/fast-reads.md, "The
/// check"); each spelling here must read the served file: file-nr's three
/// numbers (its cover is empty) and the `--memory` limit's meminfo.
const STATIC_PROC_PATHS: &str = r#"
B=/bin/busybox
$B ln -s /proc/sys/fs/file-nr /tmp/fnr
$B ln -s /proc/meminfo /tmp/mi
$B ln -s /proc /tmp/p
for p in /proc/sys/fs/file-nr /tmp/fnr /tmp/p/sys/fs/file-nr /usr/../proc/sys/fs/file-nr //proc/sys/fs/file-nr /./proc/sys/fs/file-nr; do
  echo "$p $($B cat $p | $B wc -w)"
done
for p in /proc/meminfo /tmp/mi /tmp/p/meminfo /usr/../proc/meminfo; do
  echo "$p $($B head -n 1 $p | $B tr -s ' ')"
done
cd /proc/sys/fs && echo "relative $($B cat file-nr | $B wc -w)"
cd /proc && echo "relative $($B head -n 1 meminfo | $B tr -s ' ')"
"#;

#[test]
fn a_static_programs_served_proc_files_however_reached() {
    use common::oci::have_busybox;
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    let out = Run::new(&["/bin/busybox", "sh", "-c", STATIC_PROC_PATHS])
        .sup(&["--memory", "300m"])
        .supervised()
        .ok("supervised");
    let mut want = String::new();
    for p in [
        "/proc/sys/fs/file-nr",
        "/tmp/fnr",
        "/tmp/p/sys/fs/file-nr",
        "/usr/../proc/sys/fs/file-nr",
        "//proc/sys/fs/file-nr",
        "/./proc/sys/fs/file-nr",
    ] {
        want += &format!("{p} 3\n");
    }
    for p in [
        "/proc/meminfo",
        "/tmp/mi",
        "/tmp/p/meminfo",
        "/usr/../proc/meminfo",
    ] {
        want += &format!("{p} MemTotal: 307200 kB\n");
    }
    want += "relative 3\nrelative MemTotal: 307200 kB\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
}
