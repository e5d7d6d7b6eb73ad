//! The sandbox's DNS stub: the name server its /etc/resolv.conf names
//! ([`STUB_ADDR`]). It answers A and AAAA questions for names an
//! `--allow-net` name rule allows by asking the host's resolver, records
//! every address it hands out in [`Resolved`] (so the egress verdict lets
//! the sandbox dial them), and answers NXDOMAIN for every other name.
//!
//! - An allowed name with another query type gets an empty NOERROR answer
//!   (as a real resolver answers a type the name has no records of); a
//!   name the host cannot resolve gets NXDOMAIN, a resolver failure
//!   SERVFAIL; a class other than IN, or an opcode other than QUERY,
//!   NOTIMP; a message that is not one readable question, FORMERR;
//!   responses and scraps are dropped.
//! - Answers carry a TTL of [`TTL`] seconds; addresses stay diallable for
//!   the rest of the run whatever the TTL.
//! - Framing: a UDP datagram is one message, answered in at most 512 bytes
//!   (1232 with EDNS; TC set if addresses were left out); TCP messages
//!   carry a two-byte length prefix. [`serve_datagrams`](DnsStub::serve_datagrams)
//!   and [`serve_stream`](DnsStub::serve_stream) run the two on a socket
//!   the caller bound or accepted.
//!
//! Owns deciding and building answers. Does not own the sockets the stub
//! listens on (the socket layer binds [`STUB_ADDR`]:[`STUB_PORT`] in the
//! sandbox's loopback and feeds it messages).

pub mod wire;

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::socket::{recvfrom, sendto, MsgFlags, SockaddrStorage};

use crate::rules::{AllowList, Resolved};
use wire::{Query, Rcode, Reject, TYPE_A, TYPE_AAAA};

/// The stub's address inside the sandbox (systemd-resolved's, so it
/// looks familiar and collides with nothing a guest binds by habit).
pub const STUB_ADDR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);
/// The stub's port.
pub const STUB_PORT: u16 = 53;
/// TTL of every answer, in seconds.
pub const TTL: u32 = 60;

/// What the host's resolver said about a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(Vec<IpAddr>),
    NoSuchName,
    Failed,
}

/// The host's resolver, behind a trait so tests can stand in for it.
pub trait HostResolver: Send + Sync {
    fn lookup(&self, name: &str) -> Lookup;
}

/// getaddrinfo(3) through `std::net::ToSocketAddrs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, name: &str) -> Lookup {
        match (name, 0u16).to_socket_addrs() {
            Ok(addrs) => {
                let mut ips: Vec<IpAddr> = Vec::new();
                for a in addrs {
                    if !ips.contains(&a.ip()) {
                        ips.push(a.ip());
                    }
                }
                match ips.is_empty() {
                    true => Lookup::NoSuchName,
                    false => Lookup::Found(ips),
                }
            }
            // std reports getaddrinfo's EAI_NONAME and EAI_NODATA only as text.
            Err(e) if is_no_such_name(&e.to_string()) => Lookup::NoSuchName,
            Err(_) => Lookup::Failed,
        }
    }
}

fn is_no_such_name(message: &str) -> bool {
    message.contains("Name or service not known") || message.contains("No address associated")
}

/// How a message reached the stub (it bounds the response's size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// The stub: the rules, the record of answers, and the host's resolver.
pub struct DnsStub {
    allow: Arc<AllowList>,
    resolved: Arc<Resolved>,
    resolver: Box<dyn HostResolver>,
}

/// Largest TCP message (its length prefix is two bytes).
const TCP_MAX: usize = u16::MAX as usize;

impl DnsStub {
    pub fn new(
        allow: Arc<AllowList>,
        resolved: Arc<Resolved>,
        resolver: Box<dyn HostResolver>,
    ) -> DnsStub {
        DnsStub {
            allow,
            resolved,
            resolver,
        }
    }

