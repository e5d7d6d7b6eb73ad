//! Relaying between two host sockets: the sandbox's end of a connection
//! and the supervisor's host socket (egress), or a host client and the
//! guest's listener (`--publish`).
//!
//! - Streams ([`relay_stream`]): one thread per direction (the caller's
//!   and one scoped thread), each moving up to 64 KiB at a time with
//!   splice(2) through a pipe (a buffer where splice is refused); a
//!   non-blocking descriptor is waited for with poll. EOF on one side becomes
//!   `shutdown(SHUT_WR)` on the other, so half-closed connections work;
//!   when both directions are done both descriptors are closed. An error
//!   (a reset, a vanished peer) shuts both sides of the connection down,
//!   so neither end waits forever.
//! - Datagrams ([`relay_datagrams`]): one thread polls both sockets and
//!   forwards each datagram whole. A datagram the other side cannot take
//!   at once is dropped, as UDP may. An error the internet socket reports
//!   for an earlier datagram (an ICMP port unreachable: ECONNREFUSED, as
//!   its pending error, a receive's or a send's) is taken from it and
//!   handed to the caller, and the flow goes on, as a UDP socket's does.
//!   It ends when either socket hangs up, a unix peer is gone, or nothing
//!   moved for the idle time (UDP has no end of its own; NAT tables time
//!   flows out the same way).
//!
//! Owns moving bytes. Does not own choosing or opening either side.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{splice, OFlag, SpliceFFlags};
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::socket::{
    getsockname, getsockopt, recv, send, shutdown, sockopt, AddressFamily, MsgFlags, Shutdown,
    SockaddrLike, SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use nix::unistd::pipe2;

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
/// Zero-copy through a pipe with splice(2) where both ends allow it,
/// else through a buffer.
fn copy_one_way(from: BorrowedFd, to: BorrowedFd) -> u64 {
    let mut moved = 0u64;
    let end = match pipe2(OFlag::O_CLOEXEC) {
        Ok((r, w)) => splice_copy(from, to, (r.as_fd(), w.as_fd()), &mut moved),
        Err(_) => End::Unspliceable,
    };
    let end = match end {
        End::Unspliceable => buffered_copy(from, to, &mut moved),
        end => end,
    };
    match end {
        End::Eof => {
            let _ = shutdown(to.as_raw_fd(), Shutdown::Write);
        }
        End::Failed | End::Unspliceable => abort(from, to),
    }
    moved
}

/// How one direction of a stream relay ended.
enum End {
    Eof,
    Failed,
    /// splice(2) refused these descriptors before moving anything.
    Unspliceable,
}

fn splice_copy(
    from: BorrowedFd,
    to: BorrowedFd,
    pipe: (BorrowedFd, BorrowedFd),
    moved: &mut u64,
) -> End {
    let flags = SpliceFFlags::SPLICE_F_MOVE;
    loop {
        let n = match retrying(from, PollFlags::POLLIN, || {
            splice(from, None, pipe.1, None, STREAM_BUF, flags)
        }) {
            Ok(0) => return End::Eof,
            Ok(n) => n,
            // EINVAL: not spliceable; EPERM: a seccomp filter refuses
            // splice. Either way the buffer does the job.
            Err(Errno::EINVAL | Errno::EPERM | Errno::ENOSYS) if *moved == 0 => {
                return End::Unspliceable
            }
            Err(_) => return End::Failed,
        };
        let mut left = n;
        while left > 0 {
            match retrying(to, PollFlags::POLLOUT, || {
                splice(pipe.0, None, to, None, left, flags)
            }) {
                Ok(m) => left -= m.min(left),
                Err(_) => return End::Failed,
            }
        }
        *moved += n as u64;
    }
}

fn buffered_copy(from: BorrowedFd, to: BorrowedFd, moved: &mut u64) -> End {
    let mut buf = vec![0u8; STREAM_BUF];
    loop {
        let n = match retrying(from, PollFlags::POLLIN, || {
            recv(from.as_raw_fd(), &mut buf, MsgFlags::empty())
        }) {
            Ok(0) => return End::Eof,
            Ok(n) => n,
            Err(_) => return End::Failed,
        };
        if send_all(to, buf.get(..n).unwrap_or_default()).is_err() {
            return End::Failed;
        }
        *moved += n as u64;
    }
}

/// Ends both sides after a failure in one direction.
fn abort(from: BorrowedFd, to: BorrowedFd) {
    let _ = shutdown(from.as_raw_fd(), Shutdown::Both);
    let _ = shutdown(to.as_raw_fd(), Shutdown::Both);
}

fn send_all(to: BorrowedFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        let n = retrying(to, PollFlags::POLLOUT, || {
            send(to.as_raw_fd(), data, MsgFlags::MSG_NOSIGNAL)
        })?;
        data = data.get(n..).unwrap_or_default();
    }
    Ok(())
}

