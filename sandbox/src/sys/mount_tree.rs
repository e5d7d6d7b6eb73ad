//! `open_tree(OPEN_TREE_CLONE)` and `mount_setattr`, which libc and nix
//! do not wrap: a detached copy of a mount, made writable or read-only,
//! that only the holder of its descriptor reaches (the OCI runtime's
//! `update` rewrites a sandbox's read-only /sys through one; the guest's
//! stdio, when a host device, is reopened through a read-only one:
//! `launch/host_stdio.rs`); and a view's `--remount-ro` path, with
//! its submounts, made read-only: `launch/bind.rs`).
//!
//! Owns only these raw syscalls. Each `unsafe` block is a syscall with
//! a NUL-terminated path, integers, or a pointer to a local struct of
//! the size passed.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

/// A detached copy of the mount at `path` (not its submounts; a final
/// symlink is not followed), the copy's root open as a close-on-exec
/// descriptor.
pub fn clone_mount(path: &CStr) -> Result<OwnedFd, Errno> {
    open_tree(libc::AT_FDCWD, path, libc::AT_SYMLINK_NOFOLLOW as u32)
}

/// A detached copy of the mount `file` is on, rooted at `file` itself (a
/// copy of one file when `file` is not a directory).
pub fn clone_mount_of(file: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    open_tree(file.as_raw_fd(), c"", libc::AT_EMPTY_PATH as u32)
}

fn open_tree(dirfd: i32, path: &CStr, flags: u32) -> Result<OwnedFd, Errno> {
    let flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | flags;
    // SAFETY: `path` is a valid NUL-terminated string that outlives the
    // call; the rest are integers. On success the kernel returns a new
    // descriptor that nothing else owns.
    let r = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            dirfd as libc::c_long,
            path.as_ptr(),
            flags as libc::c_long,
        )
    };
    let fd = Errno::result(r)? as i32;
    // SAFETY: `fd` is a fresh descriptor returned by the kernel just now.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Clears the read-only flag of the mount whose root `mount` is (a
/// detached copy of [`clone_mount`]: no other mount changes).
pub fn make_writable(mount: BorrowedFd<'_>) -> Result<(), Errno> {
    set_attr(mount, 0, libc::MOUNT_ATTR_RDONLY)
}

/// Sets the read-only flag of the mount whose root `mount` is (a
/// detached copy: no other mount changes).
pub fn make_read_only(mount: BorrowedFd<'_>) -> Result<(), Errno> {
    set_attr(mount, libc::MOUNT_ATTR_RDONLY, 0)
}

/// Sets the read-only flag of the mount whose root `mount` is and of
/// every mount below it (`AT_RECURSIVE`), attached or not.
pub fn make_tree_read_only(mount: BorrowedFd<'_>) -> Result<(), Errno> {
    set_attr_flags(mount, libc::MOUNT_ATTR_RDONLY, 0, libc::AT_RECURSIVE)
}

fn set_attr(mount: BorrowedFd<'_>, set: u64, clear: u64) -> Result<(), Errno> {
    set_attr_flags(mount, set, clear, 0)
}

fn set_attr_flags(mount: BorrowedFd<'_>, set: u64, clear: u64, flags: i32) -> Result<(), Errno> {
    let attr = libc::mount_attr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the path is a static empty NUL-terminated string; `attr`
    // is a local struct of the size passed, which the kernel only reads.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mount.as_raw_fd() as libc::c_long,
            c"".as_ptr(),
            (libc::AT_EMPTY_PATH | flags) as libc::c_long,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    Errno::result(r).map(drop)
}

/// Makes the detached mount whose root `mount` is an idmapped mount
/// through the maps of the user namespace `userns`, and sets `set`
/// (MOUNT_ATTR_* flags: read-only, nosuid, nodev) on it. EINVAL where the
/// file system (or the kernel) does not support idmapped mounts.
pub fn set_idmap(mount: BorrowedFd<'_>, userns: BorrowedFd<'_>, set: u64) -> Result<(), Errno> {
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_IDMAP | set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.as_raw_fd() as u64,
    };
    // SAFETY: as in set_attr_flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mount.as_raw_fd() as libc::c_long,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_long,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    Errno::result(r).map(drop)
}

/// Attaches the detached mount `mount` on the directory or file `target`
/// (both descriptors: `move_mount` with both empty paths).
pub fn attach(mount: BorrowedFd<'_>, target: BorrowedFd<'_>) -> Result<(), Errno> {
    const F_EMPTY_PATH: libc::c_uint = 0x04;
    const T_EMPTY_PATH: libc::c_uint = 0x40;
    // SAFETY: two descriptors, two static empty NUL-terminated paths and
    // integer flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            mount.as_raw_fd() as libc::c_long,
            c"".as_ptr(),
            target.as_raw_fd() as libc::c_long,
            c"".as_ptr(),
            (F_EMPTY_PATH | T_EMPTY_PATH) as libc::c_long,
        )
    };
    Errno::result(r).map(drop)
}
