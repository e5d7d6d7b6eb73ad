//! The source address of a UDP socket whose host name is a wildcard
//! (autobound, or bound to `0.0.0.0` or `::`): Linux picks its source per
//! destination (127.0.0.1 or ::1 on loopback; a UDP IPv6 socket talking to
//! IPv4 gets `::ffff:127.0.0.1`), a connect fixes it until a disconnect,
//! and a receiver sees each datagram from it. A host name cannot change
//! once bound, so the connected source is kept in the socket's metadata
//! (`Meta::local`, which getsockname reports), and a receiver maps a
//! wildcard sender to the loopback address of the family that reached it.
//!
//! Owns: setting and clearing that source, the IPv4-or-IPv6 rule of a UDP
//! IPv6 socket whose source is v4-mapped, and the sender a receiver sees.
//! Does not own binding (`bind.rs`) or delivery (`local.rs`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsFd;

use nix::errno::Errno;

use super::{Sock, Stack};
use crate::addr;

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
        self.table.update(s.inode, |m| {
            m.local.get_or_insert(source);
        });
    }

    /// A UDP disconnect (`AF_UNSPEC`): no peer, and a wildcard-named
    /// socket's source is unset again (`__udp_disconnect` resets an
    /// address the socket was not bound to).
    pub fn disconnect(&self, s: &Sock) {
        let wildcard = self.wildcard_named(s).is_some();
        self.table.update(s.inode, |m| {
            m.peer = None;
            if wildcard {
                m.local = None;
            }
        });
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

    /// The address a datagram from a sender named `from` shows the
    /// receiving socket `to`. A wildcard name is a sender whose source
    /// Linux would have picked: the loopback address of the family that
    /// reached `to` (IPv4 for an `AF_INET` receiver or an IPv6 one whose
    /// own address is v4-mapped, IPv6 for one bound to an IPv6 address;
    /// a dual-stack wildcard receiver goes by the sender's family).
    pub fn source_seen(&self, to: &Sock, from: SocketAddr) -> SocketAddr {
        if !addr::is_wildcard(from) {
            return from;
        }
        let v4 = match to.meta.domain {
            libc::AF_INET => true,
            _ => {
                let own = addr::canonical(self.local_addr(to));
                match addr::is_wildcard(own) {
                    true => from.is_ipv4(),
                    false => own.is_ipv4(),
                }
            }
        };
        SocketAddr::new(loopback(v4), from.port())
    }
}
