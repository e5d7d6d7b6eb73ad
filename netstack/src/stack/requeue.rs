//! A UDP socket's queued datagrams when its host socket leaves its peer.
//! `af_unix` purges a datagram socket's receive queue when the socket
//! leaves its peer (`unix_dgram_disconnected`: a disconnect, or a connect
//! to another peer), and a peer connected back to it then fails its next
//! call with ECONNRESET; UDP keeps the queue and tells the peer nothing.
//! So the queue is taken out before the host socket leaves its peer and
//! sent back once it has, each datagram from a name that reads as its
//! sender (`Namer::encode_via`), so that a receive reports the same
//! address.
//!
//! Owns: taking the queue out and putting it back. Does not own: when a
//! socket leaves its peer (`source.rs`, `local.rs`). What still differs:
//! a datagram that arrives between the two steps is lost, as before; a
//! requeued datagram's credentials (SO_PASSCRED) are the supervisor's,
//! and it has lost what was recorded under its sender's own name (a
//! hop-limit or traffic-class stamp, the mark of a datagram that went
//! over IPv4 from a sender bound to `::`).

use std::collections::HashMap;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{self, MsgFlags, SockType, UnixAddr};

use super::{Sock, Stack};
use crate::name::{abstract_of, random_u64};

/// A datagram taken off a queue, and its sender's name (none: unnamed).
type Queued = (Vec<u8>, Option<Vec<u8>>);

impl Stack {
    /// Runs `leave`, which makes the host socket of `s` leave its peer,
    /// with the datagrams queued on it kept (taken out first, put back
    /// after). A socket without a peer has no queue to lose.
    pub(super) fn keeping_queue(
        &self,
        s: &Sock,
        leave: impl FnOnce() -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        if socket::getpeername::<UnixAddr>(s.fd.as_raw_fd()).is_err() {
            return leave();
        }
        let queued = take_queue(s.fd.as_fd());
        let left = leave();
        if !queued.is_empty() {
            self.put_back(s, queued);
        }
        left
    }

    /// Before a connect of `s`, which would purge the queue if the host
    /// socket has a peer: one with datagrams queued leaves its peer
    /// first, keeping them (the connect then finds no peer to leave).
    pub(super) fn before_connect(&self, s: &Sock) -> Result<(), Errno> {
        let peek = MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC | MsgFlags::MSG_DONTWAIT;
        if socket::recv(s.fd.as_raw_fd(), &mut [], peek).is_err() {
            return Ok(());
        }
        self.keeping_queue(s, || crate::sys::disconnect(s.fd.as_fd()))
    }

    /// Sends `queued` back to `s`'s own name, each datagram from a
    /// socket named as its sender reads (one per sender). A datagram
    /// that no longer fits is dropped, as a full UDP queue drops it.
    fn put_back(&self, s: &Sock, queued: Vec<Queued>) {
        let Ok(own) = socket::getsockname::<UnixAddr>(s.fd.as_raw_fd()) else {
            return;
        };
        let mut senders: HashMap<Option<Vec<u8>>, OwnedFd> = HashMap::new();
        for (data, from) in queued {
            let sender = match senders.get(&from) {
                Some(fd) => fd,
                None => {
                    let Ok(fd) = self.stand_in_sender(from.as_deref()) else {
                        continue;
                    };
                    senders.entry(from).or_insert(fd)
                }
            };
            let _ = socket::sendto(sender.as_raw_fd(), &data, &own, MsgFlags::MSG_DONTWAIT);
        }
    }

    /// A datagram socket named as `from` reads (a `via-` name of its
    /// address); unnamed when `from` is not one of this sandbox's names.
    fn stand_in_sender(&self, from: Option<&[u8]>) -> Result<OwnedFd, Errno> {
        let fd = self.sockets.socket(SockType::Datagram)?;
        if let Some(named) = from.and_then(|n| self.namer.decode(n)) {
            let name = self.namer.encode_via(named.proto, named.addr, random_u64());
            socket::bind(fd.as_raw_fd(), &UnixAddr::new_abstract(&name)?)?;
        }
        Ok(fd)
    }
}

/// Every datagram queued on `fd` now, with its sender's name (each
/// peeked at first for its whole length, MSG_TRUNC).
fn take_queue(fd: BorrowedFd<'_>) -> Vec<Queued> {
    let mut out = Vec::new();
    let peek = MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC | MsgFlags::MSG_DONTWAIT;
    while let Ok(len) = socket::recv(fd.as_raw_fd(), &mut [], peek) {
        let mut buf = vec![0u8; len];
        let mut iov = [IoSliceMut::new(&mut buf)];
        let got =
            socket::recvmsg::<UnixAddr>(fd.as_raw_fd(), &mut iov, None, MsgFlags::MSG_DONTWAIT);
        let Ok(m) = got else {
            break;
        };
        let (n, from) = (
            m.bytes,
            m.address.as_ref().and_then(abstract_of).map(<[u8]>::to_vec),
        );
        buf.truncate(n);
        out.push((buf, from));
    }
    out
}
