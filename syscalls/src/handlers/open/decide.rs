//! Who does an open: the kernel (the handler answers CONTINUE) or the
//! supervisor, which serves a read of a synthetic /proc file and opens
//! what the guest's Landlock domain keeps the kernel from opening
//! (`procfs/fence.rs`), resolving the path as the open would without
//! opening anything for I/O or creating anything.
//!
//! Owns that decision; not the flags (`how.rs`) nor the open that follows
//! (`mod.rs`, `serve.rs`).

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use procfs::Named;

use super::how::{plain_read, read_write, will_create, O_ACCMODE, O_CREAT, O_PATH};
use super::Context;
use crate::handed::HandedFile;

/// Whether the kernel may do an open itself, or the supervisor serves it.
pub(super) enum Decision<'a> {
    /// The kernel opens (or creates) it for the guest: CONTINUE.
    Kernel,
    /// The supervisor opens it; for a plain read, with the object found.
    Serve(Option<ServedRead>),
    /// A file of the guest's stdio, reached outside the view: the
    /// supervisor reopens it within the handed access (`handed.rs`).
    Handed(&'a HandedFile),
}

/// The object a plain read resolved to, which the sandbox serves: a
/// synthetic file's (its kind), or one the guest's domain fences off.
pub(super) struct ServedRead {
    pub(super) probe: vfs::Probe,
    pub(super) synthetic: Option<procfs::ProcFile>,
}

/// Resolves `path` as the open would, without opening anything for I/O
/// or creating anything: whether the kernel may do the open itself, which
/// is always, unless it is a read of a file the sandbox serves itself (a
/// synthetic /proc file) or of one the guest's Landlock domain keeps the
/// kernel from opening (`procfs/fence.rs`: the kernel's own procfs, names made
/// at the root since the start). Resolution errors are the open's, except
/// a missing final name when the open creates it.
pub(super) fn decide<'a>(
    ctx: &'a Context,
    at: &vfs::At<'_>,
    path: &std::ffi::CStr,
    flags: u64,
    res: u64,
    known: vfs::Known,
) -> Result<Decision<'a>, Errno> {
    if plain_read(flags, res) {
        let probe = ctx.fs.probe(at, path, flags as i32, known)?;
        if ctx.handed.any() {
            if let Some(file) = ctx.handed.find(&probe.st, probe.fd.as_fd()) {
                return Ok(Decision::Handed(file));
            }
        }
        let named = Named::new(&probe.fd);
        ready_if_network(ctx, &named, &probe.st);
        let synthetic = ctx.synthetic.which_stat(&named, &probe.st);
        if synthetic.is_none() && !fenced(ctx, &named, &probe.st) {
            ctx.fs.remember_plain(path, &probe);
            return Ok(Decision::Kernel);
        }
        return Ok(Decision::Serve(Some(ServedRead { probe, synthetic })));
    }
    let probe = (flags as i32 & (libc::O_NOFOLLOW | libc::O_DIRECTORY)) | libc::O_PATH;
    let object = match ctx.fs.open(at, path, probe, 0, res) {
        Ok(object) => object,
        Err(Errno::ENOENT) if will_create(flags) => {
            return match (&ctx.fence, read_write(flags)) {
                (Some(fence), true) => Ok(create_read_write(ctx, fence, at, path, res)),
                _ => Ok(Decision::Kernel),
            };
        }
        Err(e) => return Err(e),
    };
    if ctx.handed.any() {
        if let Some(file) = handed(ctx, &object, flags)? {
            return Ok(Decision::Handed(file));
        }
    }
    if read_write(flags) {
        return open_read_write(ctx, &object);
    }
    // Only reads are served (see procfs::substitute): an open that
    // writes is the guest's own, with its own credentials, or nothing.
    let reads = flags & (O_ACCMODE | O_PATH) == libc::O_RDONLY as u64;
    if !reads {
        return Ok(Decision::Kernel);
    }
    let st = vfs::sys::fstat(object.as_fd())?;
    let named = Named::new(&object);
    ready_if_network(ctx, &named, &st);
    if ctx.synthetic.which_stat(&named, &st).is_some() || fenced(ctx, &named, &st) {
        Ok(Decision::Serve(None))
    } else {
        Ok(Decision::Kernel)
    }
}

/// Whether an `O_RDWR` open that creates nothing may be CONTINUEd
/// without a lookup: the root's entries are those granted, and no file
/// of the guest's stdio, which lies beneath no grant, may be its object.
/// (Apart, so that the handler's common paths keep their code.)
#[inline(never)]
pub(super) fn continues_at_once(ctx: &Context) -> bool {
    ctx.continue_plain_opens && root_as_granted(ctx) && !ctx.handed.any()
}

