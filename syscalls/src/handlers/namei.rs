//! unlinkat of a directory, rmdir, rename(at)(2), link(at), symlink(at):
//! the calls that act on a name in a directory. (unlink, readlink,
//! mkdir(at) and mknod(at) pass the filter: the policy table says why.)
//!
//! Owns: their argument checks in kernel order. Each resolves the parent
//! directory of the final component (following everything before it) and
//! hands the component, exactly as the guest wrote it (`.`, `..`, `/`,
//! trailing slashes included), to the matching `*at` call, which does not
//! follow a final symlink, so the kernel gives the native answer for every
//! odd case. The lookup that would follow a final component — link
//! with AT_SYMLINK_FOLLOW (or a trailing slash) — resolves the whole path
//! in the view instead. A call the kernel refuses the caller's ids is
//! made again with the caller's CAP_DAC_OVERRIDE and CAP_FOWNER where the
//! directories and names it touches are the guest's (`caller_caps.rs`):
//! a guest root renames and removes in other users' and in sticky
//! directories, as in a container; the resolutions search the guest's
//! directories it may not search by its ids alone the same way.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use vfs::{sys, At, Parent};

use super::caller_caps::{retry_with_caps, Object, REFUSED};
use super::{dir_itself, live, read_path, start, value, Caller, Context, Res};
use crate::guest::{Guest, CAP_DAC_OVERRIDE, CAP_FOWNER};

/// What a change of names may take of the caller's capabilities: write
/// and search in another's directory, and the sticky bit's owner rule
/// (and protected hard links').
const NAME_CAPS: u64 = CAP_DAC_OVERRIDE | CAP_FOWNER;

/// A path argument and the directory it starts from.
struct Operand {
    path: CString,
    start: Option<OwnedFd>,
}

impl Operand {
    /// Read the path at `addr` (ENOENT when empty) and its start (EBADF).
    /// Inlined into each handler (rename, rmdir...) as the compiler did
    /// before the /proc code left this crate and its code units moved:
    /// the counted benches `namei::name_change` pin the cost.
    #[inline(always)]
    fn read(g: &dyn Guest, dirfd: i32, addr: u64) -> Result<Operand, Errno> {
        let path = read_path(g, addr)?;
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let start = start(g, dirfd, path.to_bytes())?;
        Ok(Operand { path, start })
    }

    fn at<'a>(&'a self, caller: &'a Caller<'_>) -> At<'a> {
        At {
            dir: self.start.as_ref().map(AsFd::as_fd),
            caller,
        }
    }

    fn parent<'a>(
        &'a self,
        ctx: &'a Context,
        caller: &'a Caller<'_>,
    ) -> Result<Parent<'a, 'a>, Errno> {
        ctx.fs.parent(&self.at(caller), &self.path)
    }
}

/// unlinkat (and rmdir, with AT_REMOVEDIR). The filter traps only
/// removals of directories: a name that is not one is the kernel's.
pub fn unlinkat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, flags: i32) -> Res {
    if flags & !libc::AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let caller = Caller::new(ctx, g);
    let op = Operand::read(g, dirfd, addr)?;
    let p = op.parent(ctx, &caller)?;
    // Removing a file that is neither a directory nor a symlink leaves
    // every directory path resolving as before: the cache of resolved
    // directories stays (asked only when it holds the parent: a hot
    // create/unlink loop in the sandbox's layer).
    let keeps_dirs = flags & libc::AT_REMOVEDIR == 0
        && p.is_cached()
        && ctx.fs.removing_keeps_dirs(p.dir.as_fd(), p.name);
    live(g)?;
    let dir = p.dir.as_fd();
    let objects = [Object::File(dir), Object::Entry(dir, p.name)];
    let r = retry_with_caps(ctx, g, NAME_CAPS, REFUSED, &objects, &mut || {
        sys::unlinkat(dir, p.name, flags)
    });
    if !keeps_dirs {
        ctx.fs.changed();
    }
    r?;
    value(0)
}

