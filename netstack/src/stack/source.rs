//! The source address of a UDP socket whose host name is a wildcard
//! (autobound, or bound to `0.0.0.0` or `::`): Linux picks its source per
//! destination (127.0.0.1 or ::1 on loopback; a UDP IPv6 socket talking to
//! IPv4 gets `::ffff:127.0.0.1`), a connect fixes it until a disconnect,
//! and a receiver sees each datagram from it. A host name cannot change
//! once bound, so the connected source is kept in the socket's metadata
//! (`Meta::local`, which getsockname reports), and a receiver maps a
//! wildcard sender to the loopback address of the family that reached it.
//! A dual-stack receiver bound to `::` cannot tell that family from the
//! name of a sender bound to `::`: such a sender's datagrams to IPv4 are
//! marked ([`OverV4`]).
//!
//! Owns: setting and clearing that source, the disconnect that releases
//! an autobound port, the IPv4-or-IPv6 rule of a UDP IPv6 socket whose
//! source is v4-mapped, and the sender a receiver sees. Does not own
//! binding (`bind.rs`) or delivery (`local.rs`).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use nix::errno::Errno;
use nix::sys::socket::{self, UnixAddr};
use parking_lot::Mutex;

use super::{Sock, Stack};
use crate::addr;
use crate::ancillary::{fingerprint, Stamps};
use crate::name::Proto;

/// Most names of connected senders kept; the oldest go first.
const MAX_CONNECTED: usize = 4096;

/// Which datagrams from senders bound to `::` went over IPv4: every one
/// of a sender connected to IPv4 (by its name, dropped when it
/// disconnects or another socket binds the name, which only happens once
/// it has closed), and each one a serviced send to IPv4 delivered to a
/// receiver bound to `::` (by its sender's name and a fingerprint of its
/// payload, as `crate::ancillary` finds a datagram's stamp).
#[derive(Debug, Default)]
pub(super) struct OverV4 {
    connected: Mutex<VecDeque<Vec<u8>>>,
    marks: Stamps<bool>,
}

impl OverV4 {
    fn forget(&self, name: &[u8]) {
        let mut c = self.connected.lock();
        if !c.is_empty() {
            c.retain(|n| n != name);
        }
    }
}

