//! chmod/fchmodat/fchmodat2, chown/lchown/fchownat.
//!
//! Owns: the argument checks of these calls in kernel order. Each
//! resolves the path to an `O_PATH` descriptor (following a final symlink
//! unless told not to) and acts on that descriptor, never on a name: the
//! kernel then applies the guest's own permission checks to the worker,
//! which has the guest's ids and no capabilities. Both change who may
//! search a directory, so they start the resolution caches over
//! (`Resolver::changed`). The times, `truncate` and `statfs` by path pass
//! the filter (the policy table says why).

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::{live, lookup_at, value, Context, Res};
use crate::guest::Guest;

const NOFOLLOW: i32 = libc::AT_SYMLINK_NOFOLLOW;
const EMPTY: i32 = libc::AT_EMPTY_PATH;

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
