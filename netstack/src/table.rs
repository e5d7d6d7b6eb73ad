//! Per-socket metadata the kernel cannot hold for a host `AF_UNIX`
//! socket that stands for a TCP/UDP one: its domain, transport, stored
//! options, and for sockets the egress seam replaced, the addresses to
//! report. Keyed by the socket's inode; a socket absent from the table
//! is not the netstack's (the guest's own `AF_UNIX` socket).
//!
//! Owns: the table and its garbage collection (when it has doubled since
//! the last collection, entries whose inode no longer exists in the
//! namespace's `/proc/<pid>/net/unix` are dropped), so a guest making millions of sockets
//! cannot grow it without bound. Does not own: the sockets themselves.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use nix::errno::Errno;
use parking_lot::{Mutex, MutexGuard};

use crate::bound;
use crate::name::Proto;
use crate::options::Options;

/// What the netstack knows of one socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// `AF_INET` or `AF_INET6`.
    pub domain: i32,
    pub proto: Proto,
    /// The protocol number the guest passed to socket(), or the default.
    pub protocol: i32,
    pub options: Options,
    /// The address it reports as its own when the host name says less
    /// (an accepted connection of a wildcard listener; an egress socket),
    /// or that costs a call to ask: a TCP listener's bound address, kept
    /// at its listen (a unix name never changes), which each accepted
    /// connection's own address is made from.
    pub local: Option<SocketAddr>,
    /// The address it was connected to (the host name of a wildcard
    /// listener says less).
    pub peer: Option<SocketAddr>,
    /// A non-blocking connect answered EINPROGRESS and no connect has
    /// asked since: the next one returns 0 (then EISCONN), as TCP does.
    pub connect_reported: bool,
    /// Bound by the guest to a port of its choosing (not 0): a UDP
    /// disconnect keeps it (Linux's SOCK_BINDPORT_LOCK).
    pub port_locked: bool,
    /// A UDP disconnect released the port this socket's host name still
    /// holds: it reports port 0 until the next autobind takes it again.
    pub released: bool,
    /// An error a UDP socket keeps for its next call (the kernel's
    /// `sk_err`: what a recvmmsg met after its first message), which the
    /// next serviced receive or getsockopt(SO_ERROR) reports once.
    pub error: Option<Errno>,
    /// A connected UDP socket whose peer end the supervisor holds, which
    /// marks its host socket when the destination refuses a datagram
    /// ([`crate::mark`]): who does. `None` for every other socket, whose
    /// calls never look for a refusal.
    pub refusals: Option<Refusals>,
    /// A sandbox-local TCP connection: its TCP_NODELAY is its host
    /// socket's flag, not `options`' ([`crate::nodelay`]).
    pub nodelay_in_host: bool,
}

/// Who marks a connected UDP socket when its destination refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusals {
    /// Its egress relay (the errno is the relay's host socket's:
    /// [`crate::Egress::take_error`]).
    Relay,
    /// A stand-in for a closed loopback port ([`crate::refused`]):
    /// ECONNREFUSED.
    StandIn,
}

impl Meta {
    pub fn new(domain: i32, proto: Proto) -> Meta {
        let protocol = match proto {
            Proto::Tcp => libc::IPPROTO_TCP,
            Proto::Udp => libc::IPPROTO_UDP,
        };
        Meta {
            domain,
            proto,
            protocol,
            options: Options::default(),
            local: None,
            peer: None,
            connect_reported: false,
            port_locked: false,
            released: false,
            error: None,
            refusals: None,
            nodelay_in_host: false,
        }
    }

    /// Whether IPV6_V6ONLY is set.
    /// A UDP socket, not a ping socket (both are `Proto::Udp`): the
    /// UDP autobind and address rules apply to it.
    pub fn is_udp(&self) -> bool {
        self.proto == Proto::Udp && !crate::icmp::is_ping(self.domain, self.protocol)
    }

