//! stat, lstat, newfstatat, statx, statfs.
//!
//! Owns: the flag checks of these calls, and writing `struct stat`,
//! `struct statx` and `struct statfs` with owners mapped for the guest.
//! The hot path (an absolute path) costs one `openat2` and one `fstat`.
//!
//! A path stat that resolves to anything but a file of the view's procfs
//! is answered CONTINUE (see [`kernel_may_stat`]): the kernel then stats,
//! in the guest's own view, what the VFS found, and the supervisor never
//! writes the struct (a `process_vm_writev`, more than the guest's own
//! stat costs).

use std::ffi::CStr;
use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::abi;
use super::{dir_itself, lookup_path, read_path, start, value, Caller, Context, Res};
use crate::guest::Guest;
use crate::Reply;

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

/// The start of a stat-like call's path, for [`vfs::Resolver::stat`].
fn with_path<T>(
    g: &dyn Guest,
    dirfd: i32,
    path: &CStr,
    f: impl FnOnce(&vfs::At<'_>) -> Result<T, Errno>,
) -> Result<T, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let dir = start(g, dirfd, path.to_bytes())?;
    f(&vfs::At {
        dir: dir.as_ref().map(AsFd::as_fd),
        caller: &Caller(g),
    })
}

/// newfstatat (and stat, lstat).
pub fn fstatat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, buf: u64, flags: i32) -> Res {
    let name = name_maybe_null(g, addr, flags);
    let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    // No name and a real descriptor: fstat, whatever the other flags.
    let st = if matches!(name, Ok(None)) && dirfd >= 0 {
        sys::fstat(g.fd_path(dirfd)?.as_fd())?
    } else {
        if flags & !STAT_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        match name? {
            None => sys::fstat(dir_itself(g, dirfd)?.as_fd())?,
            Some(path) => {
                let mut st = with_path(g, dirfd, &path, |at| ctx.fs.stat(at, &path, follow))?;
                if kernel_may_stat(ctx, st.st_dev) {
                    return Ok(Reply::Continue);
                }
                let size = u64::try_from(st.st_size).unwrap_or(0);
                let served = ctx.synthetic.stat_size(&ctx.fs, st.st_dev, st.st_ino, size);
                st.st_size = i64::try_from(served).unwrap_or(st.st_size);
                st
            }
        }
    };
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
    let pass = flags & (libc::AT_STATX_SYNC_TYPE | libc::AT_NO_AUTOMOUNT);
    let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    let mut sx = match if by_fd { Ok(None) } else { name } {
        Ok(None) => {
            let fd = if by_fd {
                g.fd_path(dirfd)?
            } else {
                dir_itself(g, dirfd)?
            };
            sys::statx(fd.as_fd(), c"", pass | libc::AT_EMPTY_PATH, mask)?
        }
        Ok(Some(path)) => {
            let mut sx = with_path(g, dirfd, &path, |at| {
                ctx.fs.statx(at, &path, follow, pass, mask)
            })?;
            if kernel_may_stat(ctx, abi::statx_dev(&sx)) {
                return Ok(Reply::Continue);
            }
            abi::map_statx_size(&mut sx, |dev, ino, size| {
                ctx.synthetic.stat_size(&ctx.fs, dev, ino, size)
            });
            sx
        }
        Err(e) => return Err(e),
    };
    abi::map_statx(&mut sx, &ctx.ids);
    g.write_mem(buf, &sx)?;
    value(0)
}

/// Whether the kernel may answer a path stat whose object the VFS found
/// on device `dev`: the guest's own stat, in its own view and with its
/// own credentials, gives exactly what we would write (the user
/// namespace shows unmapped owners as the overflow id, as `IdMap` does)
/// unless the object is on the view's procfs, where served files report
/// the size a read gives. A guest that rewrites the path in between gets
/// the kernel's stat of another object of its own view: at worst a
/// masked procfs file's host size, as a racing open may read the host's
/// `/proc/meminfo` (ARCHITECTURE.md, step 5 of the data flow).
fn kernel_may_stat(ctx: &Context, dev: u64) -> bool {
    ctx.continue_plain_opens && !ctx.synthetic.on_procfs(dev)
}

/// statfs(path, buf).
pub fn statfs(ctx: &Context, g: &dyn Guest, addr: u64, buf: u64) -> Res {
    let path = read_path(g, addr)?;
    let fd = lookup_path(ctx, g, libc::AT_FDCWD, &path, false, true)?;
    let st = sys::fstatfs_bytes(fd.as_fd())?;
    g.write_mem(buf, &st)?;
    value(0)
}
