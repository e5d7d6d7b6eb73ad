//! Making and removing names: unlink, rename, hard links (of a name or
//! of a descriptor), device nodes and symlinks.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use nix::errno::Errno;

use super::{check, check_long, ProcFd, CWD};

/// `unlinkat(dir, name, flags)`.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// A host call on two (directory, name) pairs and a flags word, such as
/// `renameat2` and `linkat`: called with the descriptors and names given.
type TwoNamesCall<F> = unsafe extern "C" fn(
    libc::c_int,
    *const libc::c_char,
    libc::c_int,
    *const libc::c_char,
    F,
) -> libc::c_int;

/// `call(olddir, old, newdir, new, flags)` for a call of two
/// (directory, name) pairs ([`TwoNamesCall`]).
fn two_names<F>(
    call: TwoNamesCall<F>,
    olddir: RawFd,
    old: &CStr,
    newdir: RawFd,
    new: &CStr,
    flags: F,
) -> Result<(), Errno> {
    // SAFETY: `call` is a libc wrapper of a call that reads the two names
    // (both NUL-terminated) and nothing else of our memory.
    let r = unsafe { call(olddir, old.as_ptr(), newdir, new.as_ptr(), flags) };
    check(r).map(drop)
}

/// `renameat2(olddir, old, newdir, new, flags)`.
pub fn renameat2(
    olddir: BorrowedFd<'_>,
    old: &CStr,
    newdir: BorrowedFd<'_>,
    new: &CStr,
    flags: u32,
) -> Result<(), Errno> {
    two_names(
        libc::renameat2,
        olddir.as_raw_fd(),
        old,
        newdir.as_raw_fd(),
        new,
        flags,
    )
}

/// `linkat(olddir, old, newdir, new, flags)`.
pub fn linkat(
    olddir: BorrowedFd<'_>,
    old: &CStr,
    newdir: BorrowedFd<'_>,
    new: &CStr,
    flags: i32,
) -> Result<(), Errno> {
    two_names(
        libc::linkat,
        olddir.as_raw_fd(),
        old,
        newdir.as_raw_fd(),
        new,
        flags,
    )
}

/// Hard-link the file behind the `O_PATH` descriptor `fd` as `newdir/new`
/// (`linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW)`, which needs no
/// capability on any kernel).
pub fn link_fd(fd: BorrowedFd<'_>, newdir: BorrowedFd<'_>, new: &CStr) -> Result<(), Errno> {
    let p = ProcFd::new(fd);
    two_names(
        libc::linkat,
        CWD,
        p.as_cstr(),
        newdir.as_raw_fd(),
        new,
        libc::AT_SYMLINK_FOLLOW,
    )
}

/// `mknodat(dir, name, mode, dev)`, the raw call: `dev` as the kernel
/// reads it (`unsigned int`, in its encoding), unlike libc's `dev_t`.
pub fn mknodat(dir: BorrowedFd<'_>, name: &CStr, mode: u32, dev: u32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; the rest are integers.
    let r = unsafe { libc::syscall(libc::SYS_mknodat, dir.as_raw_fd(), name.as_ptr(), mode, dev) };
    check_long(r).map(drop)
}

/// `symlinkat(target, dir, name)`.
pub fn symlinkat(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    // SAFETY: both strings are NUL-terminated.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) }).map(drop)
}