/// The loopback address of a family (IPv4 when `v4`).
fn loopback(v4: bool) -> IpAddr {
    match v4 {
        true => IpAddr::V4(Ipv4Addr::LOCALHOST),
        false => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

impl Stack {
    /// Whether the socket's host name is a wildcard address.
    fn wildcard_named(&self, s: &Sock) -> Option<u16> {
        self.bound_name(s.fd.as_fd())
            .filter(|n| addr::is_wildcard(n.addr))
            .map(|n| n.addr.port())
    }

    /// The host name of a socket bound to `::` (not v6-only), raw.
    fn any6_name(&self, s: &Sock) -> Option<Vec<u8>> {
        let ua: UnixAddr = socket::getsockname(s.fd.as_raw_fd()).ok()?;
        let raw = crate::name::abstract_of(&ua)?;
        self.reaches_any6(raw).then(|| raw.to_vec())
    }

    /// Whether `name` is that of a socket bound to `::` (not v6-only).
    pub(super) fn reaches_any6(&self, name: &[u8]) -> bool {
        self.namer
            .decode(name)
            .is_some_and(|n| n.addr.is_ipv6() && addr::is_wildcard(n.addr) && !n.v6only)
    }

    /// Records the source a UDP connect to `dst` (canonical) gives a
    /// socket named by a wildcard: the loopback address of `dst`'s family,
    /// as `ip4_datagram_connect` and `ip6_datagram_connect` fill a source
    /// that is unset. One already set (by an earlier connect) stays, as
    /// in Linux.
    pub fn connected_to(&self, s: &Sock, dst: SocketAddr) {
        let Some(port) = self.wildcard_named(s) else {
            return;
        };
        let source = SocketAddr::new(loopback(dst.is_ipv4()), port);
        let local = self
            .table
            .update(s.inode, |m| *m.local.get_or_insert(source));
        if !local.is_some_and(|l| l.is_ipv4()) {
            return;
        }
        if let Some(name) = self.any6_name(s) {
            let mut c = self.over_v4.connected.lock();
            if !c.contains(&name) {
                if c.len() >= MAX_CONNECTED {
                    c.pop_front();
                }
                c.push_back(name);
            }
        }
    }

    /// A UDP disconnect (`AF_UNSPEC`), as `__udp_disconnect`: no peer
    /// (the host association dissolves too, so any socket may send to it
    /// again), a wildcard-named socket's source is unset again, and a port
    /// the guest did not bind explicitly is released (reported as 0 until
    /// the next autobind, which takes the same port again: the host name
    /// cannot be undone). Datagrams queued on it stay (`requeue.rs`).
    pub fn disconnect(&self, s: &Sock) -> Result<(), Errno> {
        let host_peer = socket::getpeername::<UnixAddr>(s.fd.as_raw_fd()).ok();
        // A relay's pair stays associated (its end is named only for
        // its marks, `crate::mark`).
        let named = host_peer.as_ref().and_then(crate::name::abstract_of);
        let relayed = s.meta.refusals == Some(crate::table::Refusals::Relay);
        if s.meta.proto == Proto::Udp && named.is_some() && !relayed {
            self.keeping_queue(s, || crate::sys::disconnect(s.fd.as_fd()))?;
        }
        let wildcard = self.wildcard_named(s).is_some();
        let release =
            s.meta.is_udp() && !s.meta.port_locked && self.bound_name(s.fd.as_fd()).is_some();
        self.table.update(s.inode, |m| {
            m.peer = None;
            if !relayed {
                m.refusals = None;
            }
            if wildcard {
                m.local = None;
            }
            m.released |= release;
        });
        if let Some(name) = self.any6_name(s) {
            self.over_v4.forget(&name);
        }
        Ok(())
    }

    /// A name is being bound: whatever held it before has closed.
    pub(super) fn name_taken(&self, name: &[u8]) {
        self.over_v4.forget(name);
    }

    /// The name to mark a datagram from `s` to `dst` (canonical) with,
    /// if it goes over IPv4 from a socket bound to `::` that no connect
    /// gave a source.
    pub(super) fn v4_sender(&self, s: &Sock, dst: SocketAddr) -> Option<Vec<u8>> {
        let over_v4 = s.meta.domain == libc::AF_INET6 && dst.is_ipv4() && s.meta.local.is_none();
        over_v4.then(|| self.any6_name(s)).flatten()
    }

    /// Marks (`on`) or unmarks a datagram from `from` as sent over IPv4.
    pub(super) fn mark_v4(&self, from: &[u8], data: &[u8], on: bool) {
        match on {
            true => self.over_v4.marks.record(from, fingerprint(data), true),
            false => drop(self.over_v4.marks.take(from, fingerprint(data), false)),
        }
    }

    /// A UDP IPv6 socket whose source is IPv4 (bound to, or connected
    /// from, `::ffff:a.b.c.d`) reaches IPv4 destinations only: an IPv6
    /// one (canonical) is EAFNOSUPPORT, as Linux answers its connect and
    /// send.
    pub fn check_source(&self, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
        if s.meta.domain == libc::AF_INET6 && dst.is_ipv6() && self.local_addr(s).is_ipv4() {
            return Err(Errno::EAFNOSUPPORT);
        }
        Ok(())
    }

    /// The address a datagram (`data`, or its first bytes) from a sender
    /// named `from` (raw: `name`) shows the receiving socket `to`; `peek`
    /// leaves its mark for the next receive. A wildcard name is a sender
    /// whose source Linux would have picked: the loopback address of the
    /// family that reached `to` (IPv4 for an `AF_INET` receiver or an
    /// IPv6 one whose own address is v4-mapped, IPv6 for one bound to an
    /// IPv6 address; a dual-stack wildcard receiver goes by the sender's
    /// family, and a sender bound to `::` by the datagram's mark).
    pub fn source_seen(
        &self,
        to: &Sock,
        from: SocketAddr,
        name: &[u8],
        data: &[u8],
        peek: bool,
    ) -> SocketAddr {
        if !addr::is_wildcard(from) {
            return from;
        }
        let v4 = match to.meta.domain {
            libc::AF_INET => true,
            _ => {
                let own = addr::canonical(self.local_addr(to));
                match addr::is_wildcard(own) {
                    true => from.is_ipv4() || self.went_over_v4(name, data, peek),
                    false => own.is_ipv4(),
                }
            }
        };
        SocketAddr::new(loopback(v4), from.port())
    }

    /// Whether a datagram from the `::` socket named `name` went over
    /// IPv4 (its mark taken unless `peek`).
    fn went_over_v4(&self, name: &[u8], data: &[u8], peek: bool) -> bool {
        self.over_v4.marks.take(name, fingerprint(data), peek)
            || self.over_v4.connected.lock().iter().any(|n| n == name)
    }
}
