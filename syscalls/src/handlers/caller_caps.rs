//! A serviced call retried with the capabilities its caller holds in its
//! own user namespace, as the kernel's checks in that namespace would
//! grant them.
//!
//! The worker makes a serviced call with the caller's ids and no
//! capability, so the kernel applies the permission rules of an ordinary
//! user: a guest root under a range of ids (`--userns-range`) would be
//! refused a rename in a directory of another guest user's, a removal from
//! a sticky directory it does not own, a chown. Natively the kernel grants
//! those to a holder of CAP_DAC_OVERRIDE, CAP_FOWNER or CAP_CHOWN in the
//! caller's namespace, and only for an inode whose owner and group both
//! have a mapping there (`capable_wrt_inode_uidgid`). Here: where the
//! first try fails with a refusal (EACCES, EPERM), the objects the call
//! touches are checked to have a guest owner and group
//! (`IdMap::holds_host`), and the call is made again with those of the
//! capabilities wanted that the caller holds made effective for the
//! worker, for that one call ([`Guest::with_caller_caps`]). The path up to
//! the objects is resolved as before, without capabilities: a directory
//! of another guest user's the caller may not search stays closed to the
//! serviced calls (the kernel would let CAP_DAC_READ_SEARCH through).
//!
//! Between the check and the call a guest thread may replace a checked
//! name; it can put there only a name it could already move, in a
//! directory it may write (a host inode without a guest owner reaches the
//! guest's writable directories only through host mounts shared with
//! other users, and a sticky one keeps its owners' files).
//!
//! Owns this retry; the calls are their families'.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use nix::errno::Errno;
use vfs::sys;

use super::Context;
use crate::guest::Guest;

/// An object a call touches, whose owner and group must be guest ids
/// before the call may use the caller's capabilities.
pub(crate) enum Object<'a> {
    /// The file behind a descriptor (a directory written, a file chowned).
    File(BorrowedFd<'a>),
    /// The name in a directory, not followed; it need not exist (the
    /// new name of a rename).
    Entry(BorrowedFd<'a>, &'a CStr),
}

impl Object<'_> {
    /// Whether the object is the guest's: its owner and group both guest
    /// ids (an absent entry is: nothing of another's is touched).
    fn is_guests(&self, ctx: &Context) -> bool {
        let st = match self {
            Object::File(fd) => sys::fstat(*fd),
            Object::Entry(dir, name) => match sys::fstatat(*dir, name, libc::AT_SYMLINK_NOFOLLOW) {
                Err(Errno::ENOENT) => return true,
                r => r,
            },
        };
        st.is_ok_and(|st| ctx.ids.holds_host(st.st_uid, st.st_gid))
    }
}

/// `act`, with the caller's ids; where the kernel refuses it with one of
/// `refusals` and every one of `objects` is the guest's, again with the
/// capabilities of `wanted` (bit N: capability N) the caller holds in its
/// user namespace. A caller that holds none of them, or an object that is
/// not the guest's, gets the first answer. Inlined: a call the kernel
/// allows costs what it cost before the retry existed (the counted
/// benches' rename and rmdir); the retry is out of line.
#[inline(always)]
pub(crate) fn retry_with_caps<F: FnMut() -> Result<(), Errno>>(
    ctx: &Context,
    g: &dyn Guest,
    wanted: u64,
    refusals: &[Errno],
    objects: &[Object<'_>],
    mut act: F,
) -> Result<(), Errno> {
    match act() {
        Err(e) if refusals.contains(&e) => retry_refused(ctx, g, wanted, e, objects, &mut act),
        r => r,
    }
}

/// The retry of [`retry_with_caps`], after the refusal `first`.
#[cold]
#[inline(never)]
fn retry_refused(
    ctx: &Context,
    g: &dyn Guest,
    wanted: u64,
    first: Errno,
    objects: &[Object<'_>],
    act: &mut dyn FnMut() -> Result<(), Errno>,
) -> Result<(), Errno> {
    if !objects.iter().all(|o| o.is_guests(ctx)) {
        return Err(first);
    }
    let mut ran = false;
    let r = g.with_caller_caps(wanted, &mut || {
        ran = true;
        act()
    });
    if ran {
        r
    } else {
        Err(first)
    }
}

/// The refusals a missing capability gives: EACCES (search, write) and
/// EPERM (sticky directories, owners).
pub(crate) const REFUSED: &[Errno] = &[Errno::EACCES, Errno::EPERM];
