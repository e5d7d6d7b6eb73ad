//! Relaying between two host sockets: the sandbox's end of a connection
//! and the supervisor's host socket (egress), or a host client and the
//! guest's listener (`--publish`).
//!
//! - Streams ([`relay_stream`]): one thread per direction (the caller's
//!   and one scoped thread), a 64 KiB buffer each. EOF on one side becomes
//!   `shutdown(SHUT_WR)` on the other, so half-closed connections work;
//!   when both directions are done both descriptors are closed. An error
//!   (a reset, a vanished peer) shuts both sides of the connection down,
//!   so neither end waits forever.
//! - Datagrams ([`relay_datagrams`]): one thread polls both sockets and
//!   forwards each datagram whole. A datagram the other side cannot take
//!   at once is dropped, as UDP may. It ends when either socket hangs up,
//!   a unix peer is gone, or nothing moved for the idle time (UDP has no
//!   end of its own; NAT tables time flows out the same way).
//!
//! Owns moving bytes. Does not own choosing or opening either side.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    getsockname, recv, send, shutdown, AddressFamily, MsgFlags, Shutdown, SockaddrLike,
    SockaddrStorage,
};

/// Buffer of one direction of a stream relay.
const STREAM_BUF: usize = 64 * 1024;
/// Largest datagram relayed (UDP's own limit).
const DATAGRAM_MAX: usize = 65536;

/// Bytes moved by a finished stream relay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub a_to_b: u64,
    pub b_to_a: u64,
}

/// Relays between two connected stream sockets until both directions
/// have ended, then closes both. Blocks the calling thread.
pub fn relay_stream(a: OwnedFd, b: OwnedFd) -> StreamStats {
    let (fa, fb) = (a.as_fd(), b.as_fd());
    std::thread::scope(|s| {
        let back = s.spawn(move || copy_one_way(fb, fa));
        let a_to_b = copy_one_way(fa, fb);
        // A panic in the copier is impossible (no indexing on input), but
        // a join error must not take the relay's caller down.
        let b_to_a = back.join().unwrap_or(0);
        StreamStats { a_to_b, b_to_a }
    })
}

/// Copies `from` to `to` until EOF or an error; returns the bytes moved.
fn copy_one_way(from: BorrowedFd, to: BorrowedFd) -> u64 {
    let mut buf = vec![0u8; STREAM_BUF];
    let mut moved = 0u64;
    loop {
        let n = match recv(from.as_raw_fd(), &mut buf, MsgFlags::empty()) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(_) => return abort(from, to, moved),
        };
        if send_all(to, buf.get(..n).unwrap_or_default()).is_err() {
            return abort(from, to, moved);
        }
        moved += n as u64;
    }
    let _ = shutdown(to.as_raw_fd(), Shutdown::Write);
    moved
}

/// Ends both sides after a failure in one direction.
fn abort(from: BorrowedFd, to: BorrowedFd, moved: u64) -> u64 {
    let _ = shutdown(from.as_raw_fd(), Shutdown::Both);
    let _ = shutdown(to.as_raw_fd(), Shutdown::Both);
    moved
}

fn send_all(to: BorrowedFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match send(to.as_raw_fd(), data, MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => data = data.get(n..).unwrap_or_default(),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Datagrams moved (and dropped) by a finished datagram relay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatagramStats {
    pub a_to_b: u64,
    pub b_to_a: u64,
    pub dropped: u64,
}

/// Relays datagrams between two connected datagram sockets, each whole,
/// until one hangs up or `idle` passes with no traffic; then closes both.
pub fn relay_datagrams(a: OwnedFd, b: OwnedFd, idle: Duration) -> DatagramStats {
    let fds = [a.as_fd(), b.as_fd()];
    let unix = fds.map(is_unix);
    let timeout = PollTimeout::try_from(idle).unwrap_or(PollTimeout::MAX);
    let mut stats = DatagramStats::default();
    let mut buf = vec![0u8; DATAGRAM_MAX];
    loop {
        let mut polls = fds.map(|fd| PollFd::new(fd, PollFlags::POLLIN));
        match poll(&mut polls, timeout) {
            Ok(0) => return stats,
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return stats,
        }
        let ready = polls.map(|p| p.revents().unwrap_or(PollFlags::POLLHUP));
        for (i, revents) in ready.iter().enumerate() {
            let (from, to) = (fds[i], fds[1 - i]);
            // A shut-down socket is readable too (recv gives 0 for ever).
            if revents.intersects(PollFlags::POLLHUP | PollFlags::POLLNVAL) {
                return stats;
            }
            if revents.contains(PollFlags::POLLIN) {
                match forward_datagram(from, to, unix[1 - i], &mut buf) {
                    Forwarded::Sent => *counter(&mut stats, i) += 1,
                    Forwarded::Dropped => stats.dropped += 1,
                    Forwarded::Nothing => {}
                    Forwarded::End => return stats,
                }
            }
        }
    }
}

fn counter(stats: &mut DatagramStats, from: usize) -> &mut u64 {
    match from {
        0 => &mut stats.a_to_b,
        _ => &mut stats.b_to_a,
    }
}

enum Forwarded {
    Sent,
    Dropped,
    Nothing,
    End,
}

fn forward_datagram(from: BorrowedFd, to: BorrowedFd, to_unix: bool, buf: &mut [u8]) -> Forwarded {
    let n = match recv(from.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT) {
        Ok(n) => n,
        Err(Errno::EAGAIN | Errno::EINTR) => return Forwarded::Nothing,
        // A UDP socket reports an earlier datagram's ICMP error here; the
        // flow goes on, as it does for the kernel's own sockets.
        Err(Errno::ECONNREFUSED) => return Forwarded::Nothing,
        Err(_) => return Forwarded::End,
    };
    let data = buf.get(..n).unwrap_or_default();
    match send(
        to.as_raw_fd(),
        data,
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
    ) {
        Ok(_) => Forwarded::Sent,
        Err(Errno::EAGAIN | Errno::ENOBUFS | Errno::EMSGSIZE) => Forwarded::Dropped,
        Err(Errno::ECONNREFUSED) if !to_unix => Forwarded::Dropped,
        Err(_) => Forwarded::End,
    }
}

fn is_unix(fd: BorrowedFd) -> bool {
    getsockname::<SockaddrStorage>(fd.as_raw_fd())
        .ok()
        .and_then(|a| a.family())
        .is_some_and(|f| f == AddressFamily::Unix)
}

#[cfg(test)]
#[path = "relay/tests.rs"]
mod tests;
