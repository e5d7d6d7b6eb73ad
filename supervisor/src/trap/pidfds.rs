//! A small cache of pidfds of trapped guest threads, so that copying a
//! guest descriptor (`pidfd_getfd`) does not first cost a `pidfd_open`
//! (with its close about 10 µs on Linux 6.18, against 2.5 µs for the
//! copy: a pidfs file each time; a loopback connect made two), and
//! signalling a trapped thread (a serviced send's SIGPIPE).
//!
//! Owns: which pidfds are kept (the last [`KEPT`] threads used) and
//! opening them. Does not own: what is copied through them.
//!
//! Why a stale entry is harmless: a pidfd pins the kernel's `struct pid`
//! of the thread it was opened for, never a number. When that thread has
//! ended and its tid is reused, the cached pidfd still names the dead one,
//! whose descriptors are gone (ESRCH or EBADF), so a failed copy reopens
//! the tid once and tries again. A live thread is the only holder of its
//! tid, so a copy that succeeds came from the trapped thread's table.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::sys::pidfd;

/// Pidfds kept (most recently used last).
const KEPT: usize = 64;

static CACHE: Mutex<Vec<(i32, Arc<OwnedFd>)>> = Mutex::new(Vec::new());

/// A copy of descriptor `fd` of thread `tid`.
pub fn getfd(tid: i32, fd: i32) -> Result<OwnedFd, Errno> {
    if let Some(cached) = cached(tid) {
        if let Ok(copy) = pidfd::getfd(cached.as_fd(), fd) {
            return Ok(copy);
        }
        forget(tid);
    }
    let (fresh, of_thread) = open(tid)?;
    let copy = pidfd::getfd(fresh.as_fd(), fd);
    if copy.is_ok() && of_thread {
        keep(tid, Arc::new(fresh));
    }
    copy
}

/// Sends `sig` to thread `tid` (through a pidfd, so never to a thread
/// that reused the number; to its process on a kernel without
/// `PIDFD_THREAD`).
pub fn signal(tid: i32, sig: nix::sys::signal::Signal) -> Result<(), Errno> {
    if let Some(cached) = cached(tid) {
        if pidfd::send_signal(cached.as_fd(), sig).is_ok() {
            return Ok(());
        }
        forget(tid);
    }
    let (fresh, _) = open(tid)?;
    pidfd::send_signal(fresh.as_fd(), sig)
}

fn cached(tid: i32) -> Option<Arc<OwnedFd>> {
    let cache = CACHE.lock();
    cache
        .iter()
        .rev()
        .find(|(t, _)| *t == tid)
        .map(|(_, p)| p.clone())
}

fn forget(tid: i32) {
    CACHE.lock().retain(|(t, _)| *t != tid);
}

fn keep(tid: i32, p: Arc<OwnedFd>) {
    let mut cache = CACHE.lock();
    cache.retain(|(t, _)| *t != tid);
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push((tid, p));
}

/// A pidfd for the thread's process, and whether it names the thread:
/// `PIDFD_THREAD` (Linux 6.9) does; older kernels need the thread-group
/// leader, and such a pidfd is not kept (the tid could later belong to a
/// thread of another, live process).
pub(super) fn open(tid: i32) -> Result<(OwnedFd, bool), Errno> {
    match pidfd::open(tid, true) {
        Err(Errno::EINVAL) => Ok((pidfd::open(super::guest::tgid_of(tid)?, false)?, false)),
        r => r.map(|p| (p, true)),
    }
}
