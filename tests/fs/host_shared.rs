//! What a guest shares with the host, it may use but never change
//! (`launch/dev_view.rs`, `sandbox/src/launch/proc_mount.rs`, `handlers/attr.rs`):
//! the devices bound from the host's /dev are read-only mounts (no
//! chmod, chown, times or xattrs of the host's inodes), /proc/sys and
//! procfs's host-wide directories are read-only (no sysctl written: a
//! root guest is the host's root to the sysctl checks), and no mode of a
//! procfs file changes. `tests/fs/host_shared.py` probes each harmlessly
//! (its own value written back, its own mode set), as root and as the
//! unprivileged `tester`, and the host's inodes are checked unchanged
//! afterwards. The script refuses to run natively: natively, as root,
//! these changes would reach the host. So with the guest's stdio when it
//! is the host's (`launch/host_stdio.rs`): stdin the host's /dev/null,
//! stdout and stderr a terminal of the host's (`tests/fs/host_stdio.py`);
//! and with the set-id bits of a file of the host's, its stdout or one in
//! a `--rw` mount (`handlers/setid.rs`, `tests/fs/host_setid.py`).

use crate::common;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::pool::Pool;
use common::*;

const SCRIPT: &str = concat!(
    include_str!("host_probe.py"),
    include_str!("host_shared.py")
);
const STDIO_SCRIPT: &str = concat!(include_str!("host_probe.py"), include_str!("host_stdio.py"));
const PTY_WRAP: &str = include_str!("pty_wrap.py");
const SETID_SCRIPT: &str = concat!(include_str!("host_probe.py"), include_str!("host_setid.py"));

/// The probes' answers that are the same for root and for tester.
const COMMON: &[&str] = &[
    "write /dev/null ok",
    "read /dev/urandom 4",
    "write /dev/full ENOSPC",
    "chmod /dev/zero EROFS",
    "chown /dev/zero EROFS",
    "utime /dev/null EROFS",
    "fchmod /dev/zero EROFS",
    "read kernel/ostype Linux",
    "chmod /proc/tty EPERM",
    "fchmod /proc/tty EPERM",
    "read /proc/tty/drivers True",
    "chmod /proc/execdomains 0400 EPERM",
    "fchmod /proc/execdomains 0400 EPERM",
    "fchmod /proc/execdomains 0444 EPERM",
    "fchmod /proc/execdomains 0644 EPERM",
    "mode /proc/execdomains 0o444",
    "write oom_score_adj ok",
    "fchmod own 0600 ok",
    "mode own 0o600",
    "chmod own 0640 ok",
    "mode own 0o640",
];

/// A host inode's mode and change time, to see that nothing touched it.
fn inode(path: &str) -> (u32, i64, i64) {
    let m = std::fs::metadata(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (m.mode(), m.ctime(), m.ctime_nsec())
}

/// The guest's ids for the root cases that model a guest root which is
/// the host's root (root's default is a range, whose root owns nothing
/// of the host's: [`a_range_root_guest_changes_nothing_it_shares_with_the_host`]).
const ONE_ID: [&str; 2] = ["--userns-range", "none"];

/// Runs the probes as `user` (None: root) with supervisor flags `flags`
/// and checks the host after.
fn probe(user: Option<(u32, u32, std::path::PathBuf)>, flags: &[&str]) -> Vec<String> {
    let marker = guard_marker();
    let watched = ["/dev/zero", "/dev/urandom"];
    let before: Vec<_> = watched.iter().map(|p| inode(p)).collect();
    let exec_mode = fresh_mode("/proc/execdomains");
    let mut run = Run::new(&["/usr/bin/python3", "-c", SCRIPT, &marker]).sup(flags);
    if let Some((uid, gid, bin)) = user {
        run = run.user(uid, gid).bin(bin);
    }
    let out = run.supervised();
    // procfs keeps a global file's mode for every procfs mounted after
    // (the host's own inode may keep the old one until evicted): look in
    // a fresh sandbox's, and restore before asserting, through the
    // host's, so that a sandbox that let a mode through leaves no trace.
    let after = fresh_mode("/proc/execdomains");
    if after != exec_mode {
        let mode = std::fs::Permissions::from_mode(exec_mode);
        let _ = std::fs::set_permissions("/proc/execdomains", mode);
    }
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        exec_mode, after,
        "/proc/execdomains changed for every procfs"
    );
    for (p, b) in watched.iter().zip(&before) {
        assert_eq!(&inode(p), b, "{p} changed on the host");
    }
    out.stdout.lines().map(str::to_owned).collect()
}