    /// The response to one message, or `None` when it deserves none.
    pub fn answer(&self, msg: &[u8], transport: Transport) -> Option<Vec<u8>> {
        let q = match wire::parse_query(msg) {
            Ok(q) => q,
            Err(Reject::Drop) => return None,
            Err(Reject::Reply(bytes)) => return Some(bytes),
        };
        let limit = match (transport, q.edns) {
            (Transport::Tcp, _) => TCP_MAX,
            (Transport::Udp, None) => wire::UDP_PLAIN,
            (Transport::Udp, Some(n)) => usize::from(n).clamp(wire::UDP_PLAIN, wire::UDP_EDNS_MAX),
        };
        let (rcode, addrs) = self.decide(&q);
        Some(wire::response(&q, rcode, &addrs, TTL, limit))
    }

    fn decide(&self, q: &Query) -> (Rcode, Vec<IpAddr>) {
        if !q.is_internet() {
            return (Rcode::NotImp, Vec::new());
        }
        let Some(name) = q.name().filter(|n| self.allow.allows_name(n)) else {
            return (Rcode::NxDomain, Vec::new());
        };
        let want_v4 = match q.qtype {
            TYPE_A => true,
            TYPE_AAAA => false,
            _ => return (Rcode::NoError, Vec::new()),
        };
        match self.resolver.lookup(&name) {
            Lookup::Found(ips) => {
                let ips: Vec<IpAddr> = ips
                    .into_iter()
                    .filter(|ip| ip.is_ipv4() == want_v4)
                    .collect();
                self.resolved.record(&name, &ips);
                (Rcode::NoError, ips)
            }
            Lookup::NoSuchName => (Rcode::NxDomain, Vec::new()),
            Lookup::Failed => (Rcode::ServFail, Vec::new()),
        }
    }

    /// Serves DNS on a datagram socket (UDP, or the unix datagram socket
    /// standing for one) until it fails or is shut down: each message is
    /// answered to the address it came from.
    pub fn serve_datagrams(&self, sock: BorrowedFd) -> io::Result<()> {
        let mut buf = vec![0u8; TCP_MAX];
        loop {
            let (n, from) = match recvfrom::<SockaddrStorage>(sock.as_raw_fd(), &mut buf) {
                Ok(got) => got,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 && shut_down(sock) {
                return Ok(());
            }
            let Some(from) = from else { continue };
            let reply = buf
                .get(..n)
                .and_then(|msg| self.answer(msg, Transport::Udp));
            if let Some(reply) = reply {
                // A requester that has gone away is not our failure.
                let _ = sendto(sock.as_raw_fd(), &reply, &from, MsgFlags::MSG_DONTWAIT);
            }
        }
    }

    /// Serves DNS over one TCP-style stream (two-byte length, message)
    /// until the peer closes it; a malformed frame ends the connection.
    pub fn serve_stream<S: Read + Write>(&self, mut stream: S) -> io::Result<()> {
        while let Some(msg) = read_frame(&mut stream)? {
            if let Some(reply) = self.answer(&msg, Transport::Tcp) {
                stream.write_all(&frame(&reply))?;
            }
        }
        Ok(())
    }
}

/// Whether `sock` was shut down for reading (recv then returns 0 for ever).
fn shut_down(sock: BorrowedFd) -> bool {
    let mut p = [PollFd::new(sock, PollFlags::POLLIN)];
    matches!(crate::relay::wait(&mut p, Some(Duration::ZERO)), Ok(1))
        && p[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP))
}

/// One message with its TCP length prefix.
pub fn frame(msg: &[u8]) -> Vec<u8> {
    let len = msg.len().min(TCP_MAX);
    let mut out = Vec::with_capacity(len + 2);
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&msg[..len]);
    out
}

/// The next length-prefixed message, or `None` at a clean end of stream.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 2];
    match r.read_exact(&mut len[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut len[1..])?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    r.read_exact(&mut msg)?;
    Ok(Some(msg))
}

#[cfg(test)]
#[path = "dns/tests.rs"]
mod tests;
