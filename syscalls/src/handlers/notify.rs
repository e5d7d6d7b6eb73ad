//! inotify_add_watch.
//!
//! Owns: the mask checks (kernel order), taking the guest's own inotify
//! instance (`Guest::dup_fd`, so watches land in it), resolving the path
//! in the view (IN_DONT_FOLLOW, IN_ONLYDIR honoured here) and adding the
//! watch on `/proc/self/fd/<O_PATH descriptor>`, which names exactly the
//! resolved file; and which events a watch on the host's files may see.
//!
//! A file system the host has mounted (`host_fs`: /usr and the other
//! read-only binds, `--ro` and `--rw` mounts, /dev's device nodes) is
//! shared with the host and every other sandbox, and inotify reports what
//! any process does there, not only the guest: a watch with `IN_OPEN` on
//! /usr/lib/python3.11 would tell a tenant which modules the others
//! import, and when; `IN_MODIFY` on /dev/null, whenever anyone writes
//! there. So on those file systems the read events (`IN_ACCESS`,
//! `IN_OPEN`, `IN_CLOSE_NOWRITE`) are dropped from the mask, and on a
//! device node the write events too (`IN_MODIFY`, `IN_CLOSE_WRITE`). The
//! guest then does not see its own reads there either (COMPATIBILITY.md);
//! changes to the tree itself (create, delete, move, attributes, writes
//! to files) are still reported, as in a `--rw` mount they should be.
//! gVisor's watches see only the sandbox's own events; the sandbox's
//! layer, /tmp, its /etc overlay and its procfs keep every event.

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::{host_fs, live, lookup_path, read_path, value, Context, Res};
use crate::guest::Guest;

const IN_ONLYDIR: u32 = libc::IN_ONLYDIR;
const IN_DONT_FOLLOW: u32 = libc::IN_DONT_FOLLOW;
const IN_MASK_ADD: u32 = libc::IN_MASK_ADD;
const IN_MASK_CREATE: u32 = 0x1000_0000;
/// The kernel's ALL_INOTIFY_BITS.
const ALL_INOTIFY_BITS: u32 = libc::IN_ALL_EVENTS
    | libc::IN_UNMOUNT
    | libc::IN_Q_OVERFLOW
    | libc::IN_IGNORED
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK
    | IN_MASK_ADD
    | IN_MASK_CREATE
    | libc::IN_ISDIR
    | libc::IN_ONESHOT;

/// inotify_add_watch(fd, path, mask).
pub fn inotify_add_watch(ctx: &Context, g: &dyn Guest, fd: i32, addr: u64, mask: u32) -> Res {
    if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
        return Err(Errno::EINVAL);
    }
    if mask & ALL_INOTIFY_BITS == 0 {
        return Err(Errno::EINVAL);
    }
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    let inotify = g.dup_fd(fd)?;
    // The kernel's fdget sees no O_PATH descriptor: EBADF, not EINVAL.
    if is_opath(inotify.as_fd()) {
        return Err(Errno::EBADF);
    }
    if !is_inotify(inotify.as_fd()) {
        return Err(Errno::EINVAL);
    }
    let path = read_path(g, addr)?;
    let follow = mask & IN_DONT_FOLLOW == 0;
    let target = lookup_path(ctx, g, libc::AT_FDCWD, &path, false, follow)?;
    let st = sys::fstat(target.as_fd())?;
    if mask & IN_ONLYDIR != 0 && st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let shared = host_fs::is_hosts(st.st_dev, ctx.fs.root_dev());
    live(g)?;
    // The magic link must be followed to the resolved file itself.
    let mask = visible_events(mask & !IN_DONT_FOLLOW, shared, st.st_mode);
    let wd = sys::inotify_watch_fd(inotify.as_fd(), target.as_fd(), mask)?;
    value(wd as i64)
}

/// The events of `mask` a watch may see on an object of `mode`, on a file
/// system the host shares (`shared`) or the sandbox's own (module doc).
/// When none is left, `IN_IGNORED` stands in: the kernel refuses a mask
/// without a single inotify bit but reports nothing for that one.
fn visible_events(mask: u32, shared: bool, mode: u32) -> u32 {
    if !shared {
        return mask;
    }
    let mut hidden = libc::IN_ACCESS | libc::IN_OPEN | libc::IN_CLOSE_NOWRITE;
    if matches!(mode & libc::S_IFMT, libc::S_IFCHR | libc::S_IFBLK) {
        hidden |= libc::IN_MODIFY | libc::IN_CLOSE_WRITE;
    }
    match mask & !hidden {
        left if left & ALL_INOTIFY_BITS == 0 => libc::IN_IGNORED,
        left => left,
    }
}

fn is_opath(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .is_ok_and(|fl| fl & libc::O_PATH != 0)
}

fn is_inotify(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 64];
    matches!(sys::fd_path(fd, &mut buf), Ok(n) if buf.get(..n) == Some(b"anon_inode:inotify"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: u32 = libc::S_IFDIR | 0o755;

    #[test]
    fn the_sandbox_s_own_files_keep_every_event() {
        assert_eq!(
            visible_events(libc::IN_ALL_EVENTS, false, DIR),
            libc::IN_ALL_EVENTS
        );
        assert_eq!(
            visible_events(libc::IN_ACCESS, false, libc::S_IFCHR),
            libc::IN_ACCESS
        );
    }

    #[test]
    fn the_host_s_files_lose_the_read_events() {
        let want =
            libc::IN_ALL_EVENTS & !(libc::IN_ACCESS | libc::IN_OPEN | libc::IN_CLOSE_NOWRITE);
        assert_eq!(visible_events(libc::IN_ALL_EVENTS, true, DIR), want);
        let flags = libc::IN_ONESHOT | libc::IN_MODIFY;
        assert_eq!(visible_events(flags | libc::IN_OPEN, true, DIR), flags);
    }

    #[test]
    fn the_host_s_devices_lose_the_writes_too() {
        let chr = libc::S_IFCHR | 0o666;
        let got = visible_events(libc::IN_ALL_EVENTS, true, chr);
        assert_eq!(
            got & (libc::IN_MODIFY | libc::IN_CLOSE_WRITE | libc::IN_OPEN),
            0
        );
        assert_ne!(got & libc::IN_ATTRIB, 0);
    }

    #[test]
    fn a_mask_left_empty_still_makes_a_watch() {
        assert_eq!(visible_events(libc::IN_OPEN, true, DIR), libc::IN_IGNORED);
        let chr = libc::S_IFCHR | 0o666;
        assert_eq!(visible_events(libc::IN_MODIFY, true, chr), libc::IN_IGNORED);
    }
}
