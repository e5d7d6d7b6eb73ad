//! getxattr, setxattr, listxattr, removexattr and their `l` forms (not
//! following a final symlink).
//!
//! Owns: resolving the path in the VFS, whose errors are the call's, and
//! then letting the kernel do the call for the guest (CONTINUE). The
//! kernel, acting as the guest in its own user namespace, is what
//! translates the ids inside POSIX ACLs and file capabilities; a worker
//! in the host's namespace would translate them for the host. The
//! descriptor forms (fgetxattr, ...) pass the filter.
//!
//! A guest that rewrites the path after the resolution reaches another
//! object of its own view with its own credentials, as for opens.

use super::{lookup_at, Context, Res};
use crate::guest::{Guest, Reply};

/// Any of the eight path calls: `follow` is false for the `l` forms.
pub fn by_path(ctx: &Context, g: &dyn Guest, addr: u64, follow: bool) -> Res {
    lookup_at(ctx, g, libc::AT_FDCWD, addr, false, follow)?;
    Ok(Reply::Continue)
}
