//! What a guest shares with the host, it may use but never change
//! (`launch/dev_view.rs`, `launch/proc_view.rs`, `handlers/attr.rs`):
//! the devices bound from the host's /dev are read-only mounts (no
//! chmod, chown, times or xattrs of the host's inodes), /proc/sys and
//! procfs's host-wide directories are read-only (no sysctl written: a
//! root guest is the host's root to the sysctl checks), and no mode of a
//! procfs file changes, and no set-id bit is set on a host file (a `--rw`
//! bind, stdout). `tests/fs/host_shared.py` probes each harmlessly
//! (its own value written back, its own mode set), as root and as the
//! unprivileged `tester`, and the host's inodes are checked unchanged
//! afterwards. The script refuses to run natively: natively, as root,
//! these changes would reach the host.

mod common;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;

const SCRIPT: &str = include_str!("fs/host_shared.py");

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
    "fchmod /proc/tty EROFS",
    "read /proc/tty/drivers True",
    "chmod /proc/execdomains 0400 EPERM",
    "fchmod /proc/execdomains 0400 EPERM",
    "mode /proc/execdomains 0o444",
    "write oom_score_adj ok",
    "fchmod own 0600 ok",
    "mode own 0o600",
    "chmod own 0640 ok",
    "mode own 0o640",
    "chmod host 04755 EPERM",
    "chmod host 02755 EPERM",
    "fchmod host 04755 EPERM",
    "fchmod host 04555 EPERM",
    "fchmod host 0700 ok",
    "mode host 0o700",
    "fchmod stdout 04755 EPERM",
    "chmod host 02640 ok",
    "mode host 0o2640",
    "chmod host dir 02775 ok",
    "chmod layer 04755 ok",
    "mode layer 0o4755",
];

/// A host inode's mode and change time, to see that nothing touched it.
fn inode(path: &str) -> (u32, i64, i64) {
    let m = std::fs::metadata(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (m.mode(), m.ctime(), m.ctime_nsec())
}

/// Runs the probes as `user` (None: root) and checks the host after.
fn probe(user: Option<(u32, u32, std::path::PathBuf)>) -> Vec<String> {
    let marker = guard_marker();
    let watched = ["/dev/zero", "/dev/urandom"];
    let before: Vec<_> = watched.iter().map(|p| inode(p)).collect();
    let exec_mode = std::fs::metadata("/proc/execdomains").map(|m| m.mode());
    let shared = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let dir = shared.path().display().to_string();
    let stdout_file = shared.path().join("stdout");
    let mut run = Run::new(&[
        "/bin/sh",
        "-c",
        "exec /usr/bin/python3 -c \"$0\" \"$1\" \"$2\" > \"$3\"",
        SCRIPT,
        &marker,
        &dir,
        &stdout_file.display().to_string(),
    ])
    .rw(shared.path());
    if let Some((uid, gid, bin)) = user {
        run = run.user(uid, gid).bin(bin);
    }
    let out = run.supervised();
    // Restore before asserting: a sandbox that let the mode through must
    // not leave the host's procfs changed.
    let after = std::fs::metadata("/proc/execdomains").map(|m| m.mode());
    if let (Ok(b), Ok(a)) = (&exec_mode, &after) {
        if a != b {
            let mode = std::fs::Permissions::from_mode(b & 0o7777);
            let _ = std::fs::set_permissions("/proc/execdomains", mode);
        }
    }
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(exec_mode.ok(), after.ok(), "/proc/execdomains changed");
    for (p, b) in watched.iter().zip(&before) {
        assert_eq!(&inode(p), b, "{p} changed on the host");
    }
    // The host file given as stdout kept its mode.
    let out_mode = std::fs::metadata(&stdout_file).expect("stdout file").mode();
    assert_eq!(out_mode & 0o6000, 0, "stdout's file got a set-id bit");
    let text = std::fs::read_to_string(&stdout_file).expect("stdout");
    text.lines().map(str::to_owned).collect()
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
    let lines = probe(None);
    for want in COMMON {
        expect(&lines, want);
    }
    expect_sysrq(&lines);
    // Root's guest is the host's root to a sysctl: refused by the mount.
    expect(&lines, "write vm/swappiness EROFS");
    expect(&lines, "write kernel/core_pattern EROFS");
    expect(&lines, "setxattr /dev/zero EROFS");
    // A mode that takes nothing away passes the filter; the owner may.
    expect(&lines, "fchmod /proc/execdomains 0444 ok");
    assert_eq!(lines.len(), COMMON.len() + 5, "{}", lines.join("\n"));
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
    let lines = probe(Some(tester));
    for want in COMMON {
        expect(&lines, want);
    }
    expect_sysrq(&lines);
    // Not the sysctls' root: refused by their mode first.
    expect(&lines, "write vm/swappiness EACCES");
    expect(&lines, "write kernel/core_pattern EACCES");
    expect(&lines, "setxattr /dev/zero EROFS");
    expect(&lines, "fchmod /proc/execdomains 0444 EPERM");
    assert_eq!(lines.len(), COMMON.len() + 5, "{}", lines.join("\n"));
}
