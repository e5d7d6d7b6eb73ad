//! Guest socket addresses: `sockaddr_in`/`sockaddr_in6` bytes as the
//! guest passes them, and the addresses the sandbox's loopback knows.
//!
//! Owns: decoding with the kernel's length and family checks (so errnos
//! match), encoding for a socket of a given domain (IPv4 addresses shown
//! to an `AF_INET6` socket as `::ffff:a.b.c.d`), the canonical form of an
//! address (IPv4-mapped IPv6 as IPv4), and which addresses are sandbox
//! loopback. Does not own: guest memory or names of host sockets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use nix::errno::Errno;

/// `sizeof(struct sockaddr_in)`.
pub const SIN_LEN: usize = 16;
/// `sizeof(struct sockaddr_in6)`.
pub const SIN6_LEN: usize = 28;
/// The shortest `sockaddr_in6` the kernel accepts (RFC 2133, no scope id).
pub const SIN6_LEN_RFC2133: usize = 24;
/// Longest address a guest may pass (`sizeof(struct sockaddr_storage)`).
pub const MAX_LEN: usize = 128;

/// Decodes a guest address for a socket of `domain`. `Ok(None)` is
/// `AF_UNSPEC` (dissolve a UDP association, or 0.0.0.0 to a v4 bind).
pub fn parse(domain: i32, bytes: &[u8]) -> Result<Option<SocketAddr>, Errno> {
    if bytes.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let family = i32::from(u16::from_ne_bytes([bytes[0], bytes[1]]));
    let min = if domain == libc::AF_INET6 {
        SIN6_LEN_RFC2133
    } else {
        SIN_LEN
    };
    if family == libc::AF_UNSPEC {
        return Ok(None);
    }
    if bytes.len() < min {
        return Err(Errno::EINVAL);
    }
    if family != domain {
        return Err(Errno::EAFNOSUPPORT);
    }
    let port = u16::from_be_bytes([bytes[2], bytes[3]]);
    if domain == libc::AF_INET {
        let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
        return Ok(Some(SocketAddr::V4(SocketAddrV4::new(ip, port))));
    }
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&bytes[8..24]);
    let ip = Ipv6Addr::from(octets);
    Ok(Some(SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0))))
}

/// The address as the guest's `struct sockaddr` for a socket of
/// `domain`: IPv4 for `AF_INET`, IPv6 (IPv4 mapped) for `AF_INET6`.
pub fn encode(domain: i32, a: SocketAddr) -> Vec<u8> {
    if domain == libc::AF_INET6 {
        let ip = match a.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        let mut out = vec![0u8; SIN6_LEN];
        out[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        out[2..4].copy_from_slice(&a.port().to_be_bytes());
        out[8..24].copy_from_slice(&ip.octets());
        return out;
    }
    let ip = match canonical(a).ip() {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    };
    let mut out = vec![0u8; SIN_LEN];
    out[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
    out[2..4].copy_from_slice(&a.port().to_be_bytes());
    out[4..8].copy_from_slice(&ip.octets());
    out
}

/// The unspecified address of a domain, port 0 (an unbound socket's name).
pub fn unspecified(domain: i32) -> SocketAddr {
    if domain == libc::AF_INET6 {
        SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0)
    } else {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)
    }
}

/// IPv4-mapped IPv6 addresses as IPv4; flow and scope ids dropped.
pub fn canonical(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => SocketAddr::new(IpAddr::V6(v6), a.port()),
        },
        ip => SocketAddr::new(ip, a.port()),
    }
}

/// Whether a (canonical) address may be bound in the sandbox: loopback
/// (127.0.0.0/8, ::1) or a wildcard (0.0.0.0, ::).
pub fn bindable(a: SocketAddr) -> bool {
    match a.ip() {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
    }
}

/// The sandbox-loopback destination a (canonical) address names, as
/// Linux reads it (0.0.0.0 and :: dial the local host), or `None` when
/// it lies outside the sandbox (egress).
pub fn local_destination(a: SocketAddr) -> Option<SocketAddr> {
    match a.ip() {
        IpAddr::V4(v4) if v4.is_loopback() => Some(a),
        IpAddr::V4(v4) if v4.is_unspecified() => {
            Some(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), a.port()))
        }
        IpAddr::V6(v6) if v6.is_loopback() => Some(a),
        IpAddr::V6(v6) if v6.is_unspecified() => {
            Some(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), a.port()))
        }
        _ => None,
    }
}

/// Whether the address is a wildcard (0.0.0.0 or ::).
pub fn is_wildcard(a: SocketAddr) -> bool {
    a.ip().is_unspecified()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn round_trip_v4_and_v6() {
        let v4 = sa("127.0.0.1:8080");
        assert_eq!(
            parse(libc::AF_INET, &encode(libc::AF_INET, v4)),
            Ok(Some(v4))
        );
        let v6 = sa("[::1]:443");
        assert_eq!(
            parse(libc::AF_INET6, &encode(libc::AF_INET6, v6)),
            Ok(Some(v6))
        );
        let shown = parse(libc::AF_INET6, &encode(libc::AF_INET6, v4))
            .unwrap()
            .unwrap();
        assert_eq!(shown, sa("[::ffff:127.0.0.1]:8080"));
        assert_eq!(canonical(shown), v4);
    }

    #[test]
    fn kernel_checks() {
        assert_eq!(parse(libc::AF_INET, &[2]), Err(Errno::EINVAL));
        assert_eq!(parse(libc::AF_INET, &[2, 0, 0, 80]), Err(Errno::EINVAL));
        let v6 = encode(libc::AF_INET6, sa("[::1]:1"));
        assert_eq!(parse(libc::AF_INET, &v6[..16]), Err(Errno::EAFNOSUPPORT));
        assert_eq!(parse(libc::AF_INET6, &v6[..20]), Err(Errno::EINVAL));
        assert_eq!(parse(libc::AF_INET, &[0; 16]), Ok(None));
    }

    #[test]
    fn loopback_and_egress() {
        assert!(bindable(sa("127.3.0.1:1")) && bindable(sa("[::]:1")));
        assert!(!bindable(sa("10.0.0.1:1")) && !bindable(sa("[fe80::1]:1")));
        assert_eq!(local_destination(sa("0.0.0.0:5")), Some(sa("127.0.0.1:5")));
        assert_eq!(local_destination(sa("[::]:5")), Some(sa("[::1]:5")));
        assert_eq!(local_destination(sa("169.254.169.254:80")), None);
        assert_eq!(
            local_destination(canonical(sa("[::ffff:10.0.0.1]:80"))),
            None
        );
    }
}
