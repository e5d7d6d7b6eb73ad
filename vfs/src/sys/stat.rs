//! Reading what a file is: `fstat`, `fstatat`, `fstatfs`, its status
//! flags, a symlink's target and the name the kernel prints for a
//! descriptor.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

use super::{check, ProcFd};

/// `fstat(fd)` (works on `O_PATH` descriptors, symlinks included).
pub fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `st` is writable memory of the right size for the kernel.
    check(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// `fstatat(dir, name, flags)`.
pub fn fstatat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `name` is NUL-terminated; `st` is writable and large enough.
    check(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// `fstatfs(fd)` (works on `O_PATH` descriptors).
pub fn fstatfs(fd: BorrowedFd<'_>) -> Result<libc::statfs, Errno> {
    let mut st = MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `st` is writable memory of the right size.
    check(unsafe { libc::fstatfs(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// The file status flags of the open file behind `fd` (`F_GETFL`).
pub fn status_flags(fd: BorrowedFd<'_>) -> Result<i32, Errno> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })
}

/// `readlinkat(dir, name)` into `buf`; returns the length written (the
/// kernel truncates silently to `buf.len()`).
pub fn readlinkat(dir: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `name` is NUL-terminated; `buf` is writable for its length.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    Errno::result(n).map(|n| n as usize)
}

/// What the kernel prints for the file behind `fd`
/// (`readlink("/proc/self/fd/N")`), into `buf`; returns the length.
pub fn fd_path(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    let p = ProcFd::new(fd);
    // SAFETY: the path is NUL-terminated; `buf` is writable for its length.
    let n = unsafe { libc::readlink(p.as_cstr().as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    Errno::result(n).map(|n| n as usize)
}
