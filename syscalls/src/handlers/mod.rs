//! The handlers of serviced file calls, one module per family in the
//! manner of gVisor's `sys_*.go`, each call entered through [`calls`]
//! (its registers decoded), which the policy table names:
//! [`open`] (open, openat, openat2), [`attr`] (chmod, chown),
//! [`namei`] (rmdir, unlinkat, rename, link, symlink), [`xattr`]
//! (setxattr, lsetxattr, fsetxattr), [`mknod`]
//! (mknod and mknodat of devices),
//! [`notify`] (inotify_add_watch), [`affinity`] (sched_getaffinity),
//! [`sysinfo`] (sysinfo(2)), [`lseek`] (lseek back to 0 of a
//! served /proc file: fresh figures), [`sync`] (sync(2) of the
//! sandbox's own file systems), [`numa`] (NUMA policy as one node,
//! munlock) and [`clock`] (time, gettimeofday, clock_getres, the
//! scheduler's priority range), [`task_stat`] (sched_getscheduler,
//! sched_getparam, getpgid, getsid, times) and [`refused`] (the ioctl
//! requests off the allowlist); the socket calls are [`net`]'s.
//! The /proc files an open may be answered with, and the guest's limits,
//! are [`procfs`]'s.
//!
//! Owns: decoding each call's arguments from registers and guest memory,
//! checking them in the order the kernel does (so errnos match), resolving
//! paths through [`vfs::Resolver`], doing the work on host descriptors, and
//! writing results back. Does not own: which calls are serviced and
//! which handler serves each (the policy table, [`crate::policy::entry`],
//! from which [`dispatch`] finds the handler), the notification loop,
//! the texts of /proc ([`procfs`]), or guest memory access (the
//! [`Guest`] implementation).
//!
//! Rules kept by every handler: guest memory is read once, then
//! [`Guest::still_valid`] is checked before anything with a side effect;
//! a final component is handed to an `*at` call with its parent directory
//! only where that call does not follow a final symlink, and everything
//! that follows is done on an `O_PATH` descriptor of the resolved file;
//! creation modes get the guest's umask (the supervisor's is 0).

mod affinity;
mod attr;
mod caller_caps;
pub(crate) mod calls;
mod clock;
mod host_fs;
mod lseek;
pub(crate) mod mknod;
mod namei;
mod net;
mod notify;
mod numa;
mod open;
mod refused;
mod setid;
mod sync;
mod sysinfo;
mod task_stat;
#[cfg(test)]
mod tests;
mod xattr;

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;

use crate::guest::{Guest, Reply, SyscallArgs};
use crate::Context;

pub use net::adopt::ADOPT_MARK;
pub use net::note::{CONNECT_IN_PROGRESS, NAME_NOTE_MARK, NOTE_LEN};

/// A handler's answer.
pub(crate) type Res = Result<Reply, Errno>;

/// A serviced call's entry point ([`calls`]): decodes the call's
/// registers and does the work. The policy table names one for every
/// number it traps for service ([`crate::policy::entry`]).
pub type Handler = fn(&Context, &dyn Guest, &SyscallArgs) -> Result<Reply, Errno>;

/// Service one trapped call whose policy rule is Service: the handler
/// the policy table names for its number (ENOSYS for a number it names
/// none for, which the filter never traps for service). Safe to call
/// from several threads at once with the same `&Context`.
pub fn dispatch(ctx: &Context, guest: &dyn Guest, call: &SyscallArgs) -> Reply {
    let handler = crate::policy::sysno(call.nr).and_then(|nr| crate::policy::entry(nr).handler());
    match handler {
        Some(handler) => handler(ctx, guest, call).unwrap_or_else(Reply::Error),
        None => Reply::Error(Errno::ENOSYS),
    }
}

// ---- Helpers the families share. ------------------------------------------

/// Adapts the guest to what the resolver asks of a caller: its ids, and
/// the directories its capabilities let it search (`caller_caps.rs`).
pub(crate) struct Caller<'g> {
    ctx: &'g Context,
    g: &'g dyn Guest,
}

impl<'g> Caller<'g> {
    pub(crate) fn new(ctx: &'g Context, g: &'g dyn Guest) -> Caller<'g> {
        Caller { ctx, g }
    }
}

impl vfs::Caller for Caller<'_> {
    fn proc_ids(&self) -> Result<(i32, i32), Errno> {
        self.g.ns_ids()
    }

    fn search_anyway(
        &self,
        dir: std::os::fd::BorrowedFd<'_>,
        step: &mut dyn FnMut() -> Result<(), Errno>,
    ) -> Option<Result<(), Errno>> {
        caller_caps::search_anyway(self.ctx, self.g, dir, step)
    }
}

/// A value answer.
pub(crate) fn value(v: i64) -> Res {
    Ok(Reply::Value(v))
}

/// Read a guest path (EFAULT, ENAMETOOLONG), NUL-terminated for the host.
pub(crate) fn read_path(g: &dyn Guest, addr: u64) -> Result<CString, Errno> {
    let v = g.read_path(addr)?;
    // read_path stops at the first NUL, so there is none inside.
    CString::new(v).map_err(|_| Errno::EINVAL)
}

/// ENOENT unless the notification is still live: checked after reading
/// guest memory and before any side effect.
pub(crate) fn live(g: &dyn Guest) -> Result<(), Errno> {
    if g.still_valid() {
        Ok(())
    } else {
        Err(Errno::ENOENT)
    }
}

/// The directory a path starts from: `None` for absolute paths (the
/// view's root; the dirfd is then ignored, as the kernel ignores it),
/// the guest's cwd for `AT_FDCWD`, else its descriptor `dirfd` (EBADF).
pub(crate) fn start(g: &dyn Guest, dirfd: i32, path: &[u8]) -> Result<Option<OwnedFd>, Errno> {
    if vfs::path::is_abs(path) {
        return Ok(None);
    }
    dir_itself(g, dirfd).map(Some)
}

/// The file `dirfd` names itself (`AT_EMPTY_PATH` with an empty path):
/// the cwd for `AT_FDCWD`.
pub(crate) fn dir_itself(g: &dyn Guest, dirfd: i32) -> Result<OwnedFd, Errno> {
    if dirfd == libc::AT_FDCWD {
        g.cwd()
    } else if dirfd < 0 {
        Err(Errno::EBADF)
    } else {
        g.fd_path(dirfd)
    }
}

/// Resolve the path at `addr` (from `dirfd`) to an `O_PATH` descriptor,
/// for calls that act on the file itself. An empty path names `dirfd`
/// when `empty_ok` (AT_EMPTY_PATH), else is ENOENT. `follow`: follow a
/// final symlink.
pub(crate) fn lookup_at(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    empty_ok: bool,
    follow: bool,
) -> Result<OwnedFd, Errno> {
    let path = read_path(g, addr)?;
    lookup_path(ctx, g, dirfd, &path, empty_ok, follow)
}

/// [`lookup_at`] for a path already read.
pub(crate) fn lookup_path(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    path: &std::ffi::CStr,
    empty_ok: bool,
    follow: bool,
) -> Result<OwnedFd, Errno> {
    if path.is_empty() {
        return if empty_ok {
            dir_itself(g, dirfd)
        } else {
            Err(Errno::ENOENT)
        };
    }
    let dir = start(g, dirfd, path.to_bytes())?;
    let at = vfs::At {
        dir: dir.as_ref().map(AsFd::as_fd),
        caller: &Caller::new(ctx, g),
    };
    ctx.fs.lookup(&at, path, follow)
}