/// The file of the guest's stdio that `object` (resolved for an open
/// that is no plain read) is, if any. Not for `O_CREAT | O_EXCL`, whose
/// answer (EEXIST) stays the kernel's. (Apart, so that the handler's
/// common paths keep their code.)
#[cold]
#[inline(never)]
fn handed<'a>(
    ctx: &'a Context,
    object: &OwnedFd,
    flags: u64,
) -> Result<Option<&'a HandedFile>, Errno> {
    let excl = O_CREAT | libc::O_EXCL as u64;
    if flags & O_PATH != 0 || flags & excl == excl {
        return Ok(None);
    }
    let st = vfs::sys::fstat(object.as_fd())?;
    Ok(ctx.handed.find(&st, object.as_fd()))
}

/// Who opens an existing `object` for reading and writing: the kernel,
/// unless the guest's domain, which checks it as a read, would refuse it
/// (`procfs/fence.rs`); then the supervisor, as the caller.
#[inline(never)]
fn open_read_write(ctx: &Context, object: &OwnedFd) -> Result<Decision<'static>, Errno> {
    Ok(match &ctx.fence {
        Some(fence) if !fence.root_as_granted(&ctx.fs) => {
            let st = vfs::sys::fstat(object.as_fd())?;
            match fence.leaves_read_write(&ctx.fs, object, &st) {
                true => Decision::Kernel,
                false => Decision::Serve(None),
            }
        }
        _ => Decision::Kernel,
    })
}

/// Who makes a file that an `O_RDWR | O_CREAT` open names and that does
/// not exist yet: the kernel where the new file lies beneath a grant of
/// the guest's domain (or on procfs: the kernel's answer), the supervisor,
/// as the caller, where it would not (in the root itself, or in a
/// directory made there since the start). A path whose directory cannot
/// be resolved is served too, for the open's own error.
#[inline(never)]
fn create_read_write(
    ctx: &Context,
    fence: &procfs::Fence,
    at: &vfs::At<'_>,
    path: &std::ffi::CStr,
    res: u64,
) -> Decision<'static> {
    let Some(parent) = parent_of(path.to_bytes()) else {
        // A trailing slash: the kernel's EISDIR.
        return Decision::Kernel;
    };
    let Ok(parent) = std::ffi::CString::new(parent) else {
        return Decision::Serve(None);
    };
    let dir_flags = libc::O_PATH | libc::O_DIRECTORY;
    let granted = ctx
        .fs
        .open(at, &parent, dir_flags, 0, res)
        .and_then(|dir| Ok(fence.grants_beneath(&ctx.fs, &dir, &vfs::sys::fstat(dir.as_fd())?)));
    match granted {
        Ok(true) => Decision::Kernel,
        Ok(false) | Err(_) => Decision::Serve(None),
    }
}

/// The directory part of an open's path: `/` for a name in the root,
/// `.` for a bare name; `None` when the path ends in a slash.
fn parent_of(path: &[u8]) -> Option<&[u8]> {
    if path.last() == Some(&b'/') {
        return None;
    }
    Some(match path.iter().rposition(|&b| b == b'/') {
        Some(0) => b"/",
        Some(i) => &path[..i],
        None => b".",
    })
}

/// Whether the guest has no fence, or its root's entries are still
/// those the fence granted.
fn root_as_granted(ctx: &Context) -> bool {
    ctx.fence
        .as_ref()
        .is_none_or(|f| f.root_as_granted(&ctx.fs))
}

/// Before a read under a process's `/proc/<pid>/net`, where the kernel
/// shows the guest's network namespace: the namespace readied (its
/// loopback up, `UnixSockets::ready_namespace`). A failure leaves the
/// loopback down, not the open refused.
pub(super) fn ready_if_network(ctx: &Context, named: &Named<'_>, st: &libc::stat) {
    if ctx.synthetic.in_net_dir(named, st) {
        let _ = super::super::net::stack(ctx).ready_namespace();
    }
}

/// Whether the guest's Landlock domain keeps the kernel from opening
/// `object` (whose `stat` is `st`) for reading (`procfs/fence.rs`). Such a
/// path, like a synthetic file's, is never remembered as plain.
pub(super) fn fenced(ctx: &Context, object: &Named<'_>, st: &libc::stat) -> bool {
    ctx.fence
        .as_ref()
        .is_some_and(|f| !f.admits(&ctx.fs, object, st))
}

#[cfg(test)]
mod tests {
    use super::super::how::{O_CREAT, O_DIRECTORY};
    use super::*;

    #[test]
    fn parents_of_paths() {
        assert_eq!(parent_of(b"/n3"), Some(&b"/"[..]));
        assert_eq!(parent_of(b"/d/f"), Some(&b"/d"[..]));
        assert_eq!(parent_of(b"f"), Some(&b"."[..]));
        assert_eq!(parent_of(b"a/b/c"), Some(&b"a/b"[..]));
        assert_eq!(parent_of(b"/d/"), None);
        assert!(read_write(libc::O_RDWR as u64 | O_CREAT));
        assert!(!read_write(libc::O_RDWR as u64 | O_DIRECTORY));
        assert!(!read_write(libc::O_RDWR as u64 | O_PATH));
        assert!(!read_write(libc::O_WRONLY as u64));
    }
}
