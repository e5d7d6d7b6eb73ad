//! stat, lstat, newfstatat, statx, statfs.
//!
//! Owns: the flag checks of these calls, and writing `struct stat`,
//! `struct statx` and `struct statfs` with owners mapped for the guest.
//! The hot path (an absolute path) costs one `openat2` and one `fstat`.

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use vfs::sys;

use super::abi;
use super::{dir_itself, lookup_path, read_path, value, Context, Res};
use crate::guest::Guest;

/// Flags `vfs_statx` accepts (newfstatat and statx).
const STAT_FLAGS: i32 = libc::AT_SYMLINK_NOFOLLOW
    | libc::AT_NO_AUTOMOUNT
    | libc::AT_EMPTY_PATH
    | libc::AT_STATX_SYNC_TYPE;
/// `STATX__RESERVED`: a mask bit reserved for extending struct statx.
const STATX_RESERVED: u32 = 0x8000_0000;

/// The kernel's `getname_maybe_null`: with AT_EMPTY_PATH, a NULL or empty
/// path is no name at all (None). Errors reading the path are kept for
/// later, as the kernel reports them only after checking the flags.
fn name_maybe_null(
    g: &dyn Guest,
    addr: u64,
    flags: i32,
) -> Result<Option<std::ffi::CString>, Errno> {
    let empty_ok = flags & libc::AT_EMPTY_PATH != 0;
    if empty_ok && addr == 0 {
        return Ok(None);
    }
    match read_path(g, addr) {
        Ok(p) if p.is_empty() && empty_ok => Ok(None),
        r => r.map(Some),
    }
}

/// The file a stat-like call names, after the flag checks: no name is
/// `dirfd` itself (the cwd for AT_FDCWD), otherwise the path from it.
fn target(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    name: Result<Option<std::ffi::CString>, Errno>,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    match name? {
        None => dir_itself(g, dirfd),
        Some(path) => lookup_path(
            ctx,
            g,
            dirfd,
            &path,
            false,
            flags & libc::AT_SYMLINK_NOFOLLOW == 0,
        ),
    }
}

/// newfstatat (and stat, lstat).
pub fn fstatat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, buf: u64, flags: i32) -> Res {
    let name = name_maybe_null(g, addr, flags);
    // No name and a real descriptor: fstat, whatever the other flags.
    let fd = if matches!(name, Ok(None)) && dirfd >= 0 {
        g.fd_path(dirfd)?
    } else {
        if flags & !STAT_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        target(ctx, g, dirfd, name, flags)?
    };
    let st = sys::fstat(fd.as_fd())?;
    g.write_mem(buf, &abi::stat_bytes(&st, &ctx.ids))?;
    value(0)
}

/// statx(dirfd, path, flags, mask, buf).
pub fn statx(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    flags: i32,
    mask: u32,
    buf: u64,
) -> Res {
    let name = name_maybe_null(g, addr, flags);
    let by_fd = matches!(name, Ok(None)) && dirfd >= 0;
    if (!by_fd && flags & !STAT_FLAGS != 0)
        || flags & libc::AT_STATX_SYNC_TYPE == libc::AT_STATX_SYNC_TYPE
        || mask & STATX_RESERVED != 0
    {
        return Err(Errno::EINVAL);
    }
    let fd = if by_fd {
        g.fd_path(dirfd)?
    } else {
        target(ctx, g, dirfd, name, flags)?
    };
    let pass = libc::AT_EMPTY_PATH | (flags & (libc::AT_STATX_SYNC_TYPE | libc::AT_NO_AUTOMOUNT));
    let mut sx = sys::statx(fd.as_fd(), c"", pass, mask)?;
    abi::map_statx(&mut sx, &ctx.ids);
    g.write_mem(buf, &sx)?;
    value(0)
}

/// statfs(path, buf).
pub fn statfs(ctx: &Context, g: &dyn Guest, addr: u64, buf: u64) -> Res {
    let path = read_path(g, addr)?;
    let fd = lookup_path(ctx, g, libc::AT_FDCWD, &path, false, true)?;
    let st = sys::fstatfs_bytes(fd.as_fd())?;
    g.write_mem(buf, &st)?;
    value(0)
}
