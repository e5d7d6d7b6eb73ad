//! Changing a file's attributes: its mode, its owner, its extended
//! attributes, and an inotify watch on it, most through an `O_PATH`
//! descriptor.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

use super::{check, check_long, fstat, ProcFd};

/// `fchmod(fd, mode)`.
pub fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    // SAFETY: plain integer arguments.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
}

/// `fchmodat2(fd, "", mode, AT_EMPTY_PATH | flags)`: chmod the file behind
/// an `O_PATH` descriptor. Falls back to `chmod("/proc/self/fd/N")` on
/// kernels before 6.6 (symlinks then answer EOPNOTSUPP, as 6.6 does).
pub fn chmod_fd(fd: BorrowedFd<'_>, mode: u32, flags: i32) -> Result<(), Errno> {
    const EMPTY: &CStr = c"";
    // SAFETY: the path is a NUL-terminated empty string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fchmodat2,
            fd.as_raw_fd(),
            EMPTY.as_ptr(),
            mode,
            flags | libc::AT_EMPTY_PATH,
        )
    };
    match check_long(r) {
        Err(Errno::ENOSYS) => {
            if fstat(fd)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(Errno::EOPNOTSUPP);
            }
            let p = ProcFd::new(fd);
            // SAFETY: the path is NUL-terminated.
            check(unsafe { libc::chmod(p.as_cstr().as_ptr(), mode) }).map(drop)
        }
        r => r.map(drop),
    }
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`; `u32::MAX` leaves an id.
pub fn chown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> Result<(), Errno> {
    // SAFETY: the path is a NUL-terminated empty string.
    let r = unsafe { libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) };
    check(r).map(drop)
}

/// `inotify_add_watch(inotify, "/proc/self/fd/N", mask)`: watch the file
/// behind the `O_PATH` descriptor `target`.
pub fn inotify_watch_fd(
    inotify: BorrowedFd<'_>,
    target: BorrowedFd<'_>,
    mask: u32,
) -> Result<i32, Errno> {
    let p = ProcFd::new(target);
    // SAFETY: the path is NUL-terminated.
    check(unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), p.as_cstr().as_ptr(), mask) })
}

/// `setxattr("/proc/self/fd/N", name, value, flags)`: set an extended
/// attribute of the file behind an `O_PATH` descriptor (the magic link
/// leads to the file itself, a symlink included, which is not followed).
pub fn setxattr_fd(fd: BorrowedFd<'_>, name: &CStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    let p = ProcFd::new(fd);
    // SAFETY: both strings are NUL-terminated; `value` is readable for
    // its length.
    let r = unsafe {
        libc::setxattr(
            p.as_cstr().as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    };
    check(r).map(drop)
}

/// `setxattr("", NULL, NULL, 0, 0)`: its error tells which the kernel
/// checks first, the name (EFAULT: copied before the lookup, as since
/// Linux 6.13) or the path (ENOENT).
pub fn setxattr_probe() -> Errno {
    // SAFETY: the path is a NUL-terminated empty string; the kernel reads
    // nothing through the null name and value (it fails first).
    let r = unsafe { libc::setxattr(c"".as_ptr(), std::ptr::null(), std::ptr::null(), 0, 0) };
    match check(r) {
        Ok(_) => Errno::UnknownErrno,
        Err(e) => e,
    }
}

/// `fsetxattr(fd, name, value, flags)` on an open file.
pub fn fsetxattr(fd: BorrowedFd<'_>, name: &CStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; `value` is readable for its length.
    let r = unsafe {
        libc::fsetxattr(
            fd.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    };
    check(r).map(drop)
}