/// `call` again after EINTR, and after EAGAIN once `fd` is ready for
/// `events` (a descriptor someone made non-blocking); its first other
/// result.
fn retrying(
    fd: BorrowedFd,
    events: PollFlags,
    mut call: impl FnMut() -> nix::Result<usize>,
) -> nix::Result<usize> {
    loop {
        match call() {
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => wait_ready(fd, events),
            result => return result,
        }
    }
}

/// poll(2) by way of ppoll, the one the supervisor's own seccomp filter
/// allows; `None`: no timeout.
pub(crate) fn wait(fds: &mut [PollFd], timeout: Option<Duration>) -> nix::Result<i32> {
    ppoll(fds, timeout.map(TimeSpec::from_duration), None)
}

/// Waits until `fd` is ready for `events` (or has hung up, which the
/// next call reports): for descriptors someone made non-blocking.
fn wait_ready(fd: BorrowedFd, events: PollFlags) {
    let mut p = [PollFd::new(fd, events)];
    let _ = wait(&mut p, None);
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
/// `refused` is told of each error an internet (not unix) socket of the
/// two reports for an earlier datagram, taken from it: the ICMP error a
/// connected UDP socket keeps (port unreachable: ECONNREFUSED).
pub fn relay_datagrams(
    a: OwnedFd,
    b: OwnedFd,
    idle: Duration,
    mut refused: impl FnMut(Errno),
) -> DatagramStats {
    let fds = [a.as_fd(), b.as_fd()];
    let unix = fds.map(is_unix);
    let mut stats = DatagramStats::default();
    let mut buf = vec![0u8; DATAGRAM_MAX];
    loop {
        let mut polls = fds.map(|fd| PollFd::new(fd, PollFlags::POLLIN));
        match wait(&mut polls, Some(idle)) {
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
            // A pending error polls POLLERR until it is read: taken here,
            // or the poll would return at once for ever.
            if revents.contains(PollFlags::POLLERR) {
                match (pending_error(from), unix[i]) {
                    (None, _) => {}
                    (Some(e), false) => refused(e),
                    // A unix socket's (ECONNRESET: its peer went elsewhere).
                    (Some(_), true) => return stats,
                }
            }
            if revents.contains(PollFlags::POLLIN) {
                let sides = (from, to, unix[1 - i]);
                match forward_datagram(sides, &mut buf, &mut refused) {
                    Forwarded::Sent => *counter(&mut stats, i) += 1,
                    Forwarded::Dropped => stats.dropped += 1,
                    Forwarded::Nothing => {}
                    Forwarded::End => return stats,
                }
            }
        }
    }
}

/// The socket's pending error (SO_ERROR), read and so cleared.
fn pending_error(fd: BorrowedFd) -> Option<Errno> {
    match getsockopt(&fd, sockopt::SocketError) {
        Ok(0) => None,
        Ok(e) => Some(Errno::from_raw(e)),
        Err(e) => Some(e),
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

/// One datagram from `from` to `to` (`to_unix`: a unix socket); an
/// internet socket's error for an earlier datagram goes to `refused`.
fn forward_datagram(
    (from, to, to_unix): (BorrowedFd, BorrowedFd, bool),
    buf: &mut [u8],
    refused: &mut impl FnMut(Errno),
) -> Forwarded {
    let n = match recv(from.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT) {
        Ok(n) => n,
        Err(Errno::EAGAIN | Errno::EINTR) => return Forwarded::Nothing,
        // A UDP socket reports an earlier datagram's ICMP error here; the
        // flow goes on, as it does for the kernel's own sockets.
        Err(Errno::ECONNREFUSED) => {
            refused(Errno::ECONNREFUSED);
            return Forwarded::Nothing;
        }
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
        Err(Errno::ECONNREFUSED) if !to_unix => {
            refused(Errno::ECONNREFUSED);
            Forwarded::Dropped
        }
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
