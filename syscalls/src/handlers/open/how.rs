//! The open flags as the kernel checks them: what open/openat make of
//! their `int flags, umode_t mode` (`build_open_how`, which masks unknown
//! flags), the checks of `build_open_flags` for all three calls (which
//! reject bad combinations, before the path is read), and what an open's
//! flags ask for (a create, a read and write, a plain read).
//!
//! Owns the flag arithmetic alone; not the open (`mod.rs`), nor who does
//! it (`decide.rs`).

use nix::errno::Errno;
use vfs::resolve::flags as resolve;

pub(super) const O_ACCMODE: u64 = libc::O_ACCMODE as u64;
pub(super) const O_CREAT: u64 = libc::O_CREAT as u64;
pub(super) const O_TRUNC: u64 = libc::O_TRUNC as u64;
pub(super) const O_DIRECTORY: u64 = libc::O_DIRECTORY as u64;
pub(super) const O_CLOEXEC: u64 = libc::O_CLOEXEC as u64;
pub(super) const O_PATH: u64 = libc::O_PATH as u64;
/// `__O_TMPFILE` (O_TMPFILE without its O_DIRECTORY).
pub(super) const O_TMPFILE_BIT: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;

/// The kernel's VALID_OPEN_FLAGS for x86_64.
pub(super) const VALID_OPEN_FLAGS: u64 = (libc::O_ACCMODE
    | libc::O_CREAT
    | libc::O_EXCL
    | libc::O_NOCTTY
    | libc::O_TRUNC
    | libc::O_APPEND
    | libc::O_NONBLOCK
    | libc::O_SYNC
    | libc::O_DSYNC
    | libc::O_ASYNC
    | libc::O_DIRECT
    | vfs::sys::O_LARGEFILE
    | libc::O_DIRECTORY
    | libc::O_NOFOLLOW
    | libc::O_NOATIME
    | libc::O_CLOEXEC
    | libc::O_PATH
    | libc::O_TMPFILE) as u64;

/// Flags O_PATH may come with.
pub(super) const O_PATH_FLAGS: u64 =
    (libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_PATH | libc::O_CLOEXEC) as u64;

/// Sizes of `struct open_how`: the first version, and the largest a
/// caller may pass (the rest must be zero).
pub(super) const OPEN_HOW_SIZE_VER0: u64 = 24;
pub(super) const PAGE_SIZE: u64 = 4096;

pub(super) fn will_create(flags: u64) -> bool {
    flags & (O_CREAT | O_TMPFILE_BIT) != 0
}

/// The kernel's `build_open_how`: what open/openat/creat make of their
/// `int flags, umode_t mode`.
pub(super) fn legacy_how(flags: u32, mode: u32) -> (u64, u64) {
    let mut f = flags as u64 & VALID_OPEN_FLAGS;
    if f & O_PATH != 0 {
        f &= O_PATH_FLAGS;
    }
    let m = if will_create(f) {
        (mode & 0o7777) as u64
    } else {
        0
    };
    (f, m)
}

/// The checks of the kernel's `build_open_flags`.
pub(super) fn check_how(flags: u64, mode: u64, res: u64) -> Result<(), Errno> {
    let f = flags & !O_CLOEXEC;
    if f & !VALID_OPEN_FLAGS != 0 || res & !resolve::VALID != 0 {
        return Err(Errno::EINVAL);
    }
    if res & resolve::BENEATH != 0 && res & resolve::IN_ROOT != 0 {
        return Err(Errno::EINVAL);
    }
    if will_create(f) {
        if mode & !0o7777 != 0 {
            return Err(Errno::EINVAL);
        }
    } else if mode != 0 {
        return Err(Errno::EINVAL);
    }
    if f & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
        return Err(Errno::EINVAL);
    }
    if f & O_TMPFILE_BIT != 0 && (f & O_DIRECTORY == 0 || f & O_ACCMODE == 0) {
        return Err(Errno::EINVAL);
    }
    if f & O_PATH != 0 && f & !O_PATH_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    // RESOLVE_CACHED never tries a create, truncate or tmpfile.
    if res & resolve::CACHED != 0 && f & (O_TRUNC | O_CREAT | O_TMPFILE_BIT) != 0 {
        return Err(Errno::EAGAIN);
    }
    Ok(())
}

/// Whether an open asks for reading and writing a file: `O_RDWR`, no
/// `O_PATH` (the filter's `OPEN_READ_WRITE`, which leaves out
/// `O_DIRECTORY` too: such an open opens no file).
pub(super) fn read_write(flags: u64) -> bool {
    flags & (O_ACCMODE | O_PATH | O_DIRECTORY) == libc::O_RDWR as u64
}

/// Whether an open is a plain read the known plain paths may answer:
/// read-only, creating and truncating nothing, no `O_DIRECTORY` (which
/// the filter passes for open and openat), no `RESOLVE_*` scope.
pub(super) fn plain_read(flags: u64, res: u64) -> bool {
    const NOT_PLAIN: u64 = O_ACCMODE | O_PATH | O_CREAT | O_TMPFILE_BIT | O_TRUNC | O_DIRECTORY;
    flags & NOT_PLAIN == 0 && res == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_checks() {
        let rd = libc::O_RDONLY as u64;
        assert_eq!(check_how(rd, 0, 0), Ok(()));
        assert_eq!(check_how(rd, 0o644, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(O_CREAT, 0o10000, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(O_CREAT | O_DIRECTORY, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(libc::O_TMPFILE as u64, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(libc::O_TMPFILE as u64 | 2, 0o600, 0), Ok(()));
        assert_eq!(check_how(O_PATH | O_TRUNC, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(1 << 40, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(libc::O_WRONLY as u64 | 0o100000, 0, 0), Ok(()));
        assert_eq!(check_how(rd, 0, 0x40), Err(Errno::EINVAL));
        assert_eq!(
            check_how(rd, 0, resolve::BENEATH | resolve::IN_ROOT),
            Err(Errno::EINVAL)
        );
        // Legacy calls mask instead of failing.
        assert_eq!(
            legacy_how(
                0x8000_0000 | libc::O_PATH as u32 | libc::O_TRUNC as u32,
                0o644
            ),
            (O_PATH, 0)
        );
    }
}
