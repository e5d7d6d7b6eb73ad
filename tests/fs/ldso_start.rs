//! The dynamic loader's own opens from its first instruction
//! (`sandbox/src/launch/ldso_patch.rs`, `sandbox/guest/ldso_trampoline.c`):
//! the host's view gets a copy of the host's loader whose open site is
//! rewritten in the file, so the opens it makes before the preload starts
//! (the preload list, the preload, `ld.so.cache`, every library) pass the
//! filter marked. The report counts them: none served, where
//! `--no-rewrite` (the loader as built) serves each. Programs that lean
//! on the loader (ldd, `ld.so --list`, ld.so run as the command, library
//! paths that do not exist or lead through /proc) print what they print
//! natively, as root and as `tester`.

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// `run` under the supervisor with `extra` flags and a report: its
/// output and the `openat` calls the supervisor served.
fn served(run: &Run, extra: &[&str]) -> (Out, u64) {
    let rep = tempfile::NamedTempFile::new().expect("report file");
    let _ = std::fs::set_permissions(rep.path(), std::fs::Permissions::from_mode(0o666));
    let mut sup = vec!["--report".to_string(), rep.path().display().to_string()];
    sup.extend(extra.iter().map(|s| s.to_string()));
    let out = run.clone().sup(&sup).supervised().ok("supervised");
    let r = read_report(rep.path());
    let opens = r["syscalls"]["serviced"]["openat"].as_u64().unwrap_or(0);
    (out, opens)
}

fn as_user(run: Run, user: &Option<(u32, u32, PathBuf)>) -> Run {
    match user {
        Some((uid, gid, bin)) => run.user(*uid, *gid).bin(bin),
        None => run,
    }
}

/// The libraries `ldd` says the loader finds for `prog`, natively.
fn needed(prog: &str) -> u64 {
    let out = Run::new(&["ldd", prog]).native().ok("ldd");
    out.stdout.lines().filter(|l| l.contains(" => /")).count() as u64
}

fn loaders_opens(user: Option<(u32, u32, PathBuf)>) {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    // /bin/true opens nothing itself: every open is the loader's. As
    // built, the preload list, the preload, ld.so.cache and each library
    // are served; from the patched copy, none.
    let run = as_user(Run::new(&["/bin/true"]), &user);
    let (_, patched) = served(&run, &[]);
    let (_, built) = served(&run, &["--no-rewrite"]);
    assert_eq!(built, 3 + needed("/bin/true"), "served as built");
    assert_eq!(patched, 0, "served from the patched loader");
    // Python's start: the loader's opens, then the interpreter's own
    // (through the preload's open family and the rewritten C library).
    let run = as_user(Run::new(&["python3", "-c", "print('started')"]), &user);
    let native = run.native().ok("native");
    let (out, patched) = served(&run, &[]);
    let (kept, built) = served(&run, &["--no-rewrite"]);
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    assert_eq!(kept.stdout, native.stdout, "{}", kept.dump());
    assert!(built >= 3 + needed("/usr/bin/python3"), "{built} as built");
    assert_eq!(patched, 0, "served from the patched loader");
}

#[test]
fn the_loaders_own_opens_are_not_served() {
    loaders_opens(None);
}

#[test]
fn the_loaders_own_opens_are_not_served_unprivileged() {
    match tester_bin() {
        Ok(t) => loaders_opens(Some(t)),
        Err(e) => skip!("{e}"),
    }
}

/// `ldd`'s and `ld.so --list`'s lines without load addresses or the
/// sandbox's preload (which the view's preload list adds).
fn listed(out: &Out) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| !l.contains("sandbox-fast-reads.so"))
        .map(|l| l.split(" (0x").next().unwrap_or(l).to_string())
        .collect()
}

