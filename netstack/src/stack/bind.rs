//! The bind rules of one sandbox's netstack: loopback and wildcard
//! addresses only, ephemeral ports (explicit port 0, the autobind before
//! a connect or first send — a UDP socket's to its family's wildcard —
//! and listen's, never a host loopback port an egress rule names),
//! and the conflicts the names
//! cannot show (a wildcard against a specific address of the same port,
//! `::` against IPv4 unless v6-only), checked against the sandbox's bound
//! names under one lock; SO_REUSEPORT members join a group
//! (`crate::reuseport`). Does not own the names themselves
//! (`crate::name`) or the conflict arithmetic (`crate::bound`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use nix::errno::Errno;
use nix::sys::socket::{self, UnixAddr};

use super::{Sock, Stack, EPHEMERAL};
use crate::addr;
use crate::bound;
use crate::name::Named;
use crate::table::Meta;

/// Attempts at a free ephemeral port before EADDRINUSE.
const EPHEMERAL_TRIES: usize = 128;

impl Stack {
    /// bind(2) to `a`: EADDRNOTAVAIL outside loopback and wildcards,
    /// EINVAL when already bound, EADDRINUSE on a conflict; port 0 picks
    /// a free ephemeral port.
    pub fn bind(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let a = addr::canonical(a);
        if s.meta.domain == libc::AF_INET6 && a.is_ipv4() && s.meta.v6only() {
            return Err(Errno::EINVAL);
        }
        if !addr::bindable(a) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        if self.bound_name(s.fd.as_fd()).is_some() {
            return Err(Errno::EINVAL);
        }
        let _held = self.bind_lock.lock();
        if a.port() != 0 {
            self.bind_checked(s, a)?;
            self.table.update(s.inode, |m| m.port_locked = true);
            return Ok(());
        }
        self.on_ephemeral_port(s.meta.proto, |port| {
            let mut p = a;
            p.set_port(port);
            self.bind_checked(s, p)
        })
    }

    fn bind_checked(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let new = Named {
            proto: s.meta.proto,
            addr: a,
            v6only: s.meta.v6only(),
        };
        let listing = self.sockets.listing();
        let taken = bound::bound_on(&listing, &self.namer, new.proto, a.port());
        let conflicting: Vec<_> = taken
            .iter()
            .filter(|(_, old)| bound::conflicts(&new, old))
            .collect();
        if conflicting.is_empty() {
            return self.bind_name(s, a);
        }
        let joins = self.reuses_port(&s.meta)
            && conflicting.iter().all(|(inode, old)| {
                *old == new && self.table.get(*inode).is_some_and(|m| self.reuses_port(&m))
            });
        match joins {
            true => self.bind_member(s, a),
            false => Err(Errno::EADDRINUSE),
        }
    }

    fn reuses_port(&self, meta: &Meta) -> bool {
        meta.options.flag(libc::SOL_SOCKET, libc::SO_REUSEPORT)
    }

    /// Binds a later member of an SO_REUSEPORT group to a name of its own
    /// that reads as `a` (see `crate::reuseport`).
    fn bind_member(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let v6only = s.meta.v6only();
        let primary = self.namer.encode(s.meta.proto, a, v6only);
        let tag = crate::name::random_u64();
        let member = self.namer.encode_member(s.meta.proto, a, v6only, tag);
        socket::bind(s.fd.as_raw_fd(), &UnixAddr::new_abstract(&member)?)?;
        self.name_taken(&member);
        match self.groups.add(&primary, member) {
            true => Ok(()),
            false => Err(Errno::EADDRINUSE),
        }
    }

    fn bind_name(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let name = self.namer.encode(s.meta.proto, a, s.meta.v6only());
        let ua = UnixAddr::new_abstract(&name)?;
        socket::bind(s.fd.as_raw_fd(), &ua)?;
        self.name_taken(&name);
        Ok(())
    }

    /// Binds an unbound socket to an ephemeral port of the loopback
    /// address that reaches `toward`: a TCP socket before its connect (its
    /// name is then the source the listener's side reports), a UDP socket
    /// before an egress send.
    pub fn autobind(&self, s: &Sock, toward: SocketAddr) -> Result<(), Errno> {
        if self.bound_name(s.fd.as_fd()).is_some() {
            return Ok(());
        }
        self.bind_ephemeral(s, toward)
    }

