//! inotify_add_watch.
//!
//! Owns: the mask checks (kernel order), taking the guest's own inotify
//! instance (`Guest::dup_fd`, so watches land in it), resolving the path
//! in the view (IN_DONT_FOLLOW, IN_ONLYDIR honoured here) and adding the
//! watch on `/proc/self/fd/<O_PATH descriptor>`, which names exactly the
//! resolved file.

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::{live, lookup_path, read_path, value, Context, Res};
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
    if mask & IN_ONLYDIR != 0 && sys::fstat(target.as_fd())?.st_mode & libc::S_IFMT != libc::S_IFDIR
    {
        return Err(Errno::ENOTDIR);
    }
    live(g)?;
    // The magic link must be followed to the resolved file itself.
    let wd = sys::inotify_watch_fd(inotify.as_fd(), target.as_fd(), mask & !IN_DONT_FOLLOW)?;
    value(wd as i64)
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
