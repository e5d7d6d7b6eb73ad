//! The dynamic loader's and the C library's own opens
//! (`sandbox/guest/fast_reads_rewrite.c`): the preload rewrites glibc's
//! `__open_nocancel` sites in ld.so and libc.so at its start, so a
//! `dlopen`'s search of every library directory, the locale files,
//! `/etc/localtime` and the C library's own fopen pass the filter marked
//! instead of each being served. `tests/c/ldso_opens.c` prints what it
//! found natively and under the supervisor, as root and as `tester`; the
//! report counts the opens served, with the rewrite and with
//! `--no-rewrite` (which keeps the text as built); the sandbox's own
//! /proc files opened through the rewritten site are still served.

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Names `dlopen`ed that no directory has: each a search of every
/// directory of `LD_LIBRARY_PATH` and the system's.
const MISSING: &str = "40";

/// Empty directories `a` to `e`, then `lib` holding a copy of the C
/// library's libm: the `LD_LIBRARY_PATH` the search goes through.
fn library_dirs() -> (tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix("ldso-opens-")
        .tempdir()
        .expect("tempdir");
    let mut path = Vec::new();
    for name in ["a", "b", "c", "d", "e", "lib"] {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).expect("mkdir");
        path.push(d.display().to_string());
    }
    let libm = ["/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("the C library's libm.so.6");
    std::fs::copy(libm, dir.path().join("lib/libm.so.6")).expect("copy libm");
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(dir.path(), open).expect("chmod");
    (dir, path.join(":"))
}

/// `run` under the supervisor with `extra` flags and a report: its
/// output and the `openat` calls the supervisor served.
fn served(run: &Run, extra: &[&str]) -> (Out, u64) {
    let rep = tempfile::NamedTempFile::new().expect("report file");
    let _ = std::fs::set_permissions(rep.path(), std::fs::Permissions::from_mode(0o666));
    let mut sup = vec!["--report".to_string(), rep.path().display().to_string()];
    sup.extend(extra.iter().map(|s| s.to_string()));
    let out = run.clone().sup(&sup).supervised().ok("supervised");
    let r = read_report(rep.path());
    (
        out,
        r["syscalls"]["serviced"]["openat"].as_u64().unwrap_or(0),
    )
}

/// `run` with `key=value` in its environment, natively and in the guest's
/// (`--env KEY`: the guest inherits only a few of the invoker's).
fn with_env(run: Run, key: &str, value: &str) -> Run {
    run.env(key, value).sup(&["--env", key])
}

fn as_user(run: Run, user: &Option<(u32, u32, PathBuf)>) -> Run {
    match user {
        Some((uid, gid, bin)) => run.user(*uid, *gid).bin(bin),
        None => run,
    }
}

/// `ldso_opens dlopen MISSING libm.so.6 ABSENT` with `LD_LIBRARY_PATH`
/// through `path`.
fn dlopens(missing: &str, path: &str, dir: &Path, user: &Option<(u32, u32, PathBuf)>) -> Run {
    let prog = c_prog("ldso_opens");
    let run = Run::new(&[
        prog.as_os_str(),
        "dlopen".as_ref(),
        missing.as_ref(),
        "libm.so.6".as_ref(),
        "libldso-opens-absent.so".as_ref(),
    ])
    .sup(&c_mounts())
    .ro(dir);
    let run = with_env(run, "LD_LIBRARY_PATH", path);
    as_user(run, user)
}