    /// [`Stack::autobind`] for a socket that is most likely unbound (a TCP
    /// client's before its connect): binds without asking first, and
    /// takes the kernel's EINVAL (a unix socket is bound already, checked
    /// before any conflict) as bound. Saves the `getsockname` of the
    /// common case; a bound socket pays a refused bind instead.
    pub fn autobind_unbound(&self, s: &Sock, toward: SocketAddr) -> Result<(), Errno> {
        match self.bind_ephemeral(s, toward) {
            Err(Errno::EINVAL) => Ok(()),
            r => r,
        }
    }

    /// Binds `s` to a free ephemeral port of the loopback address that
    /// reaches `toward`.
    fn bind_ephemeral(&self, s: &Sock, toward: SocketAddr) -> Result<(), Errno> {
        let ip = match toward.ip() {
            IpAddr::V4(v4) if v4.is_loopback() => IpAddr::V4(v4),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        self.on_ephemeral_port(s.meta.proto, |port| {
            self.bind_name(s, SocketAddr::new(ip, port))
        })
    }

    /// Binds an unbound UDP socket (or a ping socket before its first
    /// echo) to an ephemeral port of its family's
    /// wildcard address, as the kernel's autobind before a connect or a
    /// first send picks a port and no address: the socket then takes
    /// datagrams to any loopback address of that port (IPv4 ones too,
    /// unless v6-only), and its source is chosen per destination
    /// ([`Stack::connected_to`], [`Stack::source_seen`]). A bound socket
    /// is left alone, but for the port a disconnect released, which it
    /// takes again.
    pub fn autobind_port(&self, s: &Sock) -> Result<(), Errno> {
        // A relay's end is named by the relay (`crate::mark`), and takes
        // no port of the sandbox's.
        if s.meta.refusals == Some(crate::table::Refusals::Relay) {
            return Ok(());
        }
        if self.bound_name(s.fd.as_fd()).is_some() {
            if s.meta.released {
                self.table.update(s.inode, |m| m.released = false);
            }
            return Ok(());
        }
        let any = addr::unspecified(s.meta.domain);
        self.on_ephemeral_port(s.meta.proto, |port| {
            self.bind_name(s, SocketAddr::new(any.ip(), port))
        })
    }

    /// Binds a socket about to listen that has no name yet (and no
    /// peer) to its family's wildcard address and an ephemeral port, as
    /// TCP's listen autobinds; a bound or connected socket is left alone.
    pub fn bind_listener(&self, s: &Sock) -> Result<(), Errno> {
        let fd = s.fd.as_raw_fd();
        if self.bound_name(s.fd.as_fd()).is_some() || socket::getpeername::<UnixAddr>(fd).is_ok() {
            return Ok(());
        }
        match self.bind(s, addr::unspecified(s.meta.domain)) {
            Err(Errno::EINVAL) => Ok(()),
            r => r,
        }
    }

    /// `bind` of a random ephemeral port, tried again on another while
    /// the port is taken (EADDRINUSE), at most [`EPHEMERAL_TRIES`] draws.
    fn on_ephemeral_port(
        &self,
        proto: crate::Proto,
        mut bind: impl FnMut(u16) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        for _ in 0..EPHEMERAL_TRIES {
            let Some(port) = self.ephemeral_port(proto) else {
                continue;
            };
            match bind(port) {
                Err(Errno::EADDRINUSE) => continue,
                r => return r,
            }
        }
        Err(Errno::EADDRINUSE)
    }

    /// A random ephemeral port, or `None` when the one drawn is a host
    /// loopback port an egress rule names (`--allow-net 127.0.0.1:PORT`):
    /// a connect to that port on the loopback goes to the host
    /// ([`crate::Egress::takes_loopback`]), so a socket the sandbox
    /// names there by chance could not be reached by its own name. The
    /// kernel never hands out a port in use either; a caller counts
    /// `None` as a draw that found the port taken.
    fn ephemeral_port(&self, proto: crate::Proto) -> Option<u16> {
        let port = random_port();
        let host = |ip: IpAddr| self.egress.takes_loopback(SocketAddr::new(ip, port), proto);
        match host(Ipv4Addr::LOCALHOST.into()) || host(Ipv6Addr::LOCALHOST.into()) {
            true => None,
            false => Some(port),
        }
    }
}

fn random_port() -> u16 {
    let span = u64::from(EPHEMERAL.1 - EPHEMERAL.0) + 1;
    EPHEMERAL.0 + (crate::name::random_u64() % span) as u16
}
