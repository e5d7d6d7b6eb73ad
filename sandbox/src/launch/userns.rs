//! The user namespace's id maps, written by the supervisor for its child.
//!
//! Owns: `/proc/<pid>/{setgroups,uid_map,gid_map}`. The guest always gets
//! a fresh user namespace mapping the invoker's own uid and gid at the
//! same numbers inside (root stays 0, user 1000 stays 1000), so root and
//! unprivileged runs share one code path. `supervisor run` maps that one
//! id and denies setgroups (required for an unprivileged gid_map, and
//! harmless for root). The OCI runtime as root maps a range from it
//! (`count` ids: container 0–65535 onto host 0–65535) and allows
//! setgroups, for `process.user` (`users.rs`).

use std::fs;
use std::io;

use nix::unistd::Pid;

/// The one-line map "INSIDE OUTSIDE COUNT" for ids kept at the same numbers.
pub fn identity_map(id: u32, count: u32) -> String {
    format!("{id} {id} {}\n", count.max(1))
}

/// Writes the maps of `child`'s user namespace: `count` ids from `uid`
/// and from `gid`. Errors name the file.
pub fn write_maps(child: Pid, uid: u32, gid: u32, count: u32) -> Result<(), String> {
    let write = |name: &str, data: &str| -> Result<(), String> {
        let path = format!("/proc/{child}/{name}");
        fs::write(&path, data)
            .map_err(|e: io::Error| format!("writing {path}: {}", super::plan::describe(&e)))
    };
    write("setgroups", if count > 1 { "allow\n" } else { "deny\n" })?;
    write("uid_map", &identity_map(uid, count))?;
    write("gid_map", &identity_map(gid, count))
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_line() {
        assert_eq!(super::identity_map(1000, 1), "1000 1000 1\n");
        assert_eq!(super::identity_map(0, 1), "0 0 1\n");
        assert_eq!(super::identity_map(0, 65536), "0 0 65536\n");
    }
}
