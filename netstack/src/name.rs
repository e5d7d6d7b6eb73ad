//! The naming scheme: every bound netstack socket is a host `AF_UNIX`
//! socket bound to an abstract name that spells its TCP/UDP address,
//! behind a per-sandbox random token so sandboxes never collide:
//!
//! `\0sbx-<token>/tcp/127.0.0.1/8080`, `\0sbx-<token>/udp/::1/53`,
//! `\0sbx-<token>/tcp/::/8080/v6only` (a `::` socket with IPV6_V6ONLY,
//! which IPv4 clients must not reach).
//!
//! Owns: encoding and decoding names. Does not own: binding or the
//! choice of address (see [`crate::stack`]).

use std::net::SocketAddr;

use crate::addr;

/// The transport a name belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
}

impl std::fmt::Display for Proto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Proto {
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

/// A decoded name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    pub proto: Proto,
    /// Canonical (IPv4-mapped addresses as IPv4).
    pub addr: SocketAddr,
    /// A `::` socket that takes IPv6 only.
    pub v6only: bool,
}

/// Names for one sandbox.
#[derive(Clone, Debug)]
pub struct Namer {
    /// `sbx-<token>/`
    prefix: String,
}

impl Namer {
    /// Names behind this token (hex digits, in practice random).
    pub fn new(token: &str) -> Namer {
        Namer {
            prefix: format!("sbx-{token}/"),
        }
    }

    /// Names behind a fresh random token (16 hex digits).
    pub fn random() -> Namer {
        Namer::new(&format!("{:016x}", random_u64()))
    }

    /// The abstract name (without the leading NUL) of `addr`.
    pub fn encode(&self, proto: Proto, addr: SocketAddr, v6only: bool) -> Vec<u8> {
        let a = addr::canonical(addr);
        let only = if v6only && a.is_ipv6() && addr::is_wildcard(a) {
            "/v6only"
        } else {
            ""
        };
        format!(
            "{}{}/{}/{}{only}",
            self.prefix,
            proto.as_str(),
            a.ip(),
            a.port()
        )
        .into_bytes()
    }

    /// A name that reads as `addr` but is distinct per `tag`: the egress
    /// end a reply from the remote `addr` comes from (several guest
    /// sockets may talk to one remote at once). Decodes as `addr`.
    pub fn encode_via(&self, proto: Proto, addr: SocketAddr, tag: u64) -> Vec<u8> {
        let mut name = self.encode(proto, addr, false);
        name.extend_from_slice(format!("/via-{tag:x}").as_bytes());
        name
    }

    /// A name that reads as `addr` for a later member of an SO_REUSEPORT
    /// group (`crate::reuseport`); distinct per `tag`.
    pub fn encode_member(&self, proto: Proto, addr: SocketAddr, v6only: bool, tag: u64) -> Vec<u8> {
        let mut name = self.encode(proto, addr, v6only);
        name.extend_from_slice(format!("/rp-{tag:x}").as_bytes());
        name
    }

    /// Whether `name` (an abstract name without its NUL) is behind this
    /// stack's token: any of its names, relays' and members' included.
    pub fn owns(&self, name: &[u8]) -> bool {
        name.starts_with(self.prefix.as_bytes())
    }

    /// Decodes one of this sandbox's names (without the leading NUL).
    pub fn decode(&self, name: &[u8]) -> Option<Named> {
        let text = std::str::from_utf8(name).ok()?;
        let rest = text.strip_prefix(self.prefix.as_str())?;
        let mut parts = rest.split('/');
        let proto = match parts.next()? {
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            _ => return None,
        };
        let ip = parts.next()?.parse().ok()?;
        let port = parts.next()?.parse().ok()?;
        let mut v6only = false;
        for (i, part) in parts.enumerate() {
            match part {
                "v6only" if i == 0 => v6only = true,
                tag if i < 2 && (tag.starts_with("via-") || tag.starts_with("rp-")) => {}
                _ => return None,
            }
        }
        Some(Named {
            proto,
            addr: SocketAddr::new(ip, port),
            v6only,
        })
    }
}

/// The abstract name of a unix address, if it is one. Safe for the
/// zero-length address a kernel reports for an unnamed peer (nix's
/// `as_abstract` asserts on it).
pub fn abstract_of(ua: &nix::sys::socket::UnixAddr) -> Option<&[u8]> {
    use nix::sys::socket::SockaddrLike;
    let min = std::mem::size_of::<libc::sa_family_t>();
    if (ua.len() as usize) <= min {
        return None;
    }
    ua.as_abstract()
}

/// 64 random bits (std's hasher keys come from getrandom once per thread
/// and change with every `RandomState`; what is hashed needs no host
/// call, so a bind's port costs none).
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(DRAWN.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = Namer::new("ab12");
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let name = n.encode(Proto::Tcp, a, false);
        assert_eq!(name, b"sbx-ab12/tcp/127.0.0.1/8080");
        let d = n.decode(&name).unwrap();
        assert_eq!((d.proto, d.addr, d.v6only), (Proto::Tcp, a, false));
        let w: SocketAddr = "[::]:53".parse().unwrap();
        let name = n.encode(Proto::Udp, w, true);
        assert_eq!(name, b"sbx-ab12/udp/::/53/v6only");
        assert!(n.decode(&name).unwrap().v6only);
        let mapped: SocketAddr = "[::ffff:127.0.0.2]:7".parse().unwrap();
        assert_eq!(
            n.encode(Proto::Tcp, mapped, true),
            b"sbx-ab12/tcp/127.0.0.2/7"
        );
        let member = n.encode_member(Proto::Udp, w, true, 0x1f);
        assert_eq!(member, b"sbx-ab12/udp/::/53/v6only/rp-1f");
        assert_eq!(n.decode(&member), n.decode(&n.encode(Proto::Udp, w, true)));
        assert!(n.decode(b"sbx-ab12/udp/::/53/rp-1/v6only").is_none());
    }

    #[test]
    fn foreign_names_are_not_ours() {
        let n = Namer::new("ab12");
        assert!(n.decode(b"sbx-cd34/tcp/127.0.0.1/1").is_none());
        assert!(n.decode(b"sbx-ab12/sctp/127.0.0.1/1").is_none());
        assert!(n.decode(b"sbx-ab12/tcp/127.0.0.1/99999").is_none());
        assert!(n.decode(b"sbx-ab12/tcp/127.0.0.1/1/x").is_none());
        assert!(n.decode(&[0xff, 0xfe]).is_none());
        assert_ne!(Namer::random().prefix, Namer::random().prefix);
    }
}
