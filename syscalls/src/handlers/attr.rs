//! chmod/fchmodat/fchmodat2, chown/lchown/fchownat, and fchmod.
//!
//! Owns: the argument checks of these calls in kernel order. Each
//! resolves the path to an `O_PATH` descriptor (following a final symlink
//! unless told not to) and acts on that descriptor, never on a name: the
//! kernel then applies the guest's own permission checks to the worker,
//! which has the guest's ids and no capabilities. Both change who may
//! search a directory, so they start the resolution caches over
//! (`Resolver::changed`). The times, `truncate` and `statfs` by path pass
//! the filter (the policy table says why).
//!
//! No mode of a procfs object is changed: EPERM, as Linux answers for
//! every file of a process. A global file's mode (`/proc/stat`,
//! `/proc/cpuinfo`) is kept by the kernel for every procfs on the host,
//! and its owner may change it without any capability: a guest whose
//! root is the host's (root's sandbox) would otherwise make `/proc/stat`
//! unreadable for every other sandbox and every user of the host, or the
//! host's 0400 `/proc/slabinfo` readable to all. A descriptor's `fchmod`
//! is serviced for that check whatever the mode: one that takes nothing
//! away loosens as much. Nor does a guest give a file of the host's the
//! set-id bits (`setid.rs`).

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::sys;

use super::caller_caps::{retry_with_caps, Object};
use super::{live, lookup_at, setid, value, Context, Res};
use crate::guest::{Guest, CAP_CHOWN, CAP_FOWNER, CAP_FSETID};

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
    refuse_procfs(fd.as_fd())?;
    // umode_t: the kernel keeps the low 16 bits.
    let mode = setid::mode_for(fd.as_fd(), mode & 0xffff, ctx.fs.root_dev());
    live(g)?;
    let r = as_owner(ctx, g, fd.as_fd(), CHMOD_CAPS, &mut || {
        sys::chmod_fd(fd.as_fd(), mode, flags & NOFOLLOW)
    });
    ctx.fs.changed();
    r?;
    value(0)
}

/// fchmod. Made on the guest's own open file, so that what was checked
/// is what changes. A directory's may change who can search it, so the
/// resolution caches start over, as for chmod.
pub fn fchmod(ctx: &Context, g: &dyn Guest, fd: i32, mode: u32) -> Res {
    let file = g.dup_fd(fd)?;
    // fchmod needs an open file: an O_PATH descriptor is EBADF.
    if sys::status_flags(file.as_fd())? & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    refuse_procfs(file.as_fd())?;
    // One status for both questions: the set-id check and whether a
    // directory changed (a chmod changes neither device nor type).
    let st = sys::fstat(file.as_fd()).ok();
    let mode = setid::mode_given(mode & 0xffff, ctx.fs.root_dev(), || st);
    live(g)?;
    let r = as_owner(ctx, g, file.as_fd(), CHMOD_CAPS, &mut || {
        sys::fchmod(file.as_fd(), mode)
    });
    if st.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR) {
        ctx.fs.changed();
    }
    r?;
    value(0)
}

/// What a chmod of another's file takes: CAP_FOWNER, and CAP_FSETID to
/// keep a set-group-ID bit whose group is not the caller's.
const CHMOD_CAPS: u64 = CAP_FOWNER | CAP_FSETID;

/// What a chown of another's file takes: CAP_CHOWN, and CAP_FOWNER where
/// it clears a set-user-ID or set-group-ID bit (the mode change that comes
/// with it is checked as a chmod's), CAP_FSETID to keep a set-group-ID bit.
const CHOWN_CAPS: u64 = CAP_CHOWN | CAP_FOWNER | CAP_FSETID;

/// `act` as the worker, with the caller's ids; where the kernel refuses
/// it (EPERM: not the owner) and the object's owner and group are both
/// guest ids, again with the capabilities of `wanted` the caller holds
/// in its user namespace (its root's CAP_CHOWN, CAP_FOWNER), as the
/// kernel's own check in that namespace would (`capable_wrt_inode_uidgid`,
/// `caller_caps.rs`).
fn as_owner(
    ctx: &Context,
    g: &dyn Guest,
    fd: std::os::fd::BorrowedFd<'_>,
    wanted: u64,
    act: &mut dyn FnMut() -> Result<(), Errno>,
) -> Result<(), Errno> {
    retry_with_caps(ctx, g, wanted, &[Errno::EPERM], &[Object::File(fd)], act)
}

/// EPERM for an object of a procfs (see the module doc).
fn refuse_procfs(fd: std::os::fd::BorrowedFd<'_>) -> Result<(), Errno> {
    match sys::fstatfs(fd) {
        Ok(st) if st.f_type == libc::PROC_SUPER_MAGIC => Err(Errno::EPERM),
        _ => Ok(()),
    }
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
    let r = as_owner(ctx, g, fd.as_fd(), CHOWN_CAPS, &mut || {
        sys::chown_fd(fd.as_fd(), uid, gid)
    });
    ctx.fs.changed();
    r?;
    value(0)
}