/// A procfs file's mode as a new procfs shows it: as `stat` in a fresh
/// sandbox prints it (the test's own ids; only reading).
fn fresh_mode(path: &str) -> u32 {
    let out = Run::new(&["/usr/bin/stat", "-c", "%a", path]).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    u32::from_str_radix(out.stdout.trim(), 8).unwrap_or_else(|e| panic!("{}: {e}", out.stdout))
}

/// The host marker's path, made by [`guard`].
fn guard_marker() -> String {
    let _ = guard();
    HOST_MARKER.to_string()
}

/// The magic SysRq file, where this kernel has one, is read-only.
fn expect_sysrq(lines: &[String]) {
    let ok = ["open sysrq-trigger EROFS", "open sysrq-trigger absent"];
    assert!(
        lines.iter().any(|l| ok.contains(&l.as_str())),
        "{}",
        lines.join("\n")
    );
}

fn expect(lines: &[String], want: &str) {
    assert!(
        lines.iter().any(|l| l == want),
        "no `{want}` in:\n{}",
        lines.join("\n")
    );
}

#[test]
fn a_root_guest_changes_nothing_it_shares_with_the_host() {
    if !is_root() {
        skip!("the host's root is who owns these inodes");
    }
    if !Path::new("/proc/execdomains").exists() {
        skip!("no /proc/execdomains");
    }
    let lines = probe(None, &ONE_ID);
    for want in COMMON {
        expect(&lines, want);
    }
    expect_sysrq(&lines);
    // Root's guest is the host's root to a sysctl: refused by the mount.
    expect(&lines, "write vm/swappiness EROFS");
    expect(&lines, "write kernel/core_pattern EROFS");
    expect(&lines, "setxattr /dev/zero EROFS");
    assert_eq!(lines.len(), COMMON.len() + 4, "{}", lines.join("\n"));
}

/// Root's default, a range of ids: the guest's root is no host id that
/// owns these inodes, so a sysctl's mode refuses it first (as a
/// userns-remapped container's root), and the mounts still refuse the
/// rest.
#[test]
fn a_range_root_guest_changes_nothing_it_shares_with_the_host() {
    if !is_root() {
        skip!("the range is root's default");
    }
    if !Path::new("/proc/execdomains").exists() {
        skip!("no /proc/execdomains");
    }
    let lines = probe(None, &["--userns-range", "auto"]);
    for want in COMMON {
        expect(&lines, want);
    }
    expect_sysrq(&lines);
    expect(&lines, "write vm/swappiness EACCES");
    expect(&lines, "write kernel/core_pattern EACCES");
    expect(&lines, "setxattr /dev/zero EROFS");
    assert_eq!(lines.len(), COMMON.len() + 4, "{}", lines.join("\n"));
}

#[test]
fn an_unprivileged_guest_changes_nothing_it_shares_with_the_host() {
    let tester = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    if !Path::new("/proc/execdomains").exists() {
        skip!("no /proc/execdomains");
    }
    let lines = probe(Some(tester), &[]);
    for want in COMMON {
        expect(&lines, want);
    }
    expect_sysrq(&lines);
    // Not the sysctls' root: refused by their mode first.
    expect(&lines, "write vm/swappiness EACCES");
    expect(&lines, "write kernel/core_pattern EACCES");
    expect(&lines, "setxattr /dev/zero EROFS");
    assert_eq!(lines.len(), COMMON.len() + 4, "{}", lines.join("\n"));
}

