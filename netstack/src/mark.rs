//! The mark a refusal leaves on a connected UDP socket's host socket, so
//! that what passes the filter sees it as Linux's `sk_err` is seen.
//!
//! A connected UDP socket that meets an ICMP port unreachable keeps
//! ECONNREFUSED as its `sk_err`: poll reports POLLERR, a waiting receive
//! wakes, and the next receive or send (a plain `recv`, `read`, `send`
//! or `write` too) fails with it once. The guest's socket is a host
//! `AF_UNIX` datagram socket, and `af_unix` sets one error on a datagram
//! socket, in `unix_dgram_disconnected`: when the socket `end` it is
//! connected to, itself connected back to it with datagrams queued,
//! connects elsewhere (or dissolves), the guest's socket gets
//! ECONNRESET as its `sk_err` and its waiters are woken. [`Marker::mark`]
//! makes that happen with the end the supervisor holds (a relay's, or a
//! loopback stand-in's, `crate::refused`): a datagram queued on the end
//! (its own, sent to itself while it is unconnected: a connected one
//! takes datagrams from its peer only), a dissolve, a connect back;
//! [`Marker::mark_queued`] for an end that is not connected and holds the
//! guest's own datagram (a connect, a dissolve). The
//! mark is the host's `sk_err`, so it is reported exactly once, by
//! whichever call comes first: a serviced one reads it (SO_ERROR,
//! [`take`]) and answers the refusal's errno; one that passes the filter
//! gets the kernel's ECONNRESET (not ECONNREFUSED: no `af_unix` path sets
//! another errno); poll sees POLLERR until one of them has.
//!
//! Owns: making the mark and reading it. Does not own: when a refusal
//! happens (`crate::relay`, `crate::refused`) or which errno it stands
//! for (`crate::Stack::take_error`).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, MsgFlags, UnixAddr};

/// The end a guest socket is connected to, with both names, which
/// marks the guest socket on demand.
pub struct Marker {
    end: OwnedFd,
    own: UnixAddr,
    guest: UnixAddr,
}

impl Marker {
    /// A marker for the guest socket `guest` through `end`, the datagram
    /// socket it is connected to (and `end` to it): each is autobound if
    /// it has no name, as the connect back needs `guest`'s and the
    /// queued datagram `end`'s.
    pub fn new(end: OwnedFd, guest: BorrowedFd<'_>) -> Result<Marker, Errno> {
        let own = named(end.as_raw_fd())?;
        let guest = named(guest.as_raw_fd())?;
        Ok(Marker { end, own, guest })
    }

    /// The end (to wait on).
    pub fn end(&self) -> BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.end)
    }

    /// Marks the guest socket: its `sk_err` becomes ECONNRESET and its
    /// waiters wake. Datagrams the end had queued are dropped (a refused
    /// destination's are lost anyway). Fails when the guest socket is
    /// gone (its name has no socket: the connect back is refused).
    pub fn mark(&self) -> Result<(), Errno> {
        let fd = self.end.as_raw_fd();
        crate::sys::disconnect(self.end())?;
        socket::sendto(fd, &[0], &self.own, MsgFlags::MSG_DONTWAIT)?;
        socket::connect(fd, &self.guest)?;
        crate::sys::disconnect(self.end())?;
        socket::connect(fd, &self.guest)
    }

    /// Marks the guest socket when the end, unconnected, holds a
    /// datagram of the guest's (a loopback stand-in's): the end connects
    /// to the guest socket and dissolves, which drops the datagram and
    /// makes the mark. The end stays unconnected: a connected end would
    /// hold the guest's socket (`unix_peer` takes a reference), which
    /// would outlive the guest's close, counted in `/proc/net/sockstat`.
    /// Fails when the guest socket is gone.
    pub fn mark_queued(&self) -> Result<(), Errno> {
        socket::connect(self.end.as_raw_fd(), &self.guest)?;
        crate::sys::disconnect(self.end())
    }

    /// The end's name (for the guest socket to connect to).
    pub fn end_name(&self) -> &UnixAddr {
        &self.own
    }
}

/// The socket's name, autobinding it first when it has none.
fn named(fd: i32) -> Result<UnixAddr, Errno> {
    let name: UnixAddr = socket::getsockname(fd)?;
    if !name.is_unnamed() {
        return Ok(name);
    }
    socket::bind(fd, &UnixAddr::new_unnamed())?;
    socket::getsockname(fd)
}

/// Whether the guest's host socket `fd` is marked (it has a pending
/// error), read and so cleared: the mark is reported once.
pub fn take(fd: BorrowedFd<'_>) -> bool {
    socket::getsockopt(&fd, sockopt::SocketError).is_ok_and(|e| e != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;

    fn pair() -> (OwnedFd, OwnedFd) {
        use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
        let flags = SockFlag::SOCK_CLOEXEC;
        socketpair(AddressFamily::Unix, SockType::Datagram, None, flags).unwrap()
    }

    fn revents(fd: BorrowedFd<'_>) -> PollFlags {
        let mut p = [PollFd::new(fd, PollFlags::POLLIN)];
        poll(&mut p, PollTimeout::ZERO).unwrap();
        p[0].revents().unwrap()
    }

    #[test]
    fn a_mark_polls_pollerr_fails_one_receive_and_the_pair_goes_on() {
        let (guest, end) = pair();
        let m = Marker::new(end, guest.as_fd()).unwrap();
        assert_eq!(revents(guest.as_fd()), PollFlags::empty());
        m.mark().unwrap();
        assert_eq!(revents(guest.as_fd()), PollFlags::POLLERR);
        let mut buf = [0u8; 8];
        let r = socket::recv(guest.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT);
        assert_eq!(r, Err(Errno::ECONNRESET));
        assert_eq!(revents(guest.as_fd()), PollFlags::empty());
        socket::send(guest.as_raw_fd(), b"up", MsgFlags::empty()).unwrap();
        assert_eq!(
            socket::recv(m.end().as_raw_fd(), &mut buf, MsgFlags::empty()),
            Ok(2)
        );
        socket::send(m.end().as_raw_fd(), b"down", MsgFlags::empty()).unwrap();
        assert_eq!(
            socket::recv(guest.as_raw_fd(), &mut buf, MsgFlags::empty()),
            Ok(4)
        );
    }

    #[test]
    fn a_mark_is_taken_once() {
        let (guest, end) = pair();
        let m = Marker::new(end, guest.as_fd()).unwrap();
        m.mark().unwrap();
        assert!(take(guest.as_fd()));
        assert!(!take(guest.as_fd()));
    }

    #[test]
    fn a_gone_guest_socket_fails_the_mark() {
        let (guest, end) = pair();
        let m = Marker::new(end, guest.as_fd()).unwrap();
        drop(guest);
        assert!(m.mark().is_err());
    }
}
