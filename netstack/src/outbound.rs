//! Allowed egress: the [`Egress`] built from the `--allow-net` rules.
//! Each destination is judged by [`AllowList::verdict`] (with the DNS
//! stub's [`Resolved`] addresses); an allowed one is dialled from the
//! supervisor's own network namespace with a host TCP or UDP socket
//! *first*, so a refused or unreachable destination reaches the guest as
//! that errno, and only then relayed ([`crate::relay`]) to a unix socket
//! pair whose other end takes the guest socket's place.
//!
//! Host loopback is reached only by a destination a rule names
//! explicitly (`--allow-net 127.0.0.1:5432`): such a destination is the
//! host's, not the sandbox's ([`Egress::takes_loopback`]); every other
//! loopback address stays the sandbox's own.
//!
//! Unconnected UDP (`sendto` with an address) keeps one session per
//! (guest socket, destination): a host UDP socket connected to the
//! destination and a unix datagram socket bound to a name that decodes as
//! the destination ([`Namer::encode_via`]), connected to the guest
//! socket's name, so replies arrive from the address the guest sent to.
//!
//! A connected UDP relay keeps its host socket's errors (an ICMP port
//! unreachable: ECONNREFUSED) for the guest socket ([`Egress::take_error`])
//! and marks the guest socket ([`crate::mark`]), so that its next call
//! reports it; an unconnected session's are dropped.
//!
//! Owns: the verdict call, the host sockets and their relay threads.
//! Does not own: the rules, the relay loops, the denial log (the handlers
//! record a [`Refusal::Denied`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::socket::{
    self, sockopt, AddressFamily, MsgFlags, SockFlag, SockType, SockaddrStorage, UnixAddr,
};
use nix::sys::time::TimeVal;
use parking_lot::Mutex;

use crate::egress::{Denied, Egress, HostOption, Refusal};
use crate::mark::Marker;
use crate::name::{Namer, Proto};
use crate::relay::{relay_datagrams, relay_stream};
use crate::rules::{AllowList, Resolved};
use crate::sockets::UnixSockets;

/// A UDP flow ends after this long without traffic either way.
pub const UDP_IDLE: Duration = Duration::from_secs(120);
/// An allowed TCP destination that has not answered by then is ETIMEDOUT
/// (the guest thread waits that long at most; Linux would wait ~2 min).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most concurrent unconnected-UDP sessions; past it, finished ones are
/// dropped, and if none has finished the send fails with ENOBUFS.
pub const MAX_UDP_SESSIONS: usize = 256;
/// Most connected sockets (TCP, or UDP by connect) relayed at once; past
/// it a connect fails with ENOBUFS.
pub const MAX_RELAYS: usize = 1024;

/// One unconnected-UDP flow: the host socket the guest's datagrams go out
/// on; its relay thread carries the replies back.
struct Session {
    host: UdpSocket,
    relay: thread::JoinHandle<()>,
}

/// Egress by `--allow-net` rules.
pub struct Outbound {
    allow: Arc<AllowList>,
    resolved: Arc<Resolved>,
    namer: Namer,
    /// The guest-side unix sockets' source (the sandbox's namespace).
    sockets: Arc<dyn UnixSockets>,
    sessions: Mutex<HashMap<(Vec<u8>, SocketAddr), Session>>,
    next_tag: AtomicU64,
    relays: Arc<AtomicUsize>,
    /// The host TCP socket of each relayed connection (a dup), by the
    /// inode of the guest's end, while its relay runs: the guest's
    /// TCP_NODELAY and keep-alive are set there
    /// ([`Egress::set_host_option`]).
    carriers: Arc<Mutex<HashMap<u64, OwnedFd>>>,
    /// The error each connected UDP relay's host socket reported and the
    /// guest has not been told yet, by the inode of the guest's end, while
    /// its relay runs ([`Egress::take_error`]): a few at a time at most.
    refusals: Arc<Mutex<Vec<(u64, Errno)>>>,
}

impl Outbound {
    /// `namer` must be the sandbox's (replies are named with it), and
    /// `sockets` the source of its stack (the guest's side of each relay
    /// is made there).
    pub fn new(
        allow: Arc<AllowList>,
        resolved: Arc<Resolved>,
        namer: Namer,
        sockets: Arc<dyn UnixSockets>,
    ) -> Outbound {
        Outbound {
            allow,
            resolved,
            namer,
            sockets,
            sessions: Mutex::new(HashMap::new()),
            next_tag: AtomicU64::new(1),
            relays: Arc::default(),
            carriers: Arc::default(),
            refusals: Arc::default(),
        }
    }

    fn judge(&self, dst: SocketAddr, proto: Proto) -> Result<(), Refusal> {
        self.allow
            .verdict(dst, proto, &self.resolved)
            .map_err(|d| Refusal::Denied(Denied { reason: d.reason }))
    }

