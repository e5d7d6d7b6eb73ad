//! setxattr, lsetxattr and fsetxattr: extended attributes written by the
//! supervisor as the guest, so that no file capability the host honours
//! is made (the reads, lists and removals pass the filter).
//!
//! Why serviced: a guest root under a range of ids holds CAP_SETFCAP in
//! its namespace, and the kernel writes its `security.capability` as a
//! namespaced (v3) capability tied to the namespace's root, which the
//! host ignores — except through an idmapped mount (`--rw`, `--ro`, the
//! working directory), whose idmap makes the guest's root the host
//! directory's owner: for root's directory the stored capability is host
//! root's, effective for every host user who runs the file. The name is
//! in guest memory, which the filter cannot read, and a check followed
//! by CONTINUE is one a racing thread could change: so every write is
//! made here.
//!
//! What is written, in the kernel's order (flags EINVAL, the name ERANGE
//! or EFAULT, the value E2BIG or EFAULT, then the lookup or the
//! descriptor; before Linux 6.13 the lookup or descriptor first, which
//! one probe of the host's kernel tells, [`copies_first`]): the object is
//! resolved in the view and the worker, with the caller's ids, makes the
//! call on it. `security.capability` (a valid v2 or v3 header, else
//! EINVAL) is written as v3 with its root id the host id of the guest's
//! root (or, for a v3 value, of the guest id it names: EINVAL when that id
//! has no mapping), with the caller's CAP_SETFCAP, and only on the
//! sandbox's own file systems: on the host's, EPERM (as `setid.rs` keeps
//! set-id bits off them). POSIX ACLs (`system.posix_acl_access`,
//! `..._default`) have their user and group ids translated from the
//! guest's to the host's (EINVAL for an id without a mapping), as the
//! kernel translates a caller's in its namespace. `trusted.*` and the
//! other `security.*` names need CAP_SYS_ADMIN (of the host's namespace,
//! or of the file system's), which the guest's root never holds and the
//! worker may pass (the owner of a user namespace passes every check in
//! it): EPERM here, after the lookup (EROFS on a read-only mount), as the
//! kernel answers a user namespace's root. Other names go as they are
//! (`user.*` needs the permission to write the file). A refusal is made
//! again with the caller's CAP_DAC_OVERRIDE, CAP_FOWNER (and CAP_SETFCAP)
//! on an object the guest's ids own (`caller_caps.rs`).
//!
//! Owns: these calls' checks and the conversions. Does not own: which
//! file systems are the host's (`host_fs`), the capability lending.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::statvfs::{fstatvfs, FsFlags};
use vfs::{sys, IdMap};

use super::caller_caps::{retry_with_caps, Object, REFUSED};
use super::{host_fs, live, lookup_at, value, Context, Res};
use crate::guest::{Guest, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_SETFCAP};

/// The longest name (linux/limits.h XATTR_NAME_MAX).
const NAME_MAX: usize = 255;
/// The largest value (XATTR_SIZE_MAX).
const SIZE_MAX: u64 = 65536;

const CAPS: &[u8] = b"security.capability";
const ACL_ACCESS: &[u8] = b"system.posix_acl_access";
const ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

/// setxattr (`follow`) and lsetxattr.
pub fn setxattr(ctx: &Context, g: &dyn Guest, args: [u64; 4], flags: i32, follow: bool) -> Res {
    let [path, name, val, size] = args;
    let early = copies_first()
        .then(|| copy(g, name, val, size, flags))
        .transpose()?;
    let fd = lookup_at(ctx, g, libc::AT_FDCWD, path, false, follow)?;
    let (name, val) = match early {
        Some(c) => c,
        None => copy(g, name, val, size, flags)?,
    };
    write(ctx, g, fd.as_fd(), &name, &val, &mut |n, v| {
        sys::setxattr_fd(fd.as_fd(), n, v, flags)
    })
}

/// fsetxattr: on the guest's own open file (an `O_PATH` one is EBADF).
pub fn fsetxattr(ctx: &Context, g: &dyn Guest, fd: i32, args: [u64; 3], flags: i32) -> Res {
    let [name, val, size] = args;
    let early = copies_first()
        .then(|| copy(g, name, val, size, flags))
        .transpose()?;
    let file = g.dup_fd(fd)?;
    if sys::status_flags(file.as_fd())? & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let (name, val) = match early {
        Some(c) => c,
        None => copy(g, name, val, size, flags)?,
    };
    write(ctx, g, file.as_fd(), &name, &val, &mut |n, v| {
        sys::fsetxattr(file.as_fd(), n, v, flags)
    })
}

