//! The queue lengths of the sandbox's unix sockets, from the kernel's
//! `sock_diag` (`NETLINK_SOCK_DIAG`, `unix_diag`): one dump lists every
//! unix socket of the network namespace the netlink socket was made in,
//! with its peer's inode and its `UNIX_DIAG_RQLEN` — for a listener the
//! connections waiting in its accept queue, for any other socket the
//! bytes unread in its receive queue (a datagram socket: the first
//! datagram's, as SIOCINQ answers).
//!
//! Owns: the dump request and parsing its answer. Does not own: where
//! the netlink socket comes from (`sockets::UnixSockets::diag`, made in
//! the sandbox's namespace) or what the numbers are shown as
//! (`/proc/net`, in `syscalls/`).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::socket::{recv, send, MsgFlags};

/// One unix socket's queue as `unix_diag` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue {
    /// Listener: connections waiting to be accepted; other sockets: the
    /// bytes unread (a datagram socket: its first datagram's).
    pub rx: u32,
    /// The connected peer's inode, if any.
    pub peer: Option<u64>,
}

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
/// `UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN`.
const SHOW: u32 = 0x4 | 0x10;
const UNIX_DIAG_PEER: u16 = 2;
const UNIX_DIAG_RQLEN: u16 = 4;
/// `struct nlmsghdr` and `struct unix_diag_msg`.
const NLMSG_HDR: usize = 16;
const DIAG_MSG: usize = 16;
/// A dump stops after this many messages (a sandbox with more sockets
/// than that shows the rest with empty queues).
const MAX_MESSAGES: usize = 1 << 20;

