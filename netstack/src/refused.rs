//! A UDP socket connected to a loopback port nobody has bound.
//!
//! Linux's UDP connect only records the peer: it succeeds, and the
//! refusal (ICMP port unreachable) comes back later, as ECONNREFUSED on
//! a send or receive after the first datagram. Programs rely on the
//! connect succeeding (the "UDP connect trick" that learns the local
//! address, ping's probe, DNS clients). The host `AF_UNIX` socket cannot
//! connect to a name nobody holds, so it connects to a socket of its own
//! that closes at once: the connect succeeds, and the next send on the
//! host socket fails with ECONNREFUSED (the kernel's answer for a dead
//! datagram peer), which also dissolves the association. That is one call
//! earlier than Linux (a send, not the receive after it).
//!
//! Owns: that stand-in peer. Does not own: the autobind or the reported
//! peer address (`crate::stack`, `crate::table`).

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::socket::{self, SockType, UnixAddr};

use crate::sockets::UnixSockets;

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
}