/// Whether the host's kernel copies the name and value before it looks
/// the object up (Linux 6.13 on), asked once.
fn copies_first() -> bool {
    static FIRST: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FIRST.get_or_init(|| sys::setxattr_probe() == Errno::EFAULT)
}

/// The kernel's `setxattr_copy`: the flags, the name and the value.
fn copy(
    g: &dyn Guest,
    name: u64,
    val: u64,
    size: u64,
    flags: i32,
) -> Result<(CString, Vec<u8>), Errno> {
    if flags & !(libc::XATTR_CREATE | libc::XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = match g.read_path(name) {
        Ok(n) if n.is_empty() || n.len() > NAME_MAX => return Err(Errno::ERANGE),
        Ok(n) => n,
        Err(Errno::ENAMETOOLONG) => return Err(Errno::ERANGE),
        Err(e) => return Err(e),
    };
    let name = CString::new(name).map_err(|_| Errno::EINVAL)?;
    if size > SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let mut v = vec![0u8; size as usize];
    if size > 0 {
        g.read_mem(val, &mut v)?;
    }
    Ok((name, v))
}

/// The host call that writes one attribute: `(name, value)`.
type SetAttr<'a> = dyn FnMut(&CStr, &[u8]) -> Result<(), Errno> + 'a;

/// Writes one attribute of `obj` with `act(name, value)`, converted as
/// the module doc says.
fn write(
    ctx: &Context,
    g: &dyn Guest,
    obj: BorrowedFd<'_>,
    name: &CStr,
    val: &[u8],
    act: &mut SetAttr<'_>,
) -> Res {
    let n = name.to_bytes();
    if n.starts_with(b"trusted.") || (n.starts_with(b"security.") && n != CAPS) {
        // CAP_SYS_ADMIN, which the guest never holds; the worker would
        // pass the check on the sandbox's own file systems, whose user
        // namespace is the guest's and the supervisor its owner.
        let read_only = fstatvfs(obj).is_ok_and(|v| v.flags().contains(FsFlags::ST_RDONLY));
        return Err(if read_only {
            Errno::EROFS
        } else {
            Errno::EPERM
        });
    }
    let (val, wanted) = if n == CAPS {
        let v = namespaced_caps(&ctx.ids, val)?;
        let st = sys::fstat(obj)?;
        if host_fs::is_hosts(st.st_dev, ctx.fs.root_dev()) {
            return Err(Errno::EPERM);
        }
        (v, CAP_SETFCAP)
    } else if n == ACL_ACCESS || n == ACL_DEFAULT {
        (host_acl(&ctx.ids, val)?, CAP_FOWNER)
    } else {
        (val.to_vec(), CAP_DAC_OVERRIDE | CAP_FOWNER)
    };
    live(g)?;
    retry_with_caps(ctx, g, wanted, REFUSED, &[Object::File(obj)], &mut || {
        act(name, &val)
    })?;
    value(0)
}

/// `struct vfs_cap_data` sizes and revisions (linux/capability.h).
const CAPS_V2_SIZE: usize = 20;
const CAPS_V3_SIZE: usize = 24;
const REVISION_MASK: u32 = 0xff00_0000;
const REVISION_2: u32 = 0x0200_0000;
const REVISION_3: u32 = 0x0300_0000;
const FLAGS_EFFECTIVE: u32 = 0x1;

/// A file capability as v3 with the host id of its root: the guest's
/// root for v2, the guest id it names for v3 (the kernel's
/// `cap_convert_nscap` for a caller in the guest's namespace).
fn namespaced_caps(ids: &IdMap, val: &[u8]) -> Result<Vec<u8>, Errno> {
    let word = |at: usize| -> Result<u32, Errno> {
        let b = val.get(at..at + 4).ok_or(Errno::EINVAL)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let magic = word(0)?;
    let guest_root = match (val.len(), magic & REVISION_MASK) {
        (CAPS_V2_SIZE, REVISION_2) => 0,
        (CAPS_V3_SIZE, REVISION_3) => word(20)?,
        _ => return Err(Errno::EINVAL),
    };
    let root = ids.uid_to_host(guest_root)?;
    let mut out = Vec::with_capacity(CAPS_V3_SIZE);
    out.extend_from_slice(&(REVISION_3 | (magic & FLAGS_EFFECTIVE)).to_le_bytes());
    out.extend_from_slice(&val[4..20]);
    out.extend_from_slice(&root.to_le_bytes());
    Ok(out)
}

/// POSIX ACL xattr layout (linux/posix_acl_xattr.h): a version word, then
/// entries of tag (u16), permissions (u16) and id (u32).
const ACL_VERSION: u32 = 2;
const ACL_ENTRY: usize = 8;
const ACL_USER: u16 = 0x02;
const ACL_GROUP: u16 = 0x08;

/// An ACL with its named users' and groups' ids the host's.
fn host_acl(ids: &IdMap, val: &[u8]) -> Result<Vec<u8>, Errno> {
    let head = val.get(..4).ok_or(Errno::EINVAL)?;
    if u32::from_le_bytes([head[0], head[1], head[2], head[3]]) != ACL_VERSION
        || !(val.len() - 4).is_multiple_of(ACL_ENTRY)
    {
        return Err(Errno::EINVAL);
    }
    let mut out = val.to_vec();
    for e in out[4..].chunks_exact_mut(ACL_ENTRY) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let id = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        let host = match tag {
            ACL_USER => ids.uid_to_host(id)?,
            ACL_GROUP => ids.gid_to_host(id)?,
            _ => continue,
        };
        e[4..8].copy_from_slice(&host.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> IdMap {
        IdMap::shifted(200_000, 65536)
    }

    #[test]
    fn acl_ids_become_the_hosts() {
        assert_eq!(host_acl(&ids(), &[]), Err(Errno::EINVAL));
        assert_eq!(host_acl(&ids(), &[3, 0, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(host_acl(&ids(), &[2, 0, 0, 0, 1]), Err(Errno::EINVAL));
        let mut acl = vec![2, 0, 0, 0];
        acl.extend_from_slice(&[1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff]); // USER_OBJ
        acl.extend_from_slice(&[2, 0, 4, 0, 0xe8, 3, 0, 0]); // USER 1000
        acl.extend_from_slice(&[8, 0, 4, 0, 0, 0, 0, 0]); // GROUP 0
        let out = host_acl(&ids(), &acl).unwrap();
        assert_eq!(&out[4..12], &acl[4..12]);
        assert_eq!(&out[16..20], &201_000u32.to_le_bytes());
        assert_eq!(&out[24..28], &200_000u32.to_le_bytes());
        acl.extend_from_slice(&[2, 0, 4, 0, 0, 0, 1, 0]); // USER 65536
        assert_eq!(host_acl(&ids(), &acl), Err(Errno::EINVAL));
    }

    #[test]
    fn file_capabilities_become_v3_of_the_guests_root() {
        let mut v2 = (REVISION_2 | FLAGS_EFFECTIVE).to_le_bytes().to_vec();
        v2.extend_from_slice(&[0, 0x20, 0, 0, 0, 0, 0, 0]);
        v2.extend_from_slice(&[0; 8]);
        let v3 = namespaced_caps(&ids(), &v2).unwrap();
        assert_eq!(v3.len(), CAPS_V3_SIZE);
        assert_eq!(&v3[..4], &(REVISION_3 | FLAGS_EFFECTIVE).to_le_bytes());
        assert_eq!(&v3[4..20], &v2[4..20]);
        assert_eq!(&v3[20..], &200_000u32.to_le_bytes());
        let mut named = v3[..20].to_vec();
        named.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            &namespaced_caps(&ids(), &named).unwrap()[20..],
            &200_007u32.to_le_bytes()
        );
        named[20..].copy_from_slice(&70_000u32.to_le_bytes());
        assert_eq!(namespaced_caps(&ids(), &named), Err(Errno::EINVAL));
        assert_eq!(namespaced_caps(&ids(), &v2[..12]), Err(Errno::EINVAL));
        assert_eq!(namespaced_caps(&ids(), &v3[..20]), Err(Errno::EINVAL));
    }
}
