//! A UDP socket connected to a loopback port nobody has bound.
//!
//! Linux's UDP connect only records the peer: it succeeds, each datagram
//! sent is answered by an ICMP port unreachable, and the socket keeps
//! ECONNREFUSED as its error (`sk_err`) for its next call: poll reports
//! POLLERR, a waiting receive wakes, the next receive or send fails with
//! it once. Programs rely on the connect succeeding (the "UDP connect
//! trick" that learns the local address, ping's probe, DNS clients) and
//! on the refusal (a resolver polls, sees POLLERR and tries its next
//! server; `nc -u` exits). The host `AF_UNIX` socket cannot connect to a
//! name nobody holds, so it connects to a stand-in: a socket the
//! supervisor holds (bound, not connected: it holds no reference to the
//! guest's socket, which a close releases), which a thread of its own
//! watches. Each datagram the guest sends is taken by the stand-in as
//! the port unreachable of Linux's loopback: it marks the guest socket
//! (`crate::mark`) and is dropped. The stand-in ends after
//! [`crate::outbound::UDP_IDLE`] without a datagram; so does a socket
//! the guest closed or connected elsewhere (nothing tells the stand-in).
//!
//! Past [`MAX_STANDINS`] at once, or when a stand-in's thread cannot
//! start, the socket connects to a peer that closes at once instead
//! ([`connect_to_closed`]): its next send fails with ECONNREFUSED (the
//! kernel's answer for a dead datagram peer), which also dissolves the
//! association, one call earlier than Linux (a send, not the receive
//! after it); so does a socket whose stand-in ended.
//!
//! Owns: the stand-ins and their threads. Does not own: the autobind or
//! the reported peer address (`crate::stack`, `crate::table`), the
//! errno a mark stands for (`crate::Stack::take_error`).

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{self, SockType, UnixAddr};

use crate::mark::Marker;
use crate::sockets::UnixSockets;

/// Most stand-ins alive at once (one thread each).
pub const MAX_STANDINS: usize = 256;

/// A stand-in thread's stack: it polls and connects, nothing more.
const STANDIN_STACK: usize = 64 * 1024;

/// The stand-ins alive.
static STANDINS: AtomicUsize = AtomicUsize::new(0);

/// How a connect to a closed loopback port was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refuser {
    /// A stand-in marks the socket at each datagram (as Linux).
    StandIn,
    /// A peer that closed: the next send is refused.
    Closed,
}

/// Connects the UDP socket `fd` (bound) to a stand-in for a closed
/// loopback port, or past the stand-ins' bound to a closed peer.
pub fn connect_refused(sockets: &dyn UnixSockets, fd: BorrowedFd<'_>) -> Result<Refuser, Errno> {
    let Some(slot) = Slot::take() else {
        connect_to_closed(sockets, fd)?;
        return Ok(Refuser::Closed);
    };
    let marker = Marker::new(sockets.socket(SockType::Datagram)?, fd)?;
    socket::connect(fd.as_raw_fd(), marker.end_name())?;
    let started = std::thread::Builder::new()
        .name("udp-standin".into())
        .stack_size(STANDIN_STACK)
        .spawn(move || {
            stand_in(&marker);
            drop(slot);
        });
    if started.is_err() {
        connect_to_closed(sockets, fd)?;
        return Ok(Refuser::Closed);
    }
    Ok(Refuser::StandIn)
}

/// Marks the guest socket at each datagram it sends, until it has sent
/// none for [`crate::outbound::UDP_IDLE`] or is gone.
fn stand_in(marker: &Marker) {
    let idle = PollTimeout::try_from(crate::outbound::UDP_IDLE).unwrap_or(PollTimeout::MAX);
    loop {
        let mut fds = [PollFd::new(marker.end(), PollFlags::POLLIN)];
        match poll(&mut fds, idle) {
            Ok(0) => return,
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::POLLNVAL);
        if !revents.contains(PollFlags::POLLIN) || marker.mark_queued().is_err() {
            return;
        }
    }
}

/// One of the [`MAX_STANDINS`]; freed on drop.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        STANDINS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_STANDINS).then_some(n + 1)
            })
            .ok()?;
        Some(Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        STANDINS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Connects the datagram socket `fd` to a peer that closes at once
/// (made by `sockets`, in `fd`'s network namespace, under an abstract
/// name the kernel picks).
pub fn connect_to_closed(sockets: &dyn UnixSockets, fd: BorrowedFd<'_>) -> Result<(), Errno> {
    let peer = sockets.socket(SockType::Datagram)?;
    socket::bind(peer.as_raw_fd(), &UnixAddr::new_unnamed())?;
    let name: UnixAddr = socket::getsockname(peer.as_raw_fd())?;
    socket::connect(fd.as_raw_fd(), &name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sockets::LocalSockets;
    use nix::sys::socket::MsgFlags;
    use std::os::fd::AsFd;

    #[test]
    fn connects_then_the_first_send_is_refused() {
        let s = LocalSockets.socket(SockType::Datagram).unwrap();
        connect_to_closed(&LocalSockets, s.as_fd()).unwrap();
        let sent = socket::send(s.as_raw_fd(), b"x", MsgFlags::MSG_DONTWAIT);
        assert_eq!(sent, Err(Errno::ECONNREFUSED));
    }

    #[test]
    fn a_stand_in_takes_the_send_and_marks_the_socket() {
        let s = LocalSockets.socket(SockType::Datagram).unwrap();
        socket::bind(s.as_raw_fd(), &UnixAddr::new_unnamed()).unwrap();
        let how = connect_refused(&LocalSockets, s.as_fd()).unwrap();
        assert_eq!(how, Refuser::StandIn);
        socket::send(s.as_raw_fd(), b"x", MsgFlags::empty()).unwrap();
        let mut buf = [0u8; 4];
        // Blocks until the stand-in marks it.
        let r = socket::recv(s.as_raw_fd(), &mut buf, MsgFlags::empty());
        assert_eq!(r, Err(Errno::ECONNRESET));
        socket::send(s.as_raw_fd(), b"y", MsgFlags::empty()).unwrap();
        let r = socket::recv(s.as_raw_fd(), &mut buf, MsgFlags::empty());
        assert_eq!(r, Err(Errno::ECONNRESET), "each datagram is refused");
    }
}
