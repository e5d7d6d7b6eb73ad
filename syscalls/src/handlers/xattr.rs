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
//!
//! The kernel checks the name (and setxattr's flags and value) before
//! it looks the path up; so do these handlers, so that a call with a
//! bad name on a missing path fails as it would natively (EFAULT or
//! ERANGE, not ENOENT). listxattr looks the path up first.

use nix::errno::Errno;

use super::{lookup_at, Context, Res};
use crate::guest::{Guest, Reply};

/// XATTR_NAME_MAX + 1: the most of a name the kernel copies.
const NAME_ROOM: usize = 256;
/// XATTR_SIZE_MAX.
const VALUE_MAX: u64 = 65536;

/// listxattr, llistxattr: `follow` is false for the `l` forms.
pub fn by_path(ctx: &Context, g: &dyn Guest, addr: u64, follow: bool) -> Res {
    lookup_at(ctx, g, libc::AT_FDCWD, addr, false, follow)?;
    Ok(Reply::Continue)
}

/// getxattr, removexattr and their `l` forms: the name, then the path.
pub fn named(ctx: &Context, g: &dyn Guest, path: u64, name: u64, follow: bool) -> Res {
    check_name(g, name)?;
    by_path(ctx, g, path, follow)
}

/// setxattr, lsetxattr(path, name, value, size, flags): as
/// `setxattr_copy` checks them (flags, name, size, value), then the path.
pub fn set(ctx: &Context, g: &dyn Guest, a: [u64; 6], follow: bool) -> Res {
    let [path, name, value, size, flags, _] = a;
    if flags as u32 & !(libc::XATTR_CREATE | libc::XATTR_REPLACE) as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    check_name(g, name)?;
    if size > VALUE_MAX {
        return Err(Errno::E2BIG);
    }
    if size > 0 {
        let mut v = vec![0u8; size as usize];
        g.read_mem(value, &mut v)?;
    }
    by_path(ctx, g, path, follow)
}

/// An attribute name as `import_xattr_name` takes it: EFAULT when
/// unreadable before its NUL, ERANGE when empty or with no NUL in its
/// first NAME_ROOM bytes (whatever follows them).
fn check_name(g: &dyn Guest, addr: u64) -> Result<(), Errno> {
    match g.read_path(addr) {
        Ok(n) if !n.is_empty() && n.len() < NAME_ROOM => Ok(()),
        Ok(_) | Err(Errno::ENAMETOOLONG) => Err(Errno::ERANGE),
        Err(Errno::EFAULT) => {
            let mut b = [0u8; NAME_ROOM];
            match g.read_mem(addr, &mut b) {
                Ok(()) => Err(Errno::ERANGE),
                Err(_) => Err(Errno::EFAULT),
            }
        }
        Err(e) => Err(e),
    }
}
