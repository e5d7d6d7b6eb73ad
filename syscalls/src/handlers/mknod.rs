//! mknod/mknodat of character and block devices: the only mknods the
//! filter traps (FIFOs, sockets, regular files and bad types pass, and
//! the kernel answers them as the guest).
//!
//! A user namespace cannot make a device node: the kernel asks for
//! CAP_MKNOD in the initial one. A container's root may (Docker grants
//! CAP_MKNOD; its devices cgroup then refuses every open), and programs
//! count on it: `tar x` of a root file system, `debootstrap`, package
//! scripts, pjdfstest. The supervisor, when it holds CAP_MKNOD (run as
//! root), makes such a node for the guest where nothing can ever open it
//! as a device: in the sandbox's private file systems (its layer, so its
//! /tmp, and `--tmpfs` mounts), which are mounted `nodev`, so an open of
//! the node is EACCES in the sandbox as everywhere else, while it can be
//! listed, chmod'ed, chowned, linked, renamed and removed. On a file
//! system the host has mounted (`--rw`, a redirected stdio file's), a host
//! process could open the node as the device: there, and everywhere when
//! the supervisor holds no CAP_MKNOD, the worker makes the call itself,
//! with the guest's ids and no capability, and the kernel answers as it
//! would the guest (EPERM, after its own EEXIST, EACCES, EROFS).
//!
//! The node is made by [`DeviceNodes`] (the trap's privileged maker,
//! `sandbox/src/trap/nodes.rs`) with the calling guest's ids as the
//! kernel reports them on the host, so the kernel checks the parent's
//! permissions as the guest's and the node belongs to the guest, with
//! `mode & !umask` (the guest's; the supervisor's is 0). Where the kernel
//! refuses the caller's ids write access to a parent directory of the
//! guest's (owner and group guest ids), the maker makes the node again
//! with the caller's CAP_DAC_OVERRIDE when the caller holds it in its own
//! namespace, as the kernel would grant it there (`caller_caps.rs`).
//!
//! Owns: the argument checks in kernel order and the choice between the
//! maker and the worker. Does not own: which mknods trap (the policy
//! table), how the maker holds its capability.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::statvfs::{fstatvfs, FsFlags};
use vfs::{sys, At};

use super::{host_fs, live, read_path, start, value, Caller, Context, Res};
use crate::guest::Guest;

/// Makes device nodes the guest asked for, with a capability the workers
/// do not hold. Set with [`Context::set_device_nodes`].
pub trait DeviceNodes: Send + Sync + std::fmt::Debug {
    /// `mknodat(dir, name, mode, dev)` acting as guest thread `tid` (its
    /// file-system ids and groups as the host sees them): the kernel's
    /// permission checks and the node's owner are the caller's.
    /// `dir_is_guests`: `dir`'s owner and group are guest ids, so that a
    /// refusal of write access may be overridden with the caller's own
    /// CAP_DAC_OVERRIDE in its namespace, if it holds it.
    fn make(
        &self,
        tid: i32,
        dir: BorrowedFd<'_>,
        name: &CStr,
        node: Node,
        dir_is_guests: bool,
    ) -> Result<(), Errno>;
}

/// A device node to make: its mode (type and permissions, the umask
/// applied) and its device number in the kernel's encoding.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub mode: u32,
    pub dev: u32,
}

/// mknodat (and mknod, from `AT_FDCWD`).
pub fn mknodat(ctx: &Context, g: &dyn Guest, dirfd: i32, addr: u64, mode: u32, dev: u32) -> Res {
    // umode_t: the kernel keeps the low 16 bits; `may_mknod` first.
    let mode = mode & 0xffff;
    match mode & libc::S_IFMT {
        libc::S_IFCHR | libc::S_IFBLK => {}
        libc::S_IFDIR => return Err(Errno::EPERM),
        0 | libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK => {}
        _ => return Err(Errno::EINVAL),
    }
    let path = read_path(g, addr)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let dir = start(g, dirfd, path.to_bytes())?;
    let caller = Caller::new(ctx, g);
    let at = At {
        dir: dir.as_ref().map(AsFd::as_fd),
        caller: &caller,
    };
    let p = ctx.fs.parent(&at, &path)?;
    let device = matches!(mode & libc::S_IFMT, libc::S_IFCHR | libc::S_IFBLK);
    let maker = ctx.nodes.as_ref().filter(|_| device);
    match maker {
        Some(maker) if unopenable_here(ctx, p.dir.as_fd()) => {
            let mode = mode & !(g.umask()? & 0o777);
            let dir_is_guests =
                sys::fstat(p.dir.as_fd()).is_ok_and(|st| ctx.ids.holds_host(st.st_uid, st.st_gid));
            live(g)?;
            let node = Node { mode, dev };
            maker.make(g.tid(), p.dir.as_fd(), p.name, node, dir_is_guests)?;
            value(0)
        }
        _ => {
            let mode = mode & !(g.umask()? & 0o777);
            live(g)?;
            sys::mknodat(p.dir.as_fd(), p.name, mode, dev)?;
            value(0)
        }
    }
}

/// Whether no one can open a device node made in directory `dir` as the
/// device: a private file system of the sandbox's (not the host's, see
/// `host_fs`) mounted `nodev`. The view's root counts as private only
/// when it is `nodev` too (an OCI container's root file system is not).
fn unopenable_here(ctx: &Context, dir: BorrowedFd<'_>) -> bool {
    let Ok(st) = sys::fstat(dir) else {
        return false;
    };
    if host_fs::is_hosts(st.st_dev, ctx.fs.root_dev()) {
        return false;
    }
    fstatvfs(dir).is_ok_and(|v| v.flags().contains(FsFlags::ST_NODEV))
}
