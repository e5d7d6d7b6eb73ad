//! This process's own descriptors by name, through its `/proc/self/fd`
//! kept open: what the kernel names one ([`name_of`], a `readlink`) and
//! a fresh open of one ([`reopen`]). Each looks up one name in that
//! directory, where the path `/proc/self/fd/N` walks four names and
//! follows the `self` link first (about 3 µs more of the kernel's per
//! call on these VMs, against 8–13 µs for the whole call). Every served
//! /proc open makes one or both.
//!
//! The directory is of the process that opened it: a child forked after
//! (the engine's init, the id map's holder) would see its parent's
//! descriptors through it, so it is used only by the process that opened
//! it, and any other goes by the path, as does every process when it
//! cannot be opened.
//!
//! Owns: the kept directory and the two calls through it. Does not own:
//! what the names mean (`served.rs`, `fence.rs`) or the descriptors.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

use nix::errno::Errno;

/// What the kernel names `fd` (`readlink` of its `/proc/self/fd` entry),
/// into `buf`; returns the length.
pub fn name_of(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    match own_fd_dir() {
        Some(dir) => vfs::sys::readlinkat(dir, Number::of(fd).as_cstr(), buf),
        None => vfs::sys::fd_path(fd, buf),
    }
}

/// The object behind `fd` opened afresh with `flags` (as
/// `vfs::sys::reopen`: `O_NOFOLLOW` dropped, close-on-exec added).
pub fn reopen(fd: BorrowedFd<'_>, flags: i32) -> Result<OwnedFd, Errno> {
    let Some(dir) = own_fd_dir() else {
        return vfs::sys::reopen(fd, flags);
    };
    let flags = (flags & !libc::O_NOFOLLOW) | libc::O_CLOEXEC;
    vfs::sys::openat(dir, Number::of(fd).as_cstr(), flags, 0)
}

/// Opens this process's `/proc/self/fd` now, which the first [`name_of`]
/// or [`reopen`] would otherwise open (three calls on a served call's time).
pub fn warm() {
    own_fd_dir();
}

/// This process's `/proc/self/fd`, when this process opened it.
fn own_fd_dir() -> Option<BorrowedFd<'static>> {
    static DIR: OnceLock<(u32, Option<OwnedFd>)> = OnceLock::new();
    let (pid, dir) = DIR.get_or_init(|| {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let root = std::fs::File::open("/").ok();
        let dir = root.and_then(|r| vfs::sys::openat(r.as_fd(), c"proc/self/fd", flags, 0).ok());
        (std::process::id(), dir)
    });
    let dir = dir.as_ref()?;
    (*pid == std::process::id()).then(|| dir.as_fd())
}

/// A descriptor's number as a name, built without allocating.
struct Number {
    buf: [u8; 12],
    start: usize,
}

impl Number {
    fn of(fd: BorrowedFd<'_>) -> Number {
        Number::new(fd.as_raw_fd().unsigned_abs())
    }

    fn new(mut n: u32) -> Number {
        let mut buf = [0u8; 12];
        // The last byte stays the NUL.
        let mut start = buf.len() - 1;
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Number { buf, start }
    }

    fn as_cstr(&self) -> &CStr {
        // Digits and one NUL: at most 10 digits for a u32, in 11 bytes.
        CStr::from_bytes_with_nul(&self.buf[self.start..]).unwrap_or(c"-1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_reopens_as_the_path_does() {
        let file = std::fs::File::open("/proc/uptime").unwrap();
        let mut ours = [0u8; 64];
        let mut path = [0u8; 64];
        let n = name_of(file.as_fd(), &mut ours).unwrap();
        let m = vfs::sys::fd_path(file.as_fd(), &mut path).unwrap();
        assert_eq!(&ours[..n], b"/proc/uptime");
        assert_eq!(&ours[..n], &path[..m]);
        assert!(own_fd_dir().is_some());
        let again = reopen(file.as_fd(), libc::O_RDONLY | libc::O_NOFOLLOW).unwrap();
        let (a, b) = (
            vfs::sys::fstat(file.as_fd()),
            vfs::sys::fstat(again.as_fd()),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino));
        assert_ne!(file.as_raw_fd(), again.as_raw_fd());
        let flags = nix::fcntl::fcntl(again.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        for n in [0, 7, 10, 123, 4_000_000, u32::MAX] {
            assert_eq!(
                Number::new(n).as_cstr().to_str(),
                Ok(n.to_string().as_str())
            );
        }
        let name = Number::of(file.as_fd());
        assert_eq!(
            name.as_cstr().to_str(),
            Ok(file.as_raw_fd().to_string().as_str())
        );
    }
}
