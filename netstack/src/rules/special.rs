//! The special address ranges egress never reaches unless a rule names
//! them explicitly: private, shared, link-local (cloud metadata), the
//! host's loopback, "this network", multicast, reserved and broadcast
//! (IPv4); unspecified, loopback, unique-local, link-local and multicast
//! (IPv6); and every IPv4 range again in its IPv4-compatible (`::a.b.c.d`)
//! and NAT64 (`64:ff9b::a.b.c.d`, RFC 6052's well-known prefix) forms.
//! IPv4-mapped addresses (`::ffff:a.b.c.d`) are the IPv4 address they
//! carry (cidr.rs), so they meet the IPv4 table itself. The local-use
//! NAT64 prefix 64:ff9b:1::/48 (RFC 8215) embeds addresses at
//! operator-chosen positions and is not decoded.
//!
//! Owns the table and finding the most specific range of an address.
//! Does not own the decision (rules.rs).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::cidr::{canonical_ip, Cidr};

/// IPv4 special ranges, with what they are.
const V4: &[(Cidr, &str)] = &[
    (Cidr::v4([0, 0, 0, 0], 8), "in 0.0.0.0/8 (\"this network\")"),
    (Cidr::v4([10, 0, 0, 0], 8), "private (RFC 1918)"),
    (
        Cidr::v4([100, 64, 0, 0], 10),
        "shared address space (100.64.0.0/10, carrier-grade NAT)",
    ),
    (Cidr::v4([127, 0, 0, 0], 8), "loopback of the host"),
    (Cidr::v4([169, 254, 0, 0], 16), "link-local (metadata)"),
    (Cidr::v4([172, 16, 0, 0], 12), "private (RFC 1918)"),
    (Cidr::v4([192, 168, 0, 0], 16), "private (RFC 1918)"),
    (Cidr::v4([224, 0, 0, 0], 4), "multicast"),
    (Cidr::v4([240, 0, 0, 0], 4), "reserved (240.0.0.0/4)"),
    (Cidr::v4([255, 255, 255, 255], 32), "broadcast"),
];

/// IPv6 special ranges, with what they are.
const V6: &[(Cidr, &str)] = &[
    (Cidr::v6([0; 8], 128), "the unspecified address"),
    (
        Cidr::v6([0, 0, 0, 0, 0, 0, 0, 1], 128),
        "loopback of the host",
    ),
    (
        Cidr::v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        "unique local (fc00::/7)",
    ),
    (Cidr::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), "link-local"),
    (Cidr::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast"),
];

/// IPv6 /96 prefixes whose last 32 bits are an IPv4 address.
const EMBEDDINGS: &[(Cidr, &str)] = &[
    (Cidr::v6([0; 8], 96), "IPv4-compatible"),
    (Cidr::v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96), "NAT64"),
];

/// A special range an address is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Special {
    /// The range, in the family and form of the address.
    pub net: Cidr,
    /// What it is, for the denial's reason ("private (RFC 1918)").
    pub what: String,
}

/// The smallest special range holding `ip`, if any.
pub fn most_specific(ip: IpAddr) -> Option<Special> {
    let mut found: Vec<Special> = Vec::new();
    match canonical_ip(ip) {
        IpAddr::V4(a) => found.extend(v4_ranges(a)),
        IpAddr::V6(a) => {
            found.extend(
                V6.iter()
                    .filter(|(net, _)| net.contains(IpAddr::V6(a)))
                    .map(|(net, what)| Special {
                        net: *net,
                        what: (*what).to_string(),
                    }),
            );
            found.extend(embedded_ranges(a));
        }
    }
    found.into_iter().max_by_key(|s| s.net.prefix())
}

fn v4_ranges(a: Ipv4Addr) -> impl Iterator<Item = Special> {
    V4.iter()
        .filter(move |(net, _)| net.contains(IpAddr::V4(a)))
        .map(|(net, what)| Special {
            net: *net,
            what: (*what).to_string(),
        })
}

/// The IPv4 special ranges of the address `a` embeds, in `a`'s form.
fn embedded_ranges(a: Ipv6Addr) -> Vec<Special> {
    let mut out = Vec::new();
    for (base, form) in EMBEDDINGS {
        if !base.contains(IpAddr::V6(a)) {
            continue;
        }
        let IpAddr::V6(base_addr) = base.addr() else {
            continue;
        };
        let v4 = Ipv4Addr::from((u128::from(a) & 0xffff_ffff) as u32);
        for s in v4_ranges(v4) {
            let IpAddr::V4(net4) = s.net.addr() else {
                continue;
            };
            let bits = u128::from(base_addr) | u128::from(u32::from(net4));
            if let Some(net) = Cidr::new(IpAddr::V6(bits.into()), 96 + s.net.prefix()) {
                out.push(Special {
                    net,
                    what: format!("{}, in {form} form", s.what),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(s: &str) -> Option<String> {
        most_specific(s.parse().unwrap()).map(|s| format!("{} {}", s.net, s.what))
    }

    #[test]
    fn ordinary_addresses_are_not_special() {
        for a in [
            "203.0.113.7",
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2001:db8::1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "64:ff9b::808:808",
            "64:ff9b:1::a00:1",
        ] {
            assert_eq!(what(a), None, "{a}");
        }
    }

    #[test]
    fn most_specific_range_is_named() {
        assert_eq!(
            what("255.255.255.255").unwrap(),
            "255.255.255.255/32 broadcast"
        );
        assert_eq!(what("::1").unwrap(), "::1/128 loopback of the host");
        assert_eq!(what("::").unwrap(), "::/128 the unspecified address");
        assert_eq!(
            what("::ffff:169.254.169.254").unwrap(),
            "169.254.0.0/16 link-local (metadata)"
        );
        assert_eq!(
            what("::10.1.2.3").unwrap(),
            "::a00:0/104 private (RFC 1918), in IPv4-compatible form"
        );
        assert_eq!(
            what("64:ff9b::a9fe:a9fe").unwrap(),
            "64:ff9b::a9fe:0/112 link-local (metadata), in NAT64 form"
        );
    }
}