/// What each user's guest answers for its stdio, the host's /dev/null
/// and a host terminal (which `tester`'s guest owns: its own to change).
const STDIO: &[&str] = &[
    "0 mem",
    "0 fchmod EROFS",
    "0 fchown EROFS",
    "0 futimens EROFS",
    "0 chmod link EROFS",
    "0 chown link EROFS",
    "1 tty",
    "0 read 0",
    "0 reopen ok",
    "1 write ok",
    "1 isatty True",
];

/// Runs the stdio probes as `user` (None: root), through `pool` if
/// given, under the pty wrapper, and checks the host's /dev/null after.
fn probe_stdio(user: Option<(u32, u32, std::path::PathBuf)>, pool: Option<&Pool>) -> Vec<String> {
    let marker = guard_marker();
    let before = inode("/dev/null");
    let mut run = Run::new(&["/usr/bin/python3", "-c", STDIO_SCRIPT, &marker]);
    run.wrap = ["/usr/bin/python3", "-c", PTY_WRAP]
        .map(Into::into)
        .to_vec();
    if let Some((uid, gid, bin)) = user {
        run = run.user(uid, gid).bin(bin);
    }
    if let Some(pool) = pool {
        run = run.sup(&pool.flag());
    }
    let out = run.supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(inode("/dev/null"), before, "/dev/null changed on the host");
    let lines: Vec<String> = out.stdout.lines().map(str::to_owned).collect();
    for want in STDIO {
        expect(&lines, want);
    }
    lines
}

/// The terminal is root's: reached read-only, like /dev/null.
fn expect_root_terminal_unchanged(lines: &[String]) {
    for probe in ["fchmod", "fchown", "futimens", "chmod link", "chown link"] {
        expect(lines, &format!("1 {probe} EROFS"));
    }
    expect(lines, "host terminal unchanged");
}

#[test]
fn a_root_guest_changes_nothing_of_its_stdio_on_the_host() {
    if !is_root() {
        skip!("the host's root is who owns these inodes");
    }
    let lines = probe_stdio(None, None);
    expect_root_terminal_unchanged(&lines);
    // Init took the view's own /dev/null: named as ever.
    expect(&lines, "0 names /dev/null");
    assert_eq!(lines.len(), STDIO.len() + 7, "{}", lines.join("\n"));
}

#[test]
fn a_pooled_root_guest_changes_nothing_of_its_stdio_on_the_host() {
    if !is_root() {
        skip!("the host's root is who owns these inodes");
    }
    let pool = Pool::start(&[]);
    let lines = probe_stdio(None, Some(&pool));
    expect_root_terminal_unchanged(&lines);
    // The view's node, as `run` gives it: the pool's sandbox took it in
    // place of the client's /dev/null (since 2026-12-04; before, the
    // client's read-only copy, named `/`).
    expect(&lines, "0 names /dev/null");
    assert_eq!(lines.len(), STDIO.len() + 7, "{}", lines.join("\n"));
}

#[test]
fn an_unprivileged_guest_changes_nothing_of_the_hosts_stdio() {
    let tester = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    let lines = probe_stdio(Some(tester), None);
    // The terminal is tester's own (the wrapper ran as tester), and an
    // unprivileged supervisor cannot copy a mount of the host's: as
    // natively (the change is its node's own mode, owner and times).
    for probe in ["fchmod", "fchown", "futimens", "chmod link", "chown link"] {
        expect(&lines, &format!("1 {probe} ok"));
    }
    expect(&lines, "host terminal CHANGED");
    expect(&lines, "0 names /dev/null");
    assert_eq!(lines.len(), STDIO.len() + 7, "{}", lines.join("\n"));
}

