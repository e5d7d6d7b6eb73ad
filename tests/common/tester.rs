//! The unprivileged user `tester` (uid 1001) and a copy of the binary it
//! can run, for tests that compare a guest of an unprivileged invoker.
//!
//! Not here: the user `sbxtest` of `tests/security/unprivileged.rs`, which that
//! suite creates itself.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::{bin, is_root};

/// Whether the user `tester` exists with uid 1001.
pub fn tester_exists() -> bool {
    Command::new("id")
        .args(["-u", "tester"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "1001")
}

/// A copy of the binary the unprivileged user can run, or why not. Made
/// once per test process: a copy made while another test's thread
/// execs the last one, or forks while this process holds the copy open
/// for writing (the child inherits that descriptor until its own exec),
/// makes an exec of the copy fail with ETXTBSY. The bytes are written by
/// `cp`, a process of its own, so no fork of ours ever holds them open.
pub fn tester_bin() -> Result<(u32, u32, PathBuf), String> {
    static ONCE: OnceLock<Result<(u32, u32, PathBuf), String>> = OnceLock::new();
    ONCE.get_or_init(copy_for_tester).clone()
}

fn copy_for_tester() -> Result<(u32, u32, PathBuf), String> {
    if !is_root() {
        return Err("needs root to become tester".into());
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, "tester"]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    let (uid, gid) = (
        id("-u").ok_or("no user tester")?,
        id("-g").ok_or("no group")?,
    );
    let bin = copy_for_others("procfs-bin")?;
    Ok((uid, gid, bin))
}

/// A copy of the binary under test that every user can run:
/// `$CARGO_TARGET_TMPDIR/DIR_NAME/supervisor`, mode 0755, in directories
/// all searchable by others (or why not). The bytes are written by `cp`,
/// a process of its own: were they written by this process, a fork of
/// another test's thread meanwhile would inherit the descriptor open for
/// writing until its own exec, and an exec of the copy then could fail
/// with ETXTBSY. Written under a private name, then renamed.
pub fn copy_for_others(dir_name: &str) -> Result<PathBuf, String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mode =
        |p: &std::path::Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(&dir, 0o755).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!("supervisor.{}", std::process::id()));
    let copied = Command::new("cp")
        .arg(bin())
        .arg(&tmp)
        .status()
        .map_err(|e| format!("cp: {e}"))?;
    if !copied.success() {
        return Err(format!(
            "cp {} {}: {copied}",
            bin().display(),
            tmp.display()
        ));
    }
    mode(&tmp, 0o755).map_err(|e| e.to_string())?;
    let bin = dir.join("supervisor");
    std::fs::rename(&tmp, &bin).map_err(|e| e.to_string())?;
    let mut cur = Some(dir.as_path());
    while let Some(d) = cur {
        let m = std::fs::metadata(d)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        if m & 0o001 == 0 {
            return Err(format!("{} is not searchable by others", d.display()));
        }
        cur = d.parent();
    }
    Ok(bin)
}
