//! Opening a file the supervisor serves: a read's object opened again
//! with the guest's flags (`reopen_served`), and an open that must not tie
//! up the worker on a FIFO (`open_without_blocking`).
//!
//! Owns those host-side opens; not the decision to make them
//! (`decide.rs`) nor the answer to the guest (`mod.rs`).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::stat::fstat;

use crate::guest::{Guest, CAP_FOWNER};

/// `object`, a file whose read the sandbox serves (a synthetic /proc
/// file, or one the guest's domain fences off), opened again for the read
/// with the guest's `flags`. `O_NOATIME` takes the file's owner or
/// CAP_FOWNER: a /proc file is the host root's, so a guest root under a
/// range of ids (not its owner) is answered as a container's root holding
/// CAP_FOWNER is, when it holds that in its own namespace (the worker
/// raises it for this reopen alone, of an object already resolved for a
/// read; the flag changes nothing on procfs).
pub(super) fn reopen_served(
    g: &dyn Guest,
    object: BorrowedFd<'_>,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    match procfs::reopen_own_fd(object, flags) {
        Err(Errno::EPERM) if flags & libc::O_NOATIME != 0 => {
            let mut opened = None;
            g.with_caller_caps(CAP_FOWNER, &mut || {
                opened = Some(procfs::reopen_own_fd(object, flags)?);
                Ok(())
            })?;
            opened.ok_or(Errno::EPERM)
        }
        r => r,
    }
}

/// Whether every user may read the file (mode `r--r--r--` at least).
pub(super) fn readable_by_all(st: &libc::stat) -> bool {
    st.st_mode & 0o444 == 0o444
}

pub(super) fn is_regular(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Opens with O_NONBLOCK first, so that the common case never ties up the
/// worker: only a FIFO can make an open wait (for its other end). When
/// the target turns out to be one and the guest asked for a blocking
/// open, the worker hands receiving over ([`Guest::may_block`]) and opens
/// again, blocking as the guest would. Otherwise O_NONBLOCK is taken back
/// off the open file unless the guest asked for it.
pub(super) fn open_without_blocking(
    g: &dyn Guest,
    open: impl Fn(i32) -> Result<OwnedFd, Errno>,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    if flags & (libc::O_NONBLOCK | libc::O_PATH) != 0 {
        return open(flags);
    }
    match open(flags | libc::O_NONBLOCK) {
        Ok(fd) if !is_fifo(&fd) => {
            let status = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?;
            let blocking = OFlag::from_bits_retain(status & !libc::O_NONBLOCK);
            fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(blocking))?;
            Ok(fd)
        }
        // A FIFO, or a write-only FIFO with no reader yet (ENXIO).
        Ok(_) | Err(Errno::ENXIO) => {
            g.may_block();
            open(flags)
        }
        Err(e) => Err(e),
    }
}

fn is_fifo(fd: &OwnedFd) -> bool {
    fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO)
}
