//! Thin, exact wrappers over the host calls the VFS and the handlers make.
//!
//! Owns: every `unsafe` block of this crate and of the file handlers in
//! `syscalls` (which call these instead of libc). Each wrapper takes
//! borrowed descriptors and `&CStr` names, passes the flags it is given
//! unchanged, and returns `Errno` on failure. Does not own: any policy —
//! which flags to pass, what a path means — that is the caller's job.
//! The wrappers are grouped by what they do: `open`, `stat` (what a file
//! is), `names` (making and removing names), `attr` (mode, owner, xattrs,
//! watches), `dir` (listing), `host` (calls that name no file); this
//! module keeps the shared checks and [`ProcFd`].

mod attr;
mod dir;
mod host;
mod names;
mod open;
mod stat;

pub use attr::{
    chmod_fd, chown_fd, fchmod, fsetxattr, inotify_watch_fd, setxattr_fd, setxattr_probe,
};
pub use dir::{dirent_names, getdents64};
pub use host::{
    clock_getres, sched_getaffinity, sched_priority_bound, syncfs, sysinfo, times_ticks,
};
pub use names::{link_fd, linkat, mknodat, renameat2, symlinkat, unlinkat};
pub use open::{openat, openat2, reopen};
pub use stat::{fd_path, fstat, fstatat, fstatfs, readlinkat, status_flags};

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

/// `AT_FDCWD` for the few calls that name an absolute supervisor path.
const CWD: RawFd = libc::AT_FDCWD;

fn check(r: libc::c_int) -> Result<libc::c_int, Errno> {
    Errno::result(r)
}

fn check_long(r: libc::c_long) -> Result<libc::c_long, Errno> {
    Errno::result(r)
}

fn owned(fd: libc::c_long) -> Result<OwnedFd, Errno> {
    let fd = check_long(fd)?;
    // SAFETY: the kernel just returned this descriptor to us; nobody else
    // owns it, and it fits an int because descriptors do.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The supervisor's own name for a descriptor, `/proc/self/fd/N`, built
/// without allocating.
pub struct ProcFd {
    buf: [u8; 32],
    len: usize,
}

impl ProcFd {
    pub fn new(fd: BorrowedFd<'_>) -> ProcFd {
        const PREFIX: &[u8] = b"/proc/self/fd/";
        let mut buf = [0u8; 32];
        buf[..PREFIX.len()].copy_from_slice(PREFIX);
        let mut digits = [0u8; 12];
        let mut n = fd.as_raw_fd().unsigned_abs();
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let d = &digits[i..];
        buf[PREFIX.len()..PREFIX.len() + d.len()].copy_from_slice(d);
        ProcFd {
            buf,
            len: PREFIX.len() + d.len() + 1,
        }
    }

    pub fn as_cstr(&self) -> &CStr {
        // The buffer holds the prefix, the digits and a NUL, nothing else.
        CStr::from_bytes_with_nul(&self.buf[..self.len]).unwrap_or(c"/proc/self/fd/-1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn proc_fd_names() {
        let f = std::fs::File::open("/").unwrap();
        let p = ProcFd::new(f.as_fd());
        assert_eq!(
            p.as_cstr().to_bytes(),
            format!("/proc/self/fd/{}", f.as_raw_fd()).as_bytes()
        );
    }
}