/// What each user's guest answers when it asks for set-id bits.
const SETID: &[&str] = &[
    "fchmod stdout 04755 ok",
    "chmod stdout link 06755 ok",
    "fchmod rw 04755 ok",
    "chmod rw 06755 ok",
    "mode rw 0o755",
    "chmod rw 02644 ok",
    "mode rw 0o2644",
    "chmod rw 04644 ok",
    "mode rw 0o4644",
    "chmod rw 04744 ok",
    "mode rw 0o744",
    "chmod rw 0755 ok",
    "chmod rw dir 06775 ok",
    // A directory's set-id bits make no program (set-group-ID hands
    // its group down), as on Linux.
    "mode rw dir 0o6775",
    "chmod own 04755 ok",
    "mode own 0o4755",
];

/// Runs the set-id probes as `user` (None: root), with stdout a file of
/// a fresh tree and `--rw` a directory of it, and checks both files on
/// the host after.
fn probe_setid(user: Option<(u32, u32, std::path::PathBuf)>, flags: &[&str]) {
    let marker = guard_marker();
    let t = Tree::new();
    let rw = t.dir("rw");
    let stdout = t.join("stdout");
    let rw_arg = rw.display().to_string();
    let mut run = Run::new(&["/usr/bin/python3", "-c", SETID_SCRIPT, &marker, &rw_arg]).sup(flags);
    run = run.rw(t.path());
    let redirect = format!("exec \"$0\" \"$@\" > {}", stdout.display());
    run.wrap = ["/bin/sh", "-c", redirect.as_str()]
        .map(Into::into)
        .to_vec();
    if let Some((uid, gid, bin)) = user {
        t.give_to(uid, gid);
        run = run.user(uid, gid).bin(bin);
    }
    let out = run.supervised();
    let host_mode = |p: &Path| std::fs::metadata(p).map(|m| m.mode() & 0o7777).ok();
    assert_eq!(host_mode(&stdout), Some(0o755), "{}", out.dump());
    assert_eq!(host_mode(&rw.join("prog")), Some(0o755), "{}", out.dump());
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let lines: Vec<String> = out.stderr.lines().map(str::to_owned).collect();
    for want in SETID {
        expect(&lines, want);
    }
    assert_eq!(lines.len(), SETID.len(), "{}", lines.join("\n"));
}

#[test]
fn a_root_guest_makes_no_set_id_program_of_the_hosts() {
    if !is_root() {
        skip!("the host's root is who would own the program");
    }
    // With one id: the guest's root owns the redirected stdout, the
    // hardest case (under a range it may not change its mode at all).
    probe_setid(None, &ONE_ID);
}

#[test]
fn an_unprivileged_guest_makes_no_set_id_program_of_the_hosts() {
    match tester_bin() {
        Ok(tester) => probe_setid(Some(tester), &[]),
        Err(e) => skip!("{e}"),
    }
}

/// Secrets of the host's /etc, which root's guest would read as their
/// owner (`vfs::mounts::ETC_HIDDEN`): each the host has is absent.
const ETC_SECRETS: &[&str] = &[
    "shadow",
    "gshadow",
    "sudoers",
    "security/opasswd",
    "ssl/private",
    "docker/key.json",
    "wireguard",
    "NetworkManager/system-connections",
    "letsencrypt",
    "krb5.keytab",
    "ipsec.secrets",
    "kubernetes",
    "rancher",
    "gitlab-runner",
    "mysql/debian.cnf",
    "sssd",
    "netplan",
];

#[test]
fn a_root_guest_reads_no_secret_of_the_hosts_etc() {
    if !is_root() {
        skip!("the host's root is who owns these files");
    }
    let present: Vec<String> = ETC_SECRETS
        .iter()
        .map(|rel| format!("/etc/{rel}"))
        .filter(|p| Path::new(p).symlink_metadata().is_ok())
        .collect();
    assert!(!present.is_empty(), "the host has none of {ETC_SECRETS:?}");
    let script = "for p; do test -e \"$p\" -o -L \"$p\" && echo \"visible $p\"; done; echo done";
    let mut argv = vec!["/bin/sh", "-c", script, "sh"];
    argv.extend(present.iter().map(String::as_str));
    let out = Run::new(&argv).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "done\n", "{present:?}: {}", out.dump());
}