    /// A new session for datagrams from the guest name `from` to `dst`.
    fn open_session(&self, from: &UnixAddr, dst: SocketAddr) -> Result<Session, Errno> {
        let host = udp_to(dst)?;
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed);
        let end = self.sockets.socket(SockType::Datagram)?;
        let name = self.namer.encode_via(Proto::Udp, dst, tag);
        socket::bind(end.as_raw_fd(), &UnixAddr::new_abstract(&name)?)?;
        socket::connect(end.as_raw_fd(), from)?;
        let relay_host: OwnedFd = host.try_clone().map_err(io_errno)?.into();
        // The guest's socket is unconnected: Linux tells it no ICMP error
        // (without IP_RECVERR), so the relay's are dropped.
        let relay = thread::spawn(move || {
            relay_datagrams(relay_host, end, UDP_IDLE, drop);
        });
        Ok(Session { host, relay })
    }
}

impl Egress for Outbound {
    fn connect(&self, dst: SocketAddr, proto: Proto) -> Result<OwnedFd, Refusal> {
        self.judge(dst, proto)?;
        // Taken before dialling: a guest opening connections without end
        // meets ENOBUFS, not a supervisor with unbounded threads.
        let slot = Slot::take(&self.relays).ok_or(Refusal::Failed(Errno::ENOBUFS))?;
        let guest_end = match proto {
            Proto::Tcp => {
                let host = tcp_to(dst)?;
                let (a, b) = self.sockets.pair(SockType::Stream)?;
                let carried = Carried::new(&self.carriers, &a, &host);
                spawn_relay(move || {
                    relay_stream(host, b);
                    drop((carried, slot));
                });
                a
            }
            Proto::Udp => {
                let host = udp_to(dst)?;
                let (a, b) = self.sockets.pair(SockType::Datagram)?;
                let refusals = Refusals::new(&self.refusals, &a);
                let end = b.try_clone().map_err(io_errno)?;
                let marker = Marker::new(end, a.as_fd())?;
                spawn_relay(move || {
                    relay_datagrams(host.into(), b, UDP_IDLE, |e| {
                        // Kept before the mark: a call that sees the
                        // mark finds its errno.
                        refusals.keep(e);
                        let _ = marker.mark();
                    });
                    drop((refusals, slot));
                });
                a
            }
        };
        Ok(guest_end)
    }

    fn verdict(&self, dst: SocketAddr, proto: Proto) -> Result<(), Refusal> {
        self.judge(dst, proto)
    }

    fn set_host_option(&self, conn: u64, opt: HostOption) {
        let carriers = self.carriers.lock();
        let Some(host) = carriers.get(&conn) else {
            return;
        };
        let _ = match opt {
            HostOption::NoDelay(on) => socket::setsockopt(host, sockopt::TcpNoDelay, &on),
            HostOption::KeepAlive(on) => socket::setsockopt(host, sockopt::KeepAlive, &on),
            HostOption::KeepIdle(s) => socket::setsockopt(host, sockopt::TcpKeepIdle, &s),
            HostOption::KeepIntvl(s) => socket::setsockopt(host, sockopt::TcpKeepInterval, &s),
            HostOption::KeepCnt(n) => socket::setsockopt(host, sockopt::TcpKeepCount, &n),
        };
    }

    fn take_error(&self, conn: u64) -> Option<Errno> {
        let mut refusals = self.refusals.lock();
        let at = refusals.iter().position(|(k, _)| *k == conn)?;
        Some(refusals.swap_remove(at).1)
    }

    fn takes_loopback(&self, dst: SocketAddr, proto: Proto) -> bool {
        let stub = SocketAddr::new(crate::dns::STUB_ADDR.into(), crate::dns::STUB_PORT);
        let ip = crate::rules::canonical_ip(dst.ip());
        ip.is_loopback()
            && SocketAddr::new(ip, dst.port()) != stub
            && self.allow.verdict(dst, proto, &self.resolved).is_ok()
    }