    pub fn v6only(&self) -> bool {
        self.domain == libc::AF_INET6 && self.options.flag(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY)
    }

    /// The metadata of a connection accepted on this listener (its
    /// TCP_NODELAY, the listener's, goes to its host socket:
    /// [`crate::Stack::adopt`]).
    pub fn accepted(&self, local: SocketAddr, peer: SocketAddr) -> Meta {
        Meta {
            local: Some(local),
            peer: Some(peer),
            error: None,
            refusals: None,
            ..self.clone()
        }
    }
}

/// Smallest size at which the table collects.
const GC_FLOOR: usize = 1024;

/// The metadata table (shared by all workers).
#[derive(Debug)]
pub struct Table {
    inner: Mutex<Inner>,
    /// The kernel's list of the namespace's unix sockets.
    listing: PathBuf,
}

#[derive(Debug)]
struct Inner {
    map: HashMap<u64, Meta>,
    collect_at: usize,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                collect_at: GC_FLOOR,
            }),
            listing: PathBuf::from(crate::sockets::OWN_PROC_NET_UNIX),
        }
    }
}

impl Table {
    /// Collects against this list of unix sockets (the namespace the
    /// sockets are made in).
    pub fn set_listing(&mut self, listing: PathBuf) {
        self.listing = listing;
    }

    /// Records a socket, collecting dead entries first when due.
    pub fn insert(&self, inode: u64, meta: Meta) {
        self.collected().map.insert(inode, meta);
    }

    /// Records a socket the table does not hold yet; `false` (nothing
    /// changed) when it holds it already.
    pub fn insert_new(&self, inode: u64, meta: Meta) -> bool {
        match self.collected().map.entry(inode) {
            Entry::Vacant(e) => {
                e.insert(meta);
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// The table, locked, with its dead entries collected first when due.
    fn collected(&self) -> MutexGuard<'_, Inner> {
        let due = {
            let inner = self.inner.lock();
            inner.map.len() >= inner.collect_at
        };
        let live = if due {
            bound::live_inodes(&self.listing)
        } else {
            None
        };
        let mut inner = self.inner.lock();
        if let Some(live) = live {
            inner.map.retain(|inode, _| live.contains(inode));
        }
        if due {
            inner.collect_at = (inner.map.len() * 2).max(GC_FLOOR);
        }
        inner
    }

    /// The metadata of a socket, if it is the netstack's.
    pub fn get(&self, inode: u64) -> Option<Meta> {
        self.inner.lock().map.get(&inode).cloned()
    }

    /// Changes a socket's metadata; `None` if it is not the netstack's.
    pub fn update<R>(&self, inode: u64, f: impl FnOnce(&mut Meta) -> R) -> Option<R> {
        self.inner.lock().map.get_mut(&inode).map(f)
    }

    /// Forgets a socket.
    pub fn remove(&self, inode: u64) {
        self.inner.lock().map.remove(&inode);
    }

    /// How many sockets are recorded.
    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    /// Whether no socket is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_dead_inodes() {
        let t = Table::default();
        // Inodes that no unix socket has (sockfs numbers are far smaller).
        for i in 0..GC_FLOOR as u64 {
            t.insert(u64::MAX - i, Meta::new(libc::AF_INET, Proto::Tcp));
        }
        assert_eq!(t.len(), GC_FLOOR);
        let live = std::os::unix::net::UnixDatagram::unbound().unwrap();
        let inode = {
            use std::os::unix::fs::MetadataExt;
            let fd = std::os::fd::AsFd::as_fd(&live)
                .try_clone_to_owned()
                .unwrap();
            std::fs::File::from(fd).metadata().unwrap().ino()
        };
        t.insert(inode, Meta::new(libc::AF_INET6, Proto::Udp));
        assert_eq!(t.len(), 1, "dead entries dropped at the threshold");
        assert_eq!(t.get(inode).unwrap().domain, libc::AF_INET6);
        assert!(t.update(1, |m| m.domain).is_none());
    }
}
