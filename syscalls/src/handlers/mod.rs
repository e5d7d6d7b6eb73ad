//! The handlers of serviced file calls, one module per family in the
//! manner of gVisor's `sys_*.go`, each call entered through [`calls`]
//! (its registers decoded), which the policy table names:
//! [`open`] (open, openat, openat2), [`attr`] (chmod, chown),
//! [`namei`] (rmdir, unlinkat, rename, link, symlink),
//! [`notify`] (inotify_add_watch) and [`sysinfo`]
//! (the guest's limits and the /proc files it serves rewritten, with the
//! texts of `limitfiles`, `mounttab`, `procstat`, `procfiles`, `procsys`
//! and `masked`, served by `sealed`; sched_getaffinity, sysinfo(2)) and
//! [`rewind`] (lseek back to 0 of a served file: fresh figures).
//!
//! Owns: decoding each call's arguments from registers and guest memory,
//! checking them in the order the kernel does (so errnos match), resolving
//! paths through [`vfs::Resolver`], doing the work on host descriptors, and
//! writing results back. Does not own: which calls are serviced and
//! which handler serves each (the policy table, [`crate::policy::entry`],
//! from which [`dispatch`] finds the handler), the notification loop, or guest memory access (the
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
pub(crate) mod calls;
mod covers;
pub use covers::{covered_when_fenced, proc_covers, Limited};
mod fence;
mod host_fs;
pub use fence::granted as fence_grants;
mod limitfiles;
mod masked;
mod mounttab;
mod namei;
mod net;
mod notify;
mod open;
mod procdir;
mod procfiles;
mod procnet;
mod procself;
mod procstat;
pub use procstat::{clock_origin_secs, start_secs, CLOCK_LEAD_SECS};
mod procsys;
mod proctext;
mod rewind;
mod sealed;
mod setid;
mod sysinfo;
mod sysinfo_call;
#[cfg(test)]
mod tests;

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use vfs::{IdMap, Resolver};

use crate::guest::{Guest, Reply, SyscallArgs};

pub use sysinfo::GuestLimits;

/// What the handlers share: the view's resolver, the id mapping, and
/// what the guest is told of its limits. Immutable once it serves, so
/// `&Context` serves many workers.
#[derive(Debug)]
pub struct Context {
    pub(crate) fs: Resolver,
    pub(crate) ids: IdMap,
    pub(crate) limits: GuestLimits,
    /// The view's /proc files rewritten under [`Context::limits`].
    pub(crate) synthetic: sysinfo::Synthetic,
    /// Whether an open that creates nothing and names no synthetic file
    /// is answered CONTINUE (the kernel opens the object the VFS
    /// resolved) rather than with a descriptor of ours (ADDFD). See
    /// `open.rs`; tests of the VFS's resolution turn it off.
    pub(crate) continue_plain_opens: bool,
    /// What the guest's Landlock domain lets the kernel open for reading
    /// (`fence.rs`); `None` when the guest has no such domain.
    pub(crate) fence: Option<fence::Fence>,
    /// The sandbox's sockets (`net/`).
    pub(crate) net: std::sync::Arc<netstack::Stack>,
}

impl Context {
    /// `root`: an `O_PATH` descriptor of the guest's root
    /// (`/proc/<init>/root`). `host_uid`/`host_gid`: the invoker's ids,
    /// which are also the guest's.
    pub fn new(root: OwnedFd, host_uid: u32, host_gid: u32) -> Context {
        let fs = Resolver::new(root);
        Context {
            synthetic: sysinfo::Synthetic::always(&fs),
            fs,
            ids: IdMap::new(host_uid, host_gid),
            limits: GuestLimits::default(),
            continue_plain_opens: true,
            fence: None,
            net: std::sync::Arc::default(),
        }
    }

    /// The guest's id mapping ([`Context::new`]: the invoker's ids alone).
    /// With more than one id, no resolved directory is kept across calls
    /// ([`vfs::Resolver::keep_no_dirs`] says why).
    pub fn set_ids(&mut self, ids: IdMap) {
        if ids.count() > 1 {
            self.fs.keep_no_dirs();
        }
        self.ids = ids;
    }

    /// The guest's id mapping.
    pub fn ids(&self) -> &IdMap {
        &self.ids
    }

    /// The refused connections, for the report.
    pub fn net_denials(&self) -> std::sync::Arc<netstack::DenialLog> {
        self.net.denials()
    }

    /// Plugs in the way out of the sandbox (the default refuses all).
    /// Call it before [`Context::net`] hands the stack out; later it is
    /// EBUSY.
    pub fn set_egress(
        &mut self,
        egress: Box<dyn netstack::Egress>,
    ) -> Result<(), nix::errno::Errno> {
        let net = std::sync::Arc::get_mut(&mut self.net).ok_or(nix::errno::Errno::EBUSY)?;
        net.set_egress(egress);
        Ok(())
    }

    /// Makes the netstack's host sockets from `sockets` (the sandbox's
    /// network namespace); same rule as [`Context::set_egress`].
    pub fn set_sockets(
        &mut self,
        sockets: std::sync::Arc<dyn netstack::UnixSockets>,
    ) -> Result<(), nix::errno::Errno> {
        let net = std::sync::Arc::get_mut(&mut self.net).ok_or(nix::errno::Errno::EBUSY)?;
        net.set_sockets(sockets);
        Ok(())
    }

    /// The sandbox's socket layer, for what serves it from outside the
    /// trap: the DNS stub's sockets, `--publish` connections.
    pub fn net(&self) -> std::sync::Arc<netstack::Stack> {
        self.net.clone()
    }

    /// The guest is in a Landlock domain that fences its reads
    /// (`fence.rs`): read opens the kernel would refuse are served. Call
    /// it before the guest runs, while the view's root holds what init
    /// granted.
    pub fn fence_reads(&mut self) -> Result<(), nix::errno::Errno> {
        self.fence = Some(fence::Fence::new(&self.fs)?);
        Ok(())
    }

    /// Always answer opens with a descriptor the supervisor opened
    /// (never CONTINUE): for tests that check what the VFS resolves.
    pub fn install_every_open(&mut self) {
        self.continue_plain_opens = false;
    }

    /// [`Context::new`] with another policy for the cache of resolved
    /// directories (the default caches the sandbox's own tmpfs
    /// and overlay layers; tests on a host disk use `All`).
    pub fn with_cache_policy(
        root: OwnedFd,
        host_uid: u32,
        host_gid: u32,
        policy: vfs::CachePolicy,
    ) -> Context {
        Context {
            fs: Resolver::with_cache(root, policy),
            ids: IdMap::new(host_uid, host_gid),
            limits: GuestLimits::default(),
            synthetic: Default::default(),
            continue_plain_opens: true,
            fence: None,
            net: std::sync::Arc::default(),
        }
    }
}

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

/// Adapts the guest to what the resolver asks of a caller.
pub(crate) struct Caller<'g>(pub &'g dyn Guest);

impl vfs::Caller for Caller<'_> {
    fn proc_ids(&self) -> Result<(i32, i32), Errno> {
        self.0.ns_ids()
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
        caller: &Caller(g),
    };
    ctx.fs.lookup(&at, path, follow)
}