fn loader_programs(user: Option<(u32, u32, PathBuf)>) {
    let ldso = "/lib64/ld-linux-x86-64.so.2";
    let lists = [
        Run::new(&["ldd", "/bin/ls"]),
        Run::new(&[ldso, "--list", "/bin/true"]),
    ];
    for run in lists {
        let run = as_user(run, &user);
        let native = run.native().ok("native");
        let (out, _) = served(&run, &[]);
        assert_eq!(listed(&out), listed(&native), "{}", out.dump());
    }
    // The loader as the command; library paths that do not exist, and
    // ones that lead through /proc (opened marked, then checked and kept:
    // the kernel's /proc/self/root is the view's root).
    let lib = "/proc/self/root/usr/lib/x86_64-linux-gnu:/proc/self/cwd/lib";
    let runs = [
        Run::new(&[ldso, "/bin/echo", "as the command"]),
        Run::sh("echo missing; cat /etc/hostname >/dev/null", &[])
            .env("LD_LIBRARY_PATH", "/nonexistent/a:/nonexistent/b/c")
            .sup(&["--env", "LD_LIBRARY_PATH"]),
        Run::new(&[
            "python3",
            "-c",
            "import ssl; print(ssl.OPENSSL_VERSION[:7])",
        ])
        .env("LD_LIBRARY_PATH", lib)
        .sup(&["--env", "LD_LIBRARY_PATH"]),
    ];
    for run in runs {
        let run = as_user(run, &user);
        let native = run.native().ok("native");
        let (out, _) = served(&run, &[]);
        assert_eq!(out.stdout, native.stdout, "{}", out.dump());
        assert!(!out.stdout.is_empty());
    }
}

#[test]
fn programs_that_lean_on_the_loader_match_native() {
    loader_programs(None);
}

#[test]
fn programs_that_lean_on_the_loader_match_native_unprivileged() {
    match tester_bin() {
        Ok(t) => loader_programs(Some(t)),
        Err(e) => skip!("{e}"),
    }
}

/// The view's loader is the patched copy: same size, another checksum
/// (its open site and the padding after its text differ), where
/// `--no-rewrite` shows the host's own bytes.
#[test]
fn the_view_shows_the_copy_only_when_rewriting() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let ldso = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").expect("the host's loader");
    let run = Run::new(&["cksum".as_ref(), ldso.as_os_str()]);
    let native = run.native().ok("native");
    let (copy, _) = served(&run, &[]);
    let (built, _) = served(&run, &["--no-rewrite"]);
    assert_eq!(built.stdout, native.stdout);
    let fields =
        |o: &Out| -> Vec<String> { o.stdout.split_whitespace().map(String::from).collect() };
    let (copy, native) = (fields(&copy), fields(&native));
    assert_ne!(copy[0], native[0], "the checksum");
    assert_eq!(copy[1..], native[1..], "the size and name");
}

/// A program that calls its loader's trampoline's entry from elsewhere
/// with forged registers (`tests/c/ldso_hostile.c`): every answer is the
/// preload's rule's for the same call made directly (marked, then
/// unmarked where the answer may be the supervisor's), every other call's
/// is the same registers' own, and the registers a `syscall` keeps are
/// kept: natively (no trampoline), from the copy (found), with
/// `--no-rewrite` (none), as root and as `tester`, a served /proc file
/// among the names.
#[test]
fn hostile_calls_into_the_loaders_trampoline_get_nothing_more() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("f"), "hello\n").expect("write f");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let prog = c_prog("ldso_hostile");
    let summary =
        "fuzzed calls: 3000, with a forged fast-read mark: 1, answers that differ: 0, registers lost: 0";
    let users = match tester_bin() {
        Ok(t) => vec![None, Some(t)],
        Err(_) => vec![None],
    };
    for user in users {
        for seed in ["7", "11"] {
            let argv = [
                prog.as_os_str(),
                dir.path().as_os_str(),
                seed.as_ref(),
                "3000".as_ref(),
            ];
            let run = Run::new(&argv)
                .sup(&c_mounts())
                .ro(dir.path())
                .sup(&["--memory", "300m"]);
            let run = as_user(run, &user);
            let native = run.native().ok("native");
            native.assert_lines(&["trampoline found: 0", summary]);
            let (copy, _) = served(&run, &[]);
            copy.assert_lines(&["trampoline found: 1", summary]);
            let (built, _) = served(&run, &["--no-rewrite"]);
            built.assert_lines(&["trampoline found: 0", summary]);
        }
    }
}
