//! The user namespace's id maps, written by the supervisor for its child.
//!
//! Owns: `/proc/<pid>/{setgroups,uid_map,gid_map}`. The guest always gets
//! a fresh user namespace mapping exactly one id: the invoker's own uid
//! and gid, at the same numbers inside (root stays 0, user 1000 stays
//! 1000), so root and unprivileged runs share one code path. setgroups is
//! denied (required for an unprivileged gid_map, and harmless for root).

use std::fs;
use std::io;

use nix::unistd::Pid;

/// The one-line map "INSIDE OUTSIDE 1" for an id kept at the same number.
pub fn identity_map(id: u32) -> String {
    format!("{id} {id} 1\n")
}

/// Writes the maps of `child`'s user namespace. Errors name the file.
pub fn write_maps(child: Pid, uid: u32, gid: u32) -> Result<(), String> {
    let write = |name: &str, data: &str| -> Result<(), String> {
        let path = format!("/proc/{child}/{name}");
        fs::write(&path, data)
            .map_err(|e: io::Error| format!("writing {path}: {}", super::plan::describe(&e)))
    };
    write("setgroups", "deny\n")?;
    write("uid_map", &identity_map(uid))?;
    write("gid_map", &identity_map(gid))
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_line() {
        assert_eq!(super::identity_map(1000), "1000 1000 1\n");
        assert_eq!(super::identity_map(0), "0 0 1\n");
    }
}