    fn send_to(
        &self,
        from: BorrowedFd<'_>,
        dst: SocketAddr,
        data: &[u8],
    ) -> Result<usize, Refusal> {
        self.judge(dst, Proto::Udp)?;
        let name: UnixAddr = socket::getsockname(from.as_raw_fd()).map_err(Refusal::Failed)?;
        let key = (
            crate::name::abstract_of(&name).unwrap_or_default().to_vec(),
            dst,
        );
        let mut sessions = self.sessions.lock();
        if sessions.get(&key).is_some_and(|s| s.relay.is_finished()) {
            sessions.remove(&key);
        }
        if !sessions.contains_key(&key) {
            if sessions.len() >= MAX_UDP_SESSIONS {
                sessions.retain(|_, s| !s.relay.is_finished());
            }
            if sessions.len() >= MAX_UDP_SESSIONS {
                return Err(Refusal::Failed(Errno::ENOBUFS));
            }
            let session = self.open_session(&name, dst).map_err(Refusal::Failed)?;
            sessions.insert(key.clone(), session);
        }
        let host = sessions.get(&key).map(|s| &s.host);
        let host = host.ok_or(Refusal::Failed(Errno::ENOBUFS))?;
        // The session's host socket is connected, so an ICMP error for an
        // earlier datagram (port unreachable: ECONNREFUSED) waits as its
        // socket error and would fail this send; the guest's socket is
        // unconnected, and Linux reports no such error to one (without
        // IP_RECVERR). Read and so cleared first.
        let _ = socket::getsockopt(host, sockopt::SocketError);
        socket::send(host.as_raw_fd(), data, MsgFlags::MSG_DONTWAIT).map_err(Refusal::Failed)
    }
}

/// One of the [`MAX_RELAYS`] connections relayed at once; freed on drop.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>) -> Option<Slot> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_RELAYS).then_some(n + 1)
            })
            .ok()?;
        Some(Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A relayed connection's entry in [`Outbound::carriers`], removed (and
/// its dup closed) when the relay ends or never starts.
struct Carried {
    map: Arc<Mutex<HashMap<u64, OwnedFd>>>,
    key: Option<u64>,
}

impl Carried {
    fn new(map: &Arc<Mutex<HashMap<u64, OwnedFd>>>, guest: &OwnedFd, host: &OwnedFd) -> Carried {
        let key = crate::stack::inode_of(guest.as_fd()).ok();
        if let (Some(k), Ok(dup)) = (key, host.try_clone()) {
            map.lock().insert(k, dup);
        }
        Carried {
            map: map.clone(),
            key,
        }
    }
}

impl Drop for Carried {
    fn drop(&mut self) {
        if let Some(k) = self.key {
            self.map.lock().remove(&k);
        }
    }
}

/// A connected UDP relay's entry in [`Outbound::refusals`]: its host
/// socket's latest error, kept for the guest; removed when the relay ends.
struct Refusals {
    map: Arc<Mutex<Vec<(u64, Errno)>>>,
    key: Option<u64>,
}

impl Refusals {
    fn new(map: &Arc<Mutex<Vec<(u64, Errno)>>>, guest: &OwnedFd) -> Refusals {
        Refusals {
            map: map.clone(),
            key: crate::stack::inode_of(guest.as_fd()).ok(),
        }
    }

    /// Keeps `e` for the guest (a later error replaces an untold one, as
    /// the kernel's `sk_err` does).
    fn keep(&self, e: Errno) {
        let Some(k) = self.key else {
            return;
        };
        let mut map = self.map.lock();
        match map.iter_mut().find(|(key, _)| *key == k) {
            Some(kept) => kept.1 = e,
            None => map.push((k, e)),
        }
    }
}

impl Drop for Refusals {
    fn drop(&mut self) {
        if let Some(k) = self.key {
            self.map.lock().retain(|(key, _)| *key != k);
        }
    }
}

/// Runs a relay on a thread of its own (a failure to start one drops the
/// connection: both ends close, the guest sees EOF).
fn spawn_relay(f: impl FnOnce() + Send + 'static) {
    let _ = thread::Builder::new().name("egress-relay".into()).spawn(f);
}

/// A host TCP socket connected to `dst`, or the connect's errno; a
/// destination that does not answer gives ETIMEDOUT after
/// [`CONNECT_TIMEOUT`] (SO_SNDTIMEO bounds a blocking connect).
fn tcp_to(dst: SocketAddr) -> Result<OwnedFd, Errno> {
    let family = match dst {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket::socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    let timeout = TimeVal::new(CONNECT_TIMEOUT.as_secs() as i64, 0);
    socket::setsockopt(&fd, sockopt::SendTimeout, &timeout)?;
    match socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(dst)) {
        Ok(()) => {}
        Err(Errno::EINPROGRESS) | Err(Errno::EAGAIN) => return Err(Errno::ETIMEDOUT),
        Err(e) => return Err(e),
    }
    socket::setsockopt(&fd, sockopt::SendTimeout, &TimeVal::new(0, 0))?;
    Ok(fd)
}

/// A host UDP socket connected to `dst` (a first error, such as an
/// unreachable network, comes from this connect).
fn udp_to(dst: SocketAddr) -> Result<UdpSocket, Errno> {
    let any: IpAddr = match dst {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let sock = UdpSocket::bind(SocketAddr::new(any, 0)).map_err(io_errno)?;
    sock.connect(dst).map_err(io_errno)?;
    Ok(sock)
}

fn io_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

#[cfg(test)]
#[path = "outbound/tests.rs"]
mod tests;