fn dlopen_search(user: Option<(u32, u32, PathBuf)>) {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let (dir, path) = library_dirs();
    let run = dlopens(MISSING, &path, dir.path(), &user);
    let native = run.native().ok("native");
    let lib = dir.path().join("lib/libm.so.6");
    native.assert_lines(&[
        &format!("missing: {MISSING} of {MISSING} not found"),
        &format!("libm.so.6: found in {}", lib.display()),
    ]);
    let (rewritten, fast) = served(&run, &[]);
    assert_eq!(rewritten.stdout, native.stdout, "{}", rewritten.dump());
    let (kept, slow) = served(&run, &["--no-rewrite"]);
    assert_eq!(kept.stdout, native.stdout, "{}", kept.dump());
    // What the searches add to the start's opens (the loader's search for
    // the program's own libraries, before the preload runs, is served):
    // each missing name is tried in the six directories and the system's,
    // with their hwcaps subdirectories, hundreds of opens in all (440 on
    // Debian 12).
    let start = dlopens("0", &path, dir.path(), &user);
    let (_, fast_start) = served(&start, &[]);
    let (_, slow_start) = served(&start, &["--no-rewrite"]);
    let (fast, slow) = (
        fast.saturating_sub(fast_start),
        slow.saturating_sub(slow_start),
    );
    assert!(
        slow >= 300,
        "the searches made {slow} served opens with --no-rewrite"
    );
    assert!(fast <= 8, "the searches made {fast} served opens rewritten");
}

#[test]
fn a_dlopen_search_passes_the_filter() {
    dlopen_search(None);
}

#[test]
fn a_dlopen_search_passes_the_filter_unprivileged() {
    match tester_bin() {
        Ok(t) => dlopen_search(Some(t)),
        Err(e) => skip!("{e}"),
    }
}

fn locales(user: Option<(u32, u32, PathBuf)>) {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let prog = c_prog("ldso_opens");
    // An installed locale, one that is not, and the C library's default.
    for (var, locale) in [
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "xx_YY.UTF-8"),
        ("LANG", "C"),
    ] {
        let run = Run::new(&[prog.as_os_str(), "locale".as_ref()]).sup(&c_mounts());
        let run = with_env(run, var, locale);
        let run = as_user(run, &user);
        let native = run.native().ok("native");
        let (out, fast) = served(&run, &[]);
        assert_eq!(out.stdout, native.stdout, "{var}={locale}: {}", out.dump());
        let (kept, slow) = served(&run, &["--no-rewrite"]);
        assert_eq!(
            kept.stdout,
            native.stdout,
            "{var}={locale}: {}",
            kept.dump()
        );
        // The locale's files and /etc/localtime: served as built, not
        // once rewritten.
        assert!(
            fast < slow,
            "{var}={locale}: {fast} served rewritten, {slow} as built"
        );
    }
}

#[test]
fn locales_and_the_local_zone_match_native() {
    locales(None);
}

#[test]
fn locales_and_the_local_zone_match_native_unprivileged() {
    match tester_bin() {
        Ok(t) => locales(Some(t)),
        Err(e) => skip!("{e}"),
    }
}

/// The sandbox's own /proc files, opened by the C library's fopen with
/// `c` (its non-cancellable open, the rewritten site), are still the
/// sandbox's: its meminfo under `--memory`, directly and through a
/// symlink, and a /proc/sys file (sysconf's ngroups_max) as natively.
#[test]
fn served_proc_files_through_the_rewritten_site() {
    let prog = c_prog("ldso_opens");
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("meminfo");
    std::os::unix::fs::symlink("/proc/meminfo", &link).expect("symlink");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let run = Run::new(&[
        prog.as_os_str(),
        "proc".as_ref(),
        "/proc/meminfo".as_ref(),
        link.as_os_str(),
        "/proc/sys/kernel/ngroups_max".as_ref(),
    ])
    .sup(&c_mounts())
    .ro(dir.path());
    let native = run.native().ok("native");
    let out = run
        .clone()
        .sup(&["--memory", "300m"])
        .supervised()
        .ok("supervised");
    let ngroups = native.stdout.lines().last().unwrap_or_default().to_string();
    out.assert_lines(&[
        "/proc/meminfo: MemTotal:         307200 kB",
        &format!("{}: MemTotal:         307200 kB", link.display()),
        &ngroups,
    ]);
    let max = std::fs::read_to_string("/proc/sys/kernel/ngroups_max").expect("ngroups_max");
    out.assert_lines(&[&format!("/proc/sys/kernel/ngroups_max: {}", max.trim())]);
}
