//! Opening: `openat2` with its `struct open_how`, plain `openat`, and
//! reopening the object behind a descriptor through /proc/self/fd.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;

use super::{owned, ProcFd};

/// `struct open_how` (linux/openat2.h), version 0: 24 bytes.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, {flags, mode, resolve})`.
pub fn openat2(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: u64,
    mode: u64,
    resolve: u64,
) -> Result<OwnedFd, Errno> {
    let how = OpenHow {
        flags,
        mode,
        resolve,
    };
    // SAFETY: `path` is NUL-terminated, `how` is a valid open_how that
    // outlives the call, and its size is passed exactly.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(r)
}

/// Plain `openat(dir, path, flags, mode)`: follows every symlink the
/// kernel meets. Only for names the caller has checked (magic links in
/// procfs, `..`).
pub fn openat(dir: BorrowedFd<'_>, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: `path` is NUL-terminated and lives across the call.
    let r = unsafe { libc::openat(dir.as_raw_fd(), path.as_ptr(), flags, mode) };
    owned(r as libc::c_long)
}

/// Opens the object behind `fd` (an `O_PATH` descriptor, say) afresh with
/// `flags`, through `/proc/self/fd/N`: the same inode, with the open's
/// own permission checks, and nothing resolved again. `O_NOFOLLOW` is
/// dropped (it would refuse the magic link itself); ours is close-on-exec.
pub fn reopen(fd: BorrowedFd<'_>, flags: i32) -> Result<OwnedFd, Errno> {
    let p = ProcFd::new(fd);
    let flags = (flags & !libc::O_NOFOLLOW) | libc::O_CLOEXEC;
    // SAFETY: the path is NUL-terminated and lives across the call.
    let r = unsafe { libc::open(p.as_cstr().as_ptr(), flags) };
    owned(r as libc::c_long)
}
