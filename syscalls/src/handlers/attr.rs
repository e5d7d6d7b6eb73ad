//! chmod/fchmodat/fchmodat2, chown/lchown/fchownat, utime/utimes/futimesat/utimensat, truncate.
//!
//! Owns: the argument checks of these calls in kernel order. Each
//! resolves the path to an `O_PATH` descriptor (following a final symlink
//! unless told not to) and acts on that descriptor, never on a name: the
//! kernel then applies the guest's own permission checks to the worker,
//! which has the guest's ids and no capabilities.

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::abi;
use super::{live, lookup_at, value, Context, Res};
use crate::guest::Guest;

const NOFOLLOW: i32 = libc::AT_SYMLINK_NOFOLLOW;
const EMPTY: i32 = libc::AT_EMPTY_PATH;
/// `UTIME_OMIT` and `UTIME_NOW` as the kernel reads them.
const UTIME_OMIT: i64 = (1 << 30) - 2;

fn follows(flags: i32) -> bool {
    flags & NOFOLLOW == 0
}

/// fchmodat2 (and chmod, fchmodat with flags 0).
pub fn fchmodat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, mode: u32, flags: i32) -> Res {
    if flags & !(NOFOLLOW | EMPTY) != 0 {
        return Err(Errno::EINVAL);
    }
    let fd = lookup_at(ctx, g, dirfd, addr, flags & EMPTY != 0, follows(flags))?;
    live(g)?;
    // umode_t: the kernel keeps the low 16 bits.
    let r = sys::chmod_fd(fd.as_fd(), mode & 0xffff, flags & NOFOLLOW);
    ctx.fs.changed();
    r?;
    value(0)
}

/// fchownat (and chown, lchown). Ids are the guest's; one without a
/// mapping is EINVAL, after the lookup as in the kernel.
pub fn fchownat(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    uid: u32,
    gid: u32,
    flags: i32,
) -> Res {
    if flags & !(NOFOLLOW | EMPTY) != 0 {
        return Err(Errno::EINVAL);
    }
    let fd = lookup_at(ctx, g, dirfd, addr, flags & EMPTY != 0, follows(flags))?;
    let uid = ctx.ids.uid_to_host(uid)?;
    let gid = ctx.ids.gid_to_host(gid)?;
    live(g)?;
    let r = sys::chown_fd(fd.as_fd(), uid, gid);
    ctx.fs.changed();
    r?;
    value(0)
}

/// utime(path, struct utimbuf *).
pub fn utime(ctx: &Context, g: &dyn Guest, addr: u64, times: u64) -> Res {
    let t = if times == 0 {
        None
    } else {
        Some(abi::read_utimbuf(g, times)?)
    };
    utimes_common(ctx, g, libc::AT_FDCWD, addr, t, 0)
}

/// futimesat(dirfd, path, struct timeval[2]) (and utimes).
pub fn futimesat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, times: u64) -> Res {
    let t = if times == 0 {
        None
    } else {
        let tv = abi::read_time_pairs(g, times)?;
        if tv.iter().any(|&(_, usec)| !(0..1_000_000).contains(&usec)) {
            return Err(Errno::EINVAL);
        }
        Some(tv.map(|(sec, usec)| (sec, usec * 1000)))
    };
    utimes_common(ctx, g, dirfd, addr, t, 0)
}

/// utimensat(dirfd, path, struct timespec[2], flags) with a path (a NULL
/// path passes the filter as futimens, but is handled here too).
pub fn utimensat(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    times: u64,
    flags: i32,
) -> Res {
    let t = if times == 0 {
        None
    } else {
        let ts = abi::read_time_pairs(g, times)?;
        // Nothing to do, and the path is not even looked at.
        if ts[0].1 == UTIME_OMIT && ts[1].1 == UTIME_OMIT {
            return value(0);
        }
        Some(ts)
    };
    utimes_common(ctx, g, dirfd, addr, t, flags)
}

/// The kernel's `do_utimes`: a NULL path with a real dirfd sets the times
/// of that descriptor; otherwise of the file the path names. The kernel
/// checks the nanoseconds (EINVAL) after the lookup, in our host call.
fn utimes_common(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    t: Option<[(i64, i64); 2]>,
    flags: i32,
) -> Res {
    if addr == 0 && dirfd != libc::AT_FDCWD {
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let fd = if dirfd < 0 {
            return Err(Errno::EBADF);
        } else {
            g.dup_fd(dirfd)?
        };
        live(g)?;
        sys::futimens(fd.as_fd(), t)?;
        return value(0);
    }
    if flags & !(NOFOLLOW | EMPTY) != 0 {
        return Err(Errno::EINVAL);
    }
    let fd = lookup_at(ctx, g, dirfd, addr, flags & EMPTY != 0, follows(flags))?;
    live(g)?;
    sys::utimens_fd(fd.as_fd(), t, false)?;
    value(0)
}

/// truncate(path, length).
pub fn truncate(ctx: &Context, g: &dyn Guest, addr: u64, len: i64) -> Res {
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let fd = lookup_at(ctx, g, libc::AT_FDCWD, addr, false, true)?;
    live(g)?;
    sys::truncate_fd(fd.as_fd(), len)?;
    value(0)
}
