//! The user namespace's id maps, written by the supervisor for its child.
//!
//! Owns: `/proc/<pid>/{setgroups,uid_map,gid_map}`, and running the
//! host's `newuidmap`/`newgidmap` where the maps need them. The guest
//! always gets a fresh user namespace, mapped one of three ways
//! (`vfs::IdMap`):
//!
//! - one id, the invoker's own at the same number (root stays 0, user
//!   1000 stays 1000), setgroups denied (required for an unprivileged
//!   gid_map, harmless for root): an unprivileged invoker without
//!   subordinate ids;
//! - a range written directly: root's shifted range (guest 0–65535 onto
//!   an unused host range, `subids.rs`), or the OCI runtime's identity
//!   range; setgroups allowed, for other users;
//! - an unprivileged invoker's subordinate range, which only the
//!   set-user-ID `newuidmap` and `newgidmap` may write (as rootless
//!   Podman does): guest 0 as the invoker, guest 1–65535 onto its
//!   subordinate ids.

use std::fs;
use std::io;
use std::process::Command;

use nix::unistd::Pid;
use vfs::IdMap;

/// Writes the maps of `child`'s user namespace. Errors name the file or
/// the program.
pub fn write_maps(child: Pid, map: &IdMap) -> Result<(), String> {
    let subordinate = map.uid_extents().count() > 1 && !nix::unistd::geteuid().is_root();
    if subordinate {
        return run_map_helper("newgidmap", child, map.gid_extents())
            .and_then(|()| run_map_helper("newuidmap", child, map.uid_extents()));
    }
    let write = |name: &str, data: &str| -> Result<(), String> {
        let path = format!("/proc/{child}/{name}");
        fs::write(&path, data)
            .map_err(|e: io::Error| format!("writing {path}: {}", super::plan::describe(&e)))
    };
    let lines = |extents: &mut dyn Iterator<Item = vfs::idmap::Extent>| {
        extents.map(|e| e.line()).collect::<String>()
    };
    write(
        "setgroups",
        if map.count() > 1 { "allow\n" } else { "deny\n" },
    )?;
    write("uid_map", &lines(&mut map.uid_extents()))?;
    write("gid_map", &lines(&mut map.gid_extents()))
}

/// `newuidmap PID INSIDE OUTSIDE COUNT...` (or newgidmap).
fn run_map_helper(
    program: &str,
    child: Pid,
    extents: impl Iterator<Item = vfs::idmap::Extent>,
) -> Result<(), String> {
    let mut cmd = Command::new(program);
    cmd.arg(child.to_string());
    for e in extents {
        cmd.args([e.inside, e.outside, e.count].map(|n| n.to_string()));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running {program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr);
    let why = why.lines().next().unwrap_or("").trim();
    Err(format!("{program} failed ({}): {why}", out.status))
}