/// The dump request: every state, peer and queue lengths.
fn request() -> Vec<u8> {
    let mut m = Vec::with_capacity(40);
    m.extend(40u32.to_ne_bytes());
    m.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend((NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend(1u32.to_ne_bytes()); // sequence
    m.extend(0u32.to_ne_bytes()); // port id: the kernel
    m.push(libc::AF_UNIX as u8);
    m.push(0); // protocol
    m.extend(0u16.to_ne_bytes()); // pad
    m.extend(u32::MAX.to_ne_bytes()); // states
    m.extend(0u32.to_ne_bytes()); // inode
    m.extend(SHOW.to_ne_bytes());
    m.extend([0xff; 8]); // cookie: none
    m
}

/// Every unix socket of the netlink socket `diag`'s namespace by inode.
/// One caller at a time per socket (the answers of two dumps would mix).
pub fn dump(diag: BorrowedFd<'_>) -> Result<HashMap<u64, Queue>, Errno> {
    let mut buf = vec![0u8; 64 * 1024];
    // What an earlier dump that failed half-way left unread would be
    // taken for this one's answer.
    while recv(diag.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT).is_ok_and(|n| n > 0) {}
    send(diag.as_raw_fd(), &request(), MsgFlags::empty())?;
    let mut out = HashMap::new();
    let mut seen = 0;
    loop {
        let n = recv(diag.as_raw_fd(), &mut buf, MsgFlags::empty())?;
        match parse(&buf[..n], &mut out)? {
            Batch::Done => return Ok(out),
            Batch::More(k) => seen += k,
        }
        if n == 0 || seen > MAX_MESSAGES {
            return Ok(out);
        }
    }
}

/// What one received buffer held.
#[derive(Debug, PartialEq, Eq)]
enum Batch {
    /// The dump's end.
    Done,
    /// This many socket messages; more follow.
    More(usize),
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The netlink messages in `buf` into `out`.
fn parse(buf: &[u8], out: &mut HashMap<u64, Queue>) -> Result<Batch, Errno> {
    let mut at = 0;
    let mut count = 0;
    while at + NLMSG_HDR <= buf.len() {
        let len = u32_at(buf, at).unwrap_or(0) as usize;
        let kind = u16_at(buf, at + 4).unwrap_or(0);
        if len < NLMSG_HDR || at + len > buf.len() {
            return Err(Errno::EBADMSG);
        }
        let body = &buf[at + NLMSG_HDR..at + len];
        match kind {
            NLMSG_DONE => return Ok(Batch::Done),
            NLMSG_ERROR => {
                let code = u32_at(body, 0).map_or(0, |c| c as i32);
                return Err(Errno::from_raw(code.saturating_neg()));
            }
            SOCK_DIAG_BY_FAMILY => {
                if let Some((inode, q)) = socket(body) {
                    out.insert(inode, q);
                    count += 1;
                }
            }
            _ => {}
        }
        at += len.next_multiple_of(4);
    }
    Ok(Batch::More(count))
}

/// One `unix_diag_msg` and its attributes.
fn socket(body: &[u8]) -> Option<(u64, Queue)> {
    let inode = u64::from(u32_at(body, 4)?);
    let mut q = Queue::default();
    let mut at = DIAG_MSG;
    while at + 4 <= body.len() {
        let len = usize::from(u16_at(body, at)?);
        let kind = u16_at(body, at + 2)?;
        if len < 4 || at + len > body.len() {
            break;
        }
        let value = &body[at + 4..at + len];
        match kind {
            UNIX_DIAG_PEER => q.peer = u32_at(value, 0).map(u64::from).filter(|p| *p != 0),
            UNIX_DIAG_RQLEN => q.rx = u32_at(value, 0)?,
            _ => {}
        }
        at += len.next_multiple_of(4);
    }
    Some((inode, q))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = ((4 + value.len()) as u16).to_ne_bytes().to_vec();
        a.extend(kind.to_ne_bytes());
        a.extend(value);
        a.resize(a.len().next_multiple_of(4), 0);
        a
    }

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut m = ((NLMSG_HDR + body.len()) as u32).to_ne_bytes().to_vec();
        m.extend(kind.to_ne_bytes());
        m.extend([0; 10]);
        m.extend(body);
        m
    }

    fn diag(inode: u32, attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![libc::AF_UNIX as u8, 1, 1, 0];
        b.extend(inode.to_ne_bytes());
        b.extend([0; 8]);
        for a in attrs {
            b.extend(a);
        }
        message(SOCK_DIAG_BY_FAMILY, &b)
    }

    #[test]
    fn parses_queues_peers_and_the_end() {
        let mut rq = 20000u32.to_ne_bytes().to_vec();
        rq.extend(212992u32.to_ne_bytes());
        let mut buf = diag(
            7,
            &[attr(UNIX_DIAG_PEER, &8u32.to_ne_bytes()), attr(4, &rq)],
        );
        buf.extend(diag(9, &[]));
        let mut out = HashMap::new();
        assert_eq!(parse(&buf, &mut out), Ok(Batch::More(2)));
        assert_eq!(
            out[&7],
            Queue {
                rx: 20000,
                peer: Some(8)
            }
        );
        assert_eq!(out[&9], Queue::default());
        let done = message(NLMSG_DONE, &[0; 4]);
        assert_eq!(parse(&done, &mut out), Ok(Batch::Done));
        let err = message(NLMSG_ERROR, &(-13i32).to_ne_bytes());
        assert_eq!(parse(&err, &mut out), Err(Errno::EACCES));
        // A length past the buffer or under a header is refused.
        let mut bad = diag(3, &[]);
        bad[0] = 200;
        assert_eq!(parse(&bad, &mut out), Err(Errno::EBADMSG));
        assert_eq!(request().len(), 40);
    }

    #[test]
    fn dumps_this_namespace() {
        use nix::sys::socket::*;
        use std::os::fd::AsFd;
        let nl = crate::sockets::diag_socket().unwrap();
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::empty(),
        )
        .unwrap();
        nix::unistd::write(&a, &[7u8; 100]).unwrap();
        let ino = |fd: &std::os::fd::OwnedFd| nix::sys::stat::fstat(fd.as_raw_fd()).unwrap().st_ino;
        // A dump asked for and left unread does not answer the next.
        send(nl.as_raw_fd(), &request(), MsgFlags::empty()).unwrap();
        nix::unistd::write(&a, &[7u8; 200]).unwrap();
        let all = dump(nl.as_fd()).unwrap();
        assert_eq!(
            all[&ino(&b)],
            Queue {
                rx: 300,
                peer: Some(ino(&a))
            }
        );
        assert_eq!(all[&ino(&a)].rx, 0);
    }
}
