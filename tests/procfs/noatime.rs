//! Read opens of /proc with `O_NOATIME` answer as natively. The flag is
//! the file's owner's or a CAP_FOWNER holder's, and the kernel checks it
//! before the fence: a guest root under a range of ids owns no host
//! /proc file, so the marked open of the preload or the static loader
//! gets EPERM where the supervisor, which serves the file, answers as a
//! root holding CAP_FOWNER (the native root's answer). Both make such an
//! EPERM again unmarked (`sandbox/guest/spelled_off_proc.h`). Checked
//! with `tests/c/noatime_reads.c` built by `cc` (the preload), `cc
//! -static` and `musl-gcc -static` (the static loader, rewritten sites
//! and `--no-rewrite`), as root and as `tester` (whose native answer is
//! EPERM on the host root's files).

use crate::common;
use common::*;

/// What every run reads: the sandbox's own global files, host texts it
/// serves, a process's files, a served `/proc/net` list, a /proc/sys file
/// the fence lets through, and a missing name.
const PATHS: &[&str] = &[
    "/proc/uptime",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/version",
    "/proc/self/status",
    "/proc/self/stat",
    "/proc/self/mountinfo",
    "/proc/net/unix",
    "/proc/sys/kernel/pid_max",
    "/proc/no-such-file",
];

/// Covers (a tmpfs file standing for a /proc file): the host root's
/// natively, the sandbox's owner's in the view; for root only, whose
/// guest root owns the covers as its native self owns the files.
const COVERS: &[&str] = &["/proc/cmdline", "/proc/sys/fs/file-nr"];

/// The program built three ways: dynamic glibc, static glibc, static musl.
fn programs() -> Vec<std::path::PathBuf> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/noatime_reads.c");
    let stat = |compiler: &'static str| {
        built_once(&format!("noatime_reads.static.{compiler}"), |out| {
            let mut cc = std::process::Command::new(compiler);
            cc.args(["-O1", "-Wall", "-static", "-o"])
                .arg(out)
                .arg(&src);
            cc
        })
    };
    vec![c_prog("noatime_reads"), stat("cc"), stat("musl-gcc")]
}

fn run(prog: &std::path::Path, paths: &[&str]) -> Run {
    let mut argv = vec![prog.display().to_string()];
    argv.extend(paths.iter().map(|p| p.to_string()));
    Run::new(&argv).sup(&c_mounts())
}

/// Each program's supervised runs (and with `--no-rewrite` for the
/// static ones) print `native` exactly.
fn check(paths: &[&str], native: &str, as_user: impl Fn(Run) -> Run, who: &str) {
    for (i, prog) in programs().iter().enumerate() {
        let mut runs = vec![as_user(run(prog, paths))];
        if i > 0 {
            runs.push(as_user(run(prog, paths).sup(&["--no-rewrite"])));
        }
        for r in runs {
            let out = r.supervised().ok(who);
            assert_eq!(
                out.stdout,
                native,
                "{who} {prog:?} {:?}: {}",
                r.sup,
                out.dump()
            );
        }
    }
}

#[test]
fn noatime_reads_of_proc_answer_as_natively() {
    let paths: Vec<&str> = PATHS.iter().chain(COVERS).copied().collect();
    let native = run(&programs()[0], &paths).native().ok("native");
    assert!(
        native.stdout.contains("/proc/uptime open: ok, read > 0: 1"),
        "{}",
        native.dump()
    );
    check(&paths, &native.stdout, |r| r, "root");
}

#[test]
fn noatime_reads_of_proc_answer_as_natively_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let native = run(&programs()[0], PATHS)
        .user(uid, gid)
        .native()
        .ok("native tester");
    assert!(
        native.stdout.contains("/proc/uptime open: errno 1")
            && native.stdout.contains("/proc/self/status open: ok"),
        "{}",
        native.dump()
    );
    check(
        PATHS,
        &native.stdout,
        |r| r.user(uid, gid).bin(&bin),
        "tester",
    );
}