/// renameat2 (and rename, renameat with flags 0).
pub fn renameat2(
    ctx: &Context,
    g: &dyn Guest,
    dirfds: [i32; 2],
    addrs: [u64; 2],
    flags: u32,
) -> Res {
    const NOREPLACE: u32 = libc::RENAME_NOREPLACE;
    const EXCHANGE: u32 = libc::RENAME_EXCHANGE;
    const WHITEOUT: u32 = libc::RENAME_WHITEOUT;
    if flags & !(NOREPLACE | EXCHANGE | WHITEOUT) != 0
        || (flags & (NOREPLACE | WHITEOUT) != 0 && flags & EXCHANGE != 0)
    {
        return Err(Errno::EINVAL);
    }
    let caller = Caller::new(ctx, g);
    let old = Operand::read(g, dirfds[0], addrs[0])?;
    let op = old.parent(ctx, &caller)?;
    let new = Operand::read(g, dirfds[1], addrs[1])?;
    let np = new.parent(ctx, &caller)?;
    live(g)?;
    let (od, nd) = (op.dir.as_fd(), np.dir.as_fd());
    let objects = [
        Object::File(od),
        Object::Entry(od, op.name),
        Object::File(nd),
        Object::Entry(nd, np.name),
    ];
    let r = retry_with_caps(ctx, g, NAME_CAPS, REFUSED, &objects, &mut || {
        sys::renameat2(od, op.name, nd, np.name, flags)
    });
    ctx.fs.changed();
    r?;
    value(0)
}

/// What a hard link is made from.
enum Source<'a> {
    /// A name in a directory, not followed.
    Name(Parent<'a, 'a>),
    /// The file behind a descriptor (followed path, or AT_EMPTY_PATH).
    File(OwnedFd),
}

/// linkat (and link). With AT_EMPTY_PATH the guest's descriptor is linked
/// whoever opened it (the kernel would ask that the caller opened it, and
/// every guest descriptor from a serviced open was opened by a worker).
pub fn linkat(ctx: &Context, g: &dyn Guest, dirfds: [i32; 2], addrs: [u64; 2], flags: i32) -> Res {
    if flags & !(libc::AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let caller = Caller::new(ctx, g);
    let old_path = read_path(g, addrs[0])?;
    // Its error comes after the old name's whole lookup, as in the kernel.
    let new = Operand::read(g, dirfds[1], addrs[1]);
    let old;
    let src = if old_path.is_empty() {
        if flags & libc::AT_EMPTY_PATH == 0 {
            return Err(Errno::ENOENT);
        }
        Source::File(dir_itself(g, dirfds[0])?)
    } else {
        old = Operand {
            start: start(g, dirfds[0], old_path.to_bytes())?,
            path: old_path,
        };
        let follow = flags & libc::AT_SYMLINK_FOLLOW != 0 || old.path.to_bytes().ends_with(b"/");
        if follow {
            Source::File(ctx.fs.lookup(&old.at(&caller), &old.path, true)?)
        } else {
            // The whole old name first: its errors come before the new
            // name's parent lookup's (ENOENT before ENOTDIR). Its parent,
            // then the name in it, not followed: one resolution, not two.
            let p = old.parent(ctx, &caller)?;
            vfs::searched(&caller, p.dir.as_fd(), || {
                sys::fstatat(p.dir.as_fd(), p.name, libc::AT_SYMLINK_NOFOLLOW)
            })?;
            Source::Name(p)
        }
    };
    let new = new?;
    let np = new.parent(ctx, &caller)?;
    live(g)?;
    let nd = np.dir.as_fd();
    let source = match &src {
        Source::Name(p) => Object::Entry(p.dir.as_fd(), p.name),
        Source::File(fd) => Object::File(fd.as_fd()),
    };
    let objects = [source, Object::File(nd)];
    let r = retry_with_caps(ctx, g, NAME_CAPS, REFUSED, &objects, &mut || match &src {
        Source::Name(p) => sys::linkat(p.dir.as_fd(), p.name, nd, np.name, 0),
        Source::File(fd) => sys::link_fd(fd.as_fd(), nd, np.name),
    });
    // The new name may be a symlink's, where one removed unseen stood.
    ctx.fs.names_added();
    r?;
    value(0)
}

/// symlinkat (and symlink).
pub fn symlinkat(ctx: &Context, g: &dyn Guest, target: u64, dirfd: i32, addr: u64) -> Res {
    let target = read_path(g, target)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let caller = Caller::new(ctx, g);
    let op = Operand::read(g, dirfd, addr)?;
    let p = op.parent(ctx, &caller)?;
    live(g)?;
    let dir = p.dir.as_fd();
    let r = retry_with_caps(
        ctx,
        g,
        CAP_DAC_OVERRIDE,
        REFUSED,
        &[Object::File(dir)],
        &mut || sys::symlinkat(&target, dir, p.name),
    );
    // It may stand where a name removed unseen stood (unlink passes).
    ctx.fs.names_added();
    r?;
    value(0)
}
