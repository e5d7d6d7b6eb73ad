//! A small cache of pidfds of trapped guest threads, so that copying a
//! guest descriptor (`pidfd_getfd`) does not first cost a `pidfd_open`
//! (with its close about 10 µs on Linux 6.18, against 2.5 µs for the
//! copy: a pidfs file each time; a loopback connect made two), and of
//! each thread's ids in the sandbox's pid namespace, so that resolving
//! `/proc/self` does not read `/proc/<tid>/status` each time (10 µs).
//! The same pidfds signal a trapped thread (a serviced send's SIGPIPE).
//!
//! Owns: which pidfds are kept (the last [`KEPT`] threads used), opening
//! them, and the ids kept beside them. Does not own: what is copied
//! through them, nor how the ids are read (`guest.rs`).
//!
//! Why a stale entry is harmless: a pidfd pins the kernel's `struct pid`
//! of the thread it was opened for, never a number. When that thread has
//! ended and its tid is reused, the cached pidfd still names the dead one,
//! which the kernel no longer finds (ESRCH), so such a failure reopens the
//! tid once and tries again. A live thread is the only holder of its tid
//! (an ended one still holding it, a zombie, is never the trapped thread),
//! so any other answer came from the trapped thread itself: a copy that
//! succeeds came from its table, and EBADF is its own (a descriptor it
//! does not have), answered without a reopen.
//! Kept ids are given only while their pidfd's thread is alive (a signal
//! 0, 0.4 µs): the trapped thread holds the tid, so that thread is it.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::sys::pidfd;

/// Pidfds kept (most recently used last).
const KEPT: usize = 64;

/// A thread's ids in the sandbox's pid namespace: (tgid, tid).
pub type NsIds = (i32, i32);

/// One kept thread: its tid, its pidfd, and its ids once read.
struct Kept {
    tid: i32,
    pidfd: Arc<OwnedFd>,
    ns_ids: Option<NsIds>,
}

static CACHE: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// A copy of descriptor `fd` of thread `tid`.
pub fn getfd(tid: i32, fd: i32) -> Result<OwnedFd, Errno> {
    through_pidfd(tid, |p| pidfd::getfd(p, fd))
}

/// Sends `sig` to thread `tid` (through a pidfd, so never to a thread
/// that reused the number; to its process on a kernel without
/// `PIDFD_THREAD`).
pub fn signal(tid: i32, sig: nix::sys::signal::Signal) -> Result<(), Errno> {
    through_pidfd(tid, |p| pidfd::send_signal(p, sig))
}

/// `op` through a pidfd of thread `tid`: the kept one first; when that
/// fails with ESRCH (its thread has ended, and the tid may have been
/// reused), once more through a fresh one, kept when it names the thread
/// and `op` succeeded. Any other error is the live thread's own answer
/// (a descriptor it does not have: EBADF), and the kept pidfd stays.
fn through_pidfd<T>(tid: i32, op: impl Fn(BorrowedFd<'_>) -> Result<T, Errno>) -> Result<T, Errno> {
    if let Some(cached) = cached(tid) {
        match op(cached.as_fd()) {
            Err(Errno::ESRCH) => forget(tid),
            done => return done,
        }
    }
    let (fresh, of_thread) = open(tid)?;
    let done = op(fresh.as_fd());
    if done.is_ok() && of_thread {
        keep(tid, Arc::new(fresh), None);
    }
    done
}

/// Thread `tid`'s ids in the sandbox's pid namespace: kept ones while
/// its pidfd's thread lives, else `read` (given the thread's pidfd when
/// one is at hand), kept for next time when a pidfd of the thread itself
/// was at hand and outlived the read (so the text read was that thread's).
pub fn ns_ids(
    tid: i32,
    read: impl FnOnce(Option<BorrowedFd<'_>>) -> Result<NsIds, Errno>,
) -> Result<NsIds, Errno> {
    let pidfd = match cached_entry(tid) {
        Some((pidfd, Some(ids))) if pidfd::alive(pidfd.as_fd()) => return Ok(ids),
        // Kept by a copy: checked below, once the ids are read.
        Some((pidfd, None)) => Some(pidfd),
        // Kept for a thread that has ended (its tid is the trapped one's now).
        Some((_, Some(_))) | None => match open(tid) {
            Ok((fresh, true)) => Some(Arc::new(fresh)),
            _ => None,
        },
    };
    let ids = read(pidfd.as_deref().map(AsFd::as_fd))?;
    match pidfd {
        Some(p) if pidfd::alive(p.as_fd()) => keep(tid, p, Some(ids)),
        _ => forget(tid),
    }
    Ok(ids)
}

/// Keeps `pidfd`, a pidfd of thread `tid` itself that another cache
/// opened (the caller's ids', `creds.rs`), when none is kept for `tid`:
/// the thread's first copy or `/proc/self` then opens none of its own
/// (a `pidfd_open` and, later, its close).
pub(super) fn adopt(tid: i32, pidfd: &Arc<OwnedFd>) {
    let mut cache = CACHE.lock();
    if cache.iter().any(|k| k.tid == tid) {
        return;
    }
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push(Kept {
        tid,
        pidfd: pidfd.clone(),
        ns_ids: None,
    });
}

fn cached(tid: i32) -> Option<Arc<OwnedFd>> {
    cached_entry(tid).map(|(p, _)| p)
}

fn cached_entry(tid: i32) -> Option<(Arc<OwnedFd>, Option<NsIds>)> {
    let cache = CACHE.lock();
    cache
        .iter()
        .rev()
        .find(|k| k.tid == tid)
        .map(|k| (k.pidfd.clone(), k.ns_ids))
}

fn forget(tid: i32) {
    CACHE.lock().retain(|k| k.tid != tid);
}

/// Keeps `pidfd` for `tid`, with `ns_ids` or those kept already for the
/// same pidfd.
fn keep(tid: i32, pidfd: Arc<OwnedFd>, ns_ids: Option<NsIds>) {
    let mut cache = CACHE.lock();
    let mut ns_ids = ns_ids;
    if let Some(i) = cache.iter().position(|k| k.tid == tid) {
        let old = cache.remove(i);
        if Arc::ptr_eq(&old.pidfd, &pidfd) {
            ns_ids = ns_ids.or(old.ns_ids);
        }
    }
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push(Kept { tid, pidfd, ns_ids });
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
