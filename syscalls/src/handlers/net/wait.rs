//! Waiting on the guest's behalf. The filter uses WAIT_KILLABLE_RECV, so
//! once a worker holds a call only a fatal signal interrupts the guest
//! thread: a handler that must wait (accept, recvfrom, a connect whose
//! listener's backlog is full) hands receiving to another worker
//! ([`Guest::may_block`]), then waits in short slices and between them
//! checks whether the call is still live and whether the thread has a
//! signal it catches pending, in which case the call ends with EINTR so
//! the handler runs (Python's KeyboardInterrupt) and the program retries.
//! The socket's SO_RCVTIMEO/SO_SNDTIMEO (held by the host socket) bound
//! the wait (EAGAIN), as they bound the kernel's.
//!
//! Owns: the slices and the checks. Does not own: what is waited for.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{getsockopt, sockopt};

use crate::guest::Guest;

/// How long one slice lasts: the latest a signal is noticed.
const SLICE: Duration = Duration::from_millis(20);

/// Whether `fd` polls ready for `events` (errors and hang-ups count: the
/// call that follows reports them) within `ms` milliseconds.
pub(super) fn ready(fd: BorrowedFd<'_>, events: PollFlags, ms: u16) -> Result<bool, Errno> {
    let mut fds = [PollFd::new(fd, events)];
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) | Err(Errno::EINTR) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Whether `fd` polls POLLHUP now (a stream socket shut both ways).
pub(super) fn hung_up(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP))
}

/// Waits until `fd` is ready for `events`. Err(EINTR) when a signal the
/// thread catches arrives first; Err(ENOENT) when the call is gone (the
/// thread was killed); Err(EAGAIN) when the socket's SO_RCVTIMEO (a
/// wait for input) or SO_SNDTIMEO (for output) passes first, as the
/// kernel's blocking receive, accept and send end.
pub(crate) fn until_ready(
    g: &dyn Guest,
    fd: BorrowedFd<'_>,
    events: PollFlags,
) -> Result<(), Errno> {
    until_ready_or(g, fd, events, &mut || None)
}

/// [`until_ready`], ending with the error `pending` finds between slices
/// first: an error the socket comes to keep while the call waits (a
/// relayed UDP connection's port unreachable), which wakes a blocked
/// receive as the kernel's `sk_err` does.
pub(crate) fn until_ready_or(
    g: &dyn Guest,
    fd: BorrowedFd<'_>,
    events: PollFlags,
    pending: &mut dyn FnMut() -> Option<Errno>,
) -> Result<(), Errno> {
    if ready(fd, events, 0)? {
        return Ok(());
    }
    let deadline = timeout_of(fd, events).map(|t| Instant::now() + t);
    g.may_block();
    loop {
        let slice = match deadline {
            Some(end) => {
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Errno::EAGAIN);
                }
                left.min(SLICE)
            }
            None => SLICE,
        };
        // At least 1 ms: a zero timeout would spin.
        let ms = slice.as_millis().clamp(1, SLICE.as_millis()) as u16;
        if ready(fd, events, ms)? {
            return Ok(());
        }
        interrupted(g)?;
        if let Some(e) = pending() {
            return Err(e);
        }
    }
}

/// The socket's SO_SNDTIMEO (a wait for POLLOUT) or SO_RCVTIMEO; `None`
/// when unset (zero) or unreadable.
pub(super) fn timeout_of(fd: BorrowedFd<'_>, events: PollFlags) -> Option<Duration> {
    let tv = if events.contains(PollFlags::POLLOUT) {
        getsockopt(&fd, sockopt::SendTimeout)
    } else {
        getsockopt(&fd, sockopt::ReceiveTimeout)
    }
    .ok()?;
    let secs = u64::try_from(tv.tv_sec()).ok()?;
    let micros = u32::try_from(tv.tv_usec()).ok()?;
    let t = Duration::from_secs(secs) + Duration::from_micros(u64::from(micros));
    (!t.is_zero()).then_some(t)
}

/// Sleeps one slice, then ends the wait like [`until_ready`] if the call
/// is gone or a signal came (for waits with nothing to poll).
pub(crate) fn pause(g: &dyn Guest) -> Result<(), Errno> {
    std::thread::sleep(SLICE / 4);
    interrupted(g)
}

/// Err(ENOENT) when the call is gone, Err(EINTR) when a signal the
/// thread catches is pending.
pub(super) fn interrupted(g: &dyn Guest) -> Result<(), Errno> {
    if !g.still_valid() {
        return Err(Errno::ENOENT);
    }
    if g.signal_pending() {
        return Err(Errno::EINTR);
    }
    Ok(())
}
