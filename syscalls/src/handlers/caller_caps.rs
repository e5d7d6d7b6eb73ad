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
//! worker, for that one call ([`Guest::with_caller_caps`]).
//!
//! The path up to the objects is searched the same way ([`search_anyway`],
//! vfs's `Caller::search_anyway`): where the kernel refuses the caller's
//! ids the search of a directory (EACCES), the resolver walks the path one
//! component at a time and makes that step again with the caller's
//! CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH (the kernel grants a
//! directory's search to either), only when that directory's owner and
//! group are guest ids. Each step is one name looked up in that one
//! directory without following it (an `O_PATH` open, a `stat`, a
//! `readlink`, `..` below the view's root), so the search of that
//! directory is all the capability grants. A directory of another guest
//! user's, or a mode-000 one, opens to a guest root as in a container; a
//! host directory without a guest owner, and every directory for a
//! caller without the capability (another guest user, a root that
//! dropped it, a sandbox with one id), stays closed. An entry's owner
//! ([`Object::Entry`]) is read with its directory searched the same way,
//! so a call's retry reaches only directories the caller may search by
//! its ids or by its capability. (The guest's set never holds
//! CAP_DAC_READ_SEARCH, and the workers never hold it: CAP_DAC_OVERRIDE
//! is the one that searches.) No resolved directory is kept across calls
//! where capabilities are lent (a range of ids: `Context::set_ids`), so
//! none reached this way serves a later caller.
//!
//! Between the check and the call a guest thread may replace a checked
//! name; it can put there only a name it could already move, in a
//! directory it may write (a host inode without a guest owner reaches the
//! guest's writable directories only through host mounts shared with
//! other users, and a sticky one keeps its owners' files). A checked
//! directory is held open: it stays the inode checked, and only a chown
//! changes its owner, which the guest can make only to guest ids.
//!
//! Owns this retry and the search; the calls are their families', the
//! walk is vfs's.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use nix::errno::Errno;
use vfs::sys;

use super::{Caller, Context};
use crate::guest::{Guest, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH};

/// What the search of a directory may take of the caller's capabilities.
const SEARCH_CAPS: u64 = CAP_DAC_OVERRIDE | CAP_DAC_READ_SEARCH;

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
    /// ids (an absent entry is: nothing of another's is touched). An
    /// entry's directory is searched as the caller's capabilities allow
    /// ([`search_anyway`]); one it may not search holds nothing of its.
    fn is_guests(&self, ctx: &Context, g: &dyn Guest) -> bool {
        let st = match self {
            Object::File(fd) => sys::fstat(*fd),
            Object::Entry(dir, name) => {
                let stat = || sys::fstatat(*dir, name, libc::AT_SYMLINK_NOFOLLOW);
                match vfs::searched(&Caller::new(ctx, g), *dir, stat) {
                    Err(Errno::ENOENT) => return true,
                    r => r,
                }
            }
        };
        st.is_ok_and(|st| ctx.ids.holds_host(st.st_uid, st.st_gid))
    }
}

/// `step`, one lookup in directory `dir` that the kernel refused the
/// caller's ids, again with the caller's capabilities to search it where
/// `dir`'s owner and group are guest ids and the caller holds one; `None`
/// (the refusal stands) otherwise. vfs's `Caller::search_anyway`.
pub(crate) fn search_anyway(
    ctx: &Context,
    g: &dyn Guest,
    dir: BorrowedFd<'_>,
    step: &mut dyn FnMut() -> Result<(), Errno>,
) -> Option<Result<(), Errno>> {
    if !Object::File(dir).is_guests(ctx, g) {
        return None;
    }
    let mut ran = false;
    let r = g.with_caller_caps(SEARCH_CAPS, &mut || {
        ran = true;
        step()
    });
    ran.then_some(r)
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
    if !objects.iter().all(|o| o.is_guests(ctx, g)) {
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
