//! The stand-in a non-blocking egress connect puts in the guest's
//! descriptor while its dial runs, so poll, select and epoll see what a
//! TCP socket in SYN_SENT shows: not writable, not readable, until the
//! connect ends; then writable (success), or readable, writable, error
//! and hang-up at once (failure), as a refused TCP connect polls.
//!
//! The stand-in is one end of a stream pair from the socket factory whose
//! send buffer is filled; its *gate* is the other end, held by the dial.
//! Success: the gate takes the filler out (the stand-in polls writable)
//! and later hands whatever the guest wrote meanwhile to the relayed
//! connection, just before that connection takes the descriptor's place
//! (`dial::complete`). Failure: the gate is dropped with the filler
//! unread, so the stand-in's peer is gone with data unread: the kernel
//! marks it ECONNRESET and shut down both ways. Writable follows a few
//! microseconds later, when the kernel frees the filler: its AF_UNIX
//! release wakes pollers first, so a poll that runs in between sees
//! error and hang-up without POLLOUT (a refused TCP connect shows all
//! three at once). No order of our own calls closes that window.
//!
//! Owns: making, filling, opening and draining the pair. Does not own:
//! the dial or the replacement of the guest's descriptor (`dial`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use netstack::Stack;
use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, MsgFlags, SockType};

/// The most filler written (the kernel's smallest send buffer is about
/// 4.5 KiB; this bounds the loop whatever the buffer is).
const MAX_FILLER: usize = 1 << 20;
/// Seconds a forward waits for a relay that takes nothing.
const STALL: u32 = 30;

/// The dial's end of a stand-in. It keeps no copy of the stand-in, so a
/// stand-in the guest closes is gone, and the gate polls hang-up
/// ([`Gate::abandoned`]).
pub(super) struct Gate {
    inner: OwnedFd,
    filler: usize,
}

/// A stand-in for the guest (status flags: the caller sets them) and its
/// gate, closed: the stand-in polls neither readable nor writable.
pub(super) fn make(net: &Stack) -> Result<(OwnedFd, Gate), Errno> {
    let (outer, inner) = net.sockets().pair(SockType::Stream)?;
    socket::setsockopt(&outer, sockopt::SndBuf, &0)?;
    let chunk = [0u8; 4096];
    let mut filler = 0;
    while filler < MAX_FILLER {
        match socket::send(outer.as_raw_fd(), &chunk, MsgFlags::MSG_DONTWAIT) {
            Ok(n) => filler += n,
            Err(Errno::EAGAIN) => break,
            Err(e) => return Err(e),
        }
    }
    Ok((outer, Gate { inner, filler }))
}

impl Gate {
    /// The dial succeeded: the filler goes and the stand-in polls
    /// writable (with the smallest send buffer: what the guest writes
    /// before asking SO_ERROR waits here for the connection).
    ///
    /// Returns once the filler is out.
    pub(super) fn open(&self) -> Result<(), Errno> {
        let mut left = self.filler;
        let mut buf = [0u8; 4096];
        while left > 0 {
            let want = left.min(buf.len());
            match socket::recv(
                self.inner.as_raw_fd(),
                &mut buf[..want],
                MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(0) => return Err(Errno::EPIPE),
                Ok(n) => left -= n,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether the guest has closed the stand-in (its peer is gone).
    pub(super) fn abandoned(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        // POLLHUP comes whatever was asked for, once both ways are shut.
        let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).is_ok()
            && fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLHUP))
    }

    /// A handle on the stand-in's fate for the dialer
    /// ([`Gate::abandoned`] of a copy).
    pub(super) fn watch(&self) -> Result<Gate, Errno> {
        let inner = self.inner.try_clone().map_err(|_| Errno::EMFILE)?;
        Ok(Gate { inner, filler: 0 })
    }

    /// Hands what the guest wrote to the stand-in since the gate opened to
    /// `conn` (the relayed connection about to take its place).
    pub(super) fn forward(&self, conn: BorrowedFd<'_>) -> Result<(), Errno> {
        let mut buf = [0u8; 16384];
        loop {
            match socket::recv(self.inner.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
                Ok(0) | Err(Errno::EAGAIN) => return Ok(()),
                Ok(n) => write_all(conn, &buf[..n])?,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Writes all of `data` to a (blocking or not) socket; ETIMEDOUT when it
/// takes nothing for [`STALL`] polls of a second.
fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut stalled = 0;
    while !data.is_empty() {
        match socket::send(fd.as_raw_fd(), data, MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => {
                data = &data[n..];
                stalled = 0;
            }
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) if stalled < STALL => {
                stalled += 1;
                let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
                poll(&mut fds, PollTimeout::from(1000u16))?;
            }
            Err(Errno::EAGAIN) => return Err(Errno::ETIMEDOUT),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
