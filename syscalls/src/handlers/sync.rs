//! sync(2) of the sandbox: `syncfs` of each file system mounted in the
//! guest's view (its root layer, /tmp, `--tmpfs`, the host directories
//! it was given), not the host-wide sync the kernel's call makes, which
//! would let a guest stall every writer on the host.
//!
//! Owns: listing the guest's mounts (its thread's mountinfo), opening
//! each inside the view's root, and flushing each file system once. Does
//! not own: `syncfs`, `fsync` and `fdatasync` of the guest's own
//! descriptors, which pass.

use std::collections::BTreeSet;
use std::ffi::CString;

use super::{live, value, Context, Res};
use crate::guest::Guest;

/// File systems with nothing to write back.
const NOTHING_TO_FLUSH: &[&str] = &[
    "proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2", "tmpfs", "devtmpfs", "ramfs",
];

/// The mount points of a mountinfo text whose file system has something
/// to write back, unescaped (the kernel writes space, tab, newline and
/// backslash as `\ooo`).
fn mount_points(mountinfo: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(point), Some(fstype)) = (fields.get(4), fields.get(sep + 1)) else {
            continue;
        };
        if NOTHING_TO_FLUSH.contains(fstype) {
            continue;
        }
        out.push(unescape(point.as_bytes()));
    }
    out
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let octal = s
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (s[i], octal) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// sync(): every file system of the guest's view written back once.
/// Errors are the kernel's sync's: none (a mount that cannot be opened
/// is skipped).
pub fn sync(ctx: &Context, g: &dyn Guest) -> Res {
    let info = std::fs::read_to_string(format!("/proc/{}/mountinfo", g.tid())).unwrap_or_default();
    live(g)?;
    let mut done = BTreeSet::new();
    for point in mount_points(&info) {
        let rel: Vec<u8> = point.iter().copied().skip_while(|c| *c == b'/').collect();
        let path = if rel.is_empty() { b".".to_vec() } else { rel };
        let Ok(path) = CString::new(path) else {
            continue;
        };
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK;
        let resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_SYMLINKS;
        let Ok(fd) = vfs::sys::openat2(ctx.fs.root(), &path, flags as u64, 0, resolve) else {
            continue;
        };
        let Ok(st) = vfs::sys::fstat(std::os::fd::AsFd::as_fd(&fd)) else {
            continue;
        };
        if done.insert(st.st_dev) {
            let _ = vfs::sys::syncfs(std::os::fd::AsFd::as_fd(&fd));
        }
    }
    value(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_skip_memory_file_systems_and_unescape() {
        let info = "22 1 0:21 / / rw - overlay overlay rw\n\
                    23 22 0:22 / /proc rw - proc proc rw\n\
                    24 22 0:23 / /tmp rw - tmpfs tmpfs rw\n\
                    25 22 8:1 /home/a /my\\040dir rw,nosuid shared:1 - ext4 /dev/sda1 rw\n";
        assert_eq!(mount_points(info), vec![b"/".to_vec(), b"/my dir".to_vec()]);
    }
}
