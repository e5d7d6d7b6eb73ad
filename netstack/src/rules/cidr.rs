//! An IP network in CIDR notation (`203.0.113.0/24`, `2001:db8::/32`).
//!
//! Owns: parsing, containment of an address, and containment of one
//! network in another. IPv4-mapped IPv6 networks (`::ffff:a.b.c.d/p`,
//! p >= 96) are stored as the IPv4 network they are, so one rule matches
//! a destination whichever family spells it. Does not own what the
//! networks mean (rules.rs, special.rs).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A network: an address with every bit past `prefix` zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The network of `addr`/`prefix`; `None` if the prefix is too long
    /// for the family or bits past it are set.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        let cidr = Cidr::canonical(addr, prefix)?;
        (cidr.masked() == cidr.addr).then_some(cidr)
    }

    /// The network of exactly one address.
    pub fn host(addr: IpAddr) -> Cidr {
        let addr = canonical_ip(addr);
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        Cidr { addr, prefix }
    }

    /// `const` constructor for the built-in tables (IPv4).
    pub const fn v4(a: [u8; 4], prefix: u8) -> Cidr {
        Cidr {
            addr: IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
            prefix,
        }
    }

    /// `const` constructor for the built-in tables (IPv6).
    pub const fn v6(segments: [u16; 8], prefix: u8) -> Cidr {
        let s = segments;
        Cidr {
            addr: IpAddr::V6(Ipv6Addr::new(
                s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
            )),
            prefix,
        }
    }

    /// Parses `ADDR/PREFIX`; host bits set is an error that names the
    /// network meant.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a network (ADDR/PREFIX)"))?;
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{addr:?} is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = match prefix.parse() {
            Ok(p) if p <= max && !prefix.starts_with('+') => p,
            _ => {
                return Err(format!(
                    "prefix {prefix:?} must be a number from 0 to {max}"
                ))
            }
        };
        let want =
            Cidr::canonical(addr, prefix).ok_or_else(|| format!("prefix /{prefix} is too long"))?;
        match want.masked() == want.addr {
            true => Ok(want),
            false => Err(format!(
                "{text} has bits set past the prefix (did you mean {}?)",
                Cidr {
                    addr: want.masked(),
                    ..want
                }
            )),
        }
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` is in this network (IPv4-mapped addresses count as
    /// the IPv4 address they carry).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical_ip(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => mask32(u32::from(a), self.prefix) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                mask128(u128::from(a), self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }

    /// Whether every address of `self` is in `outer`.
    pub fn is_within(&self, outer: &Cidr) -> bool {
        self.prefix >= outer.prefix && outer.contains(self.addr)
    }

    fn canonical(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        match addr {
            IpAddr::V4(_) if prefix <= 32 => Some(Cidr { addr, prefix }),
            IpAddr::V6(v6) if prefix <= 128 => match v6.to_ipv4_mapped() {
                Some(v4) if prefix >= 96 => Some(Cidr {
                    addr: IpAddr::V4(v4),
                    prefix: prefix - 96,
                }),
                _ => Some(Cidr { addr, prefix }),
            },
            _ => None,
        }
    }

    fn masked(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(mask32(u32::from(a), self.prefix).into()),
            IpAddr::V6(a) => IpAddr::V6(mask128(u128::from(a), self.prefix).into()),
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is; others as given.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn mask32(a: u32, prefix: u8) -> u32 {
    a & !(u32::MAX.checked_shr(u32::from(prefix)).unwrap_or(0))
}

fn mask128(a: u128, prefix: u8) -> u128 {
    a & !(u128::MAX.checked_shr(u32::from(prefix)).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_contains() {
        let net = Cidr::parse("203.0.113.0/24").unwrap();
        assert!(net.contains(ip("203.0.113.255")));
        assert!(net.contains(ip("::ffff:203.0.113.7")));
        assert!(!net.contains(ip("203.0.114.0")));
        assert!(!net.contains(ip("::203.0.113.7")));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("255.255.255.255")));
        assert!(!all.contains(ip("2001:db8::1")));
        let v6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")));
        assert!(!v6.contains(ip("2001:db9::")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("1.2.3.4/32").unwrap().contains(ip("1.2.3.4")));
    }

    #[test]
    fn mapped_networks_are_ipv4() {
        let net = Cidr::parse("::ffff:10.0.0.0/104").unwrap();
        assert_eq!(net, Cidr::parse("10.0.0.0/8").unwrap());
        assert_eq!(net.to_string(), "10.0.0.0/8");
        assert_eq!(Cidr::host(ip("::ffff:1.2.3.4")), Cidr::host(ip("1.2.3.4")));
    }

    #[test]
    fn within() {
        let ten = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(Cidr::parse("10.1.0.0/16").unwrap().is_within(&ten));
        assert!(ten.is_within(&ten));
        assert!(!Cidr::parse("0.0.0.0/0").unwrap().is_within(&ten));
        assert!(!Cidr::parse("::/0").unwrap().is_within(&ten));
    }

    #[test]
    fn bad_networks() {
        for (text, want) in [
            ("10.0.0.1/8", "did you mean 10.0.0.0/8?"),
            ("10.0.0.0/33", "from 0 to 32"),
            ("10.0.0.0/+8", "from 0 to 32"),
            ("::/129", "from 0 to 128"),
            ("10.0.0/8", "not an IP address"),
            ("10.0.0.0", "not a network"),
        ] {
            let e = Cidr::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
