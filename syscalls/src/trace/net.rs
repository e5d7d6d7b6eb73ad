//! Decoding the socket calls' arguments for `--trace`, strace-style:
//! `socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, IPPROTO_TCP)`,
//! `connect(4, {AF_INET, 127.0.0.1:8080}, 16)`,
//! `setsockopt(4, IPPROTO_TCP, TCP_NODELAY, [1], 4)`.
//!
//! Owns: the names of address families, socket types, protocols, option
//! levels and options, message flags, and printing a socket address read
//! from guest memory. Does not own which argument is which (the
//! signatures in `mod.rs`).
//!
//! A guest's address and length are hostile like any argument: at most
//! [`SOCKADDR_SHOWN`] bytes are read, and an address that cannot be read
//! or is too short for its family is shown as its pointer.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::{flag_names, quoted};
use crate::guest::Guest;

/// The most of a socket address read (a `sockaddr_storage`).
const SOCKADDR_SHOWN: usize = 128;

/// `socket`'s domain: `AF_INET`, or the number.
pub(super) fn domain(raw: u64) -> String {
    family_name(raw as u16).map_or_else(|| (raw as i32).to_string(), str::to_string)
}

fn family_name(family: u16) -> Option<&'static str> {
    Some(match i32::from(family) {
        libc::AF_UNSPEC => "AF_UNSPEC",
        libc::AF_UNIX => "AF_UNIX",
        libc::AF_INET => "AF_INET",
        libc::AF_INET6 => "AF_INET6",
        libc::AF_NETLINK => "AF_NETLINK",
        libc::AF_PACKET => "AF_PACKET",
        _ => return None,
    })
}

/// `socket`'s type with its flags: `SOCK_STREAM|SOCK_CLOEXEC`.
pub(super) fn sock_type(raw: u64) -> String {
    let raw = raw as u32;
    let flags = raw & (SOCK_FLAGS_MASK);
    let base = match (raw & !SOCK_FLAGS_MASK) as i32 {
        libc::SOCK_STREAM => "SOCK_STREAM".to_string(),
        libc::SOCK_DGRAM => "SOCK_DGRAM".to_string(),
        libc::SOCK_RAW => "SOCK_RAW".to_string(),
        libc::SOCK_SEQPACKET => "SOCK_SEQPACKET".to_string(),
        other => format!("{other:#x}"),
    };
    match flags {
        0 => base,
        f => format!("{base}|{}", sock_flags(f.into())),
    }
}

const SOCK_FLAGS_MASK: u32 = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u32;

/// `accept4`'s flags (and `socket`'s type flags).
pub(super) fn sock_flags(raw: u64) -> String {
    let names = [
        (libc::SOCK_NONBLOCK as u32, "SOCK_NONBLOCK"),
        (libc::SOCK_CLOEXEC as u32, "SOCK_CLOEXEC"),
    ];
    flag_names(raw as u32, &names, "0")
}

/// `socket`'s protocol: the IP protocols by name, others by number.
pub(super) fn protocol(raw: u64) -> String {
    match raw as i32 {
        libc::IPPROTO_TCP => "IPPROTO_TCP".into(),
        libc::IPPROTO_UDP => "IPPROTO_UDP".into(),
        libc::IPPROTO_ICMP => "IPPROTO_ICMP".into(),
        libc::IPPROTO_ICMPV6 => "IPPROTO_ICMPV6".into(),
        other => other.to_string(),
    }
}

/// An option's level: `SOL_SOCKET`, `IPPROTO_TCP`...
pub(super) fn level(raw: u64) -> String {
    match raw as i32 {
        libc::SOL_SOCKET => "SOL_SOCKET".into(),
        libc::IPPROTO_IP => "IPPROTO_IP".into(),
        libc::IPPROTO_IPV6 => "IPPROTO_IPV6".into(),
        other => protocol(other as u64),
    }
}

/// An option's name at `level`: `SO_REUSEADDR`, `TCP_NODELAY`...; the
/// number when it has none here.
pub(super) fn option(level: u64, raw: u64) -> String {
    let names: &[(i32, &str)] = match level as i32 {
        libc::SOL_SOCKET => &[
            (libc::SO_REUSEADDR, "SO_REUSEADDR"),
            (libc::SO_TYPE, "SO_TYPE"),
            (libc::SO_ERROR, "SO_ERROR"),
            (libc::SO_BROADCAST, "SO_BROADCAST"),
            (libc::SO_SNDBUF, "SO_SNDBUF"),
            (libc::SO_RCVBUF, "SO_RCVBUF"),
            (libc::SO_KEEPALIVE, "SO_KEEPALIVE"),
            (libc::SO_LINGER, "SO_LINGER"),
            (libc::SO_REUSEPORT, "SO_REUSEPORT"),
            (libc::SO_RCVTIMEO, "SO_RCVTIMEO"),
            (libc::SO_SNDTIMEO, "SO_SNDTIMEO"),
            (libc::SO_ACCEPTCONN, "SO_ACCEPTCONN"),
            (libc::SO_DOMAIN, "SO_DOMAIN"),
            (libc::SO_PROTOCOL, "SO_PROTOCOL"),
            (libc::SO_BINDTODEVICE, "SO_BINDTODEVICE"),
        ],
        libc::IPPROTO_TCP => &[
            (libc::TCP_NODELAY, "TCP_NODELAY"),
            (libc::TCP_MAXSEG, "TCP_MAXSEG"),
            (libc::TCP_KEEPIDLE, "TCP_KEEPIDLE"),
            (libc::TCP_KEEPINTVL, "TCP_KEEPINTVL"),
            (libc::TCP_KEEPCNT, "TCP_KEEPCNT"),
            (libc::TCP_INFO, "TCP_INFO"),
            (libc::TCP_QUICKACK, "TCP_QUICKACK"),
            (libc::TCP_CONGESTION, "TCP_CONGESTION"),
        ],
        libc::IPPROTO_IP => &[
            (libc::IP_TOS, "IP_TOS"),
            (libc::IP_TTL, "IP_TTL"),
            (libc::IP_MULTICAST_TTL, "IP_MULTICAST_TTL"),
            (libc::IP_ADD_MEMBERSHIP, "IP_ADD_MEMBERSHIP"),
            (libc::IP_RECVERR, "IP_RECVERR"),
        ],
        libc::IPPROTO_IPV6 => &[
            (libc::IPV6_V6ONLY, "IPV6_V6ONLY"),
            (libc::IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS"),
            (libc::IPV6_RECVERR, "IPV6_RECVERR"),
        ],
        _ => &[],
    };
    let raw = raw as i32;
    names
        .iter()
        .find(|(n, _)| *n == raw)
        .map_or_else(|| raw.to_string(), |(_, name)| name.to_string())
}

/// An option's value of `len` bytes at `addr`: `[1]` when it is an int
/// the guest's memory holds, else the pointer.
pub(super) fn option_value(out: &mut String, addr: u64, len: u64, guest: &dyn Guest) {
    let mut int = [0u8; 4];
    if len == 4 && guest.read_mem(addr, &mut int).is_ok() {
        let _ = write!(out, "[{}]", i32::from_ne_bytes(int));
    } else if addr == 0 {
        out.push_str("NULL");
    } else {
        let _ = write!(out, "{addr:#x}");
    }
}

/// `send`/`recv` flags: `MSG_DONTWAIT|MSG_NOSIGNAL`.
pub(super) fn msg_flags(raw: u64) -> String {
    let names = [
        (libc::MSG_OOB as u32, "MSG_OOB"),
        (libc::MSG_PEEK as u32, "MSG_PEEK"),
        (libc::MSG_DONTROUTE as u32, "MSG_DONTROUTE"),
        (libc::MSG_TRUNC as u32, "MSG_TRUNC"),
        (libc::MSG_DONTWAIT as u32, "MSG_DONTWAIT"),
        (libc::MSG_EOR as u32, "MSG_EOR"),
        (libc::MSG_WAITALL as u32, "MSG_WAITALL"),
        (libc::MSG_CONFIRM as u32, "MSG_CONFIRM"),
        (libc::MSG_ERRQUEUE as u32, "MSG_ERRQUEUE"),
        (libc::MSG_NOSIGNAL as u32, "MSG_NOSIGNAL"),
        (libc::MSG_MORE as u32, "MSG_MORE"),
        (libc::MSG_CMSG_CLOEXEC as u32, "MSG_CMSG_CLOEXEC"),
    ];
    flag_names(raw as u32, &names, "0")
}

/// The socket address of `len` bytes at `addr`, read from the guest:
/// `{AF_INET, 127.0.0.1:80}`, `{AF_INET6, [::1]:80}`, `{AF_UNIX, "/p"}`,
/// `{AF_UNIX, @"abstract"}`; `NULL`, or the pointer when it cannot be
/// read or is too short for its family.
pub(super) fn sockaddr(out: &mut String, addr: u64, len: u64, guest: &dyn Guest) {
    if addr == 0 {
        out.push_str("NULL");
        return;
    }
    let mut buf = [0u8; SOCKADDR_SHOWN];
    let len = (len as usize).min(SOCKADDR_SHOWN);
    let bytes = &mut buf[..len];
    if len < 2 || guest.read_mem(addr, bytes).is_err() {
        let _ = write!(out, "{addr:#x}");
        return;
    }
    match format_sockaddr(bytes) {
        Some(text) => out.push_str(&text),
        None => {
            let _ = write!(out, "{addr:#x}");
        }
    }
}

/// A socket address's text from its bytes; `None` when too short.
fn format_sockaddr(bytes: &[u8]) -> Option<String> {
    let family = u16::from_ne_bytes([bytes[0], bytes[1]]);
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    Some(match i32::from(family) {
        libc::AF_UNSPEC => "{AF_UNSPEC}".into(),
        libc::AF_INET => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            format!("{{AF_INET, {}:{}}}", Ipv4Addr::from(ip), port(bytes))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            let scope = match bytes.get(24..28) {
                Some(s) => u32::from_ne_bytes(s.try_into().ok()?),
                None => 0,
            };
            let scope = if scope != 0 {
                format!("%{scope}")
            } else {
                String::new()
            };
            format!(
                "{{AF_INET6, [{}{scope}]:{}}}",
                Ipv6Addr::from(ip),
                port(bytes)
            )
        }
        libc::AF_UNIX => {
            let name = &bytes[2..];
            let mut text = String::from("{AF_UNIX");
            match name.first() {
                None => {}
                Some(0) => {
                    text.push_str(", @");
                    quoted(&mut text, &name[1..]);
                }
                Some(_) => {
                    text.push_str(", ");
                    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                    quoted(&mut text, &name[..end]);
                }
            }
            text.push('}');
            text
        }
        other => match family_name(family) {
            Some(name) => format!("{{{name}}}"),
            None => format!("{{family {other}}}"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut b = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        b.extend(port.to_be_bytes());
        b.extend(ip);
        b.extend([0u8; 8]);
        b
    }

    #[test]
    fn addresses_read_like_strace() {
        assert_eq!(
            format_sockaddr(&v4([127, 0, 0, 1], 8080)).as_deref(),
            Some("{AF_INET, 127.0.0.1:8080}")
        );
        let mut six = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        six.extend(443u16.to_be_bytes());
        six.extend([0u8; 4]);
        six.extend(Ipv6Addr::LOCALHOST.octets());
        six.extend([0u8; 4]);
        assert_eq!(
            format_sockaddr(&six).as_deref(),
            Some("{AF_INET6, [::1]:443}")
        );
        let mut unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        unix.extend(b"/run/x.sock\0junk");
        assert_eq!(
            format_sockaddr(&unix).as_deref(),
            Some("{AF_UNIX, \"/run/x.sock\"}")
        );
        let mut abs = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        abs.extend(b"\0sbx\n");
        assert_eq!(
            format_sockaddr(&abs).as_deref(),
            Some("{AF_UNIX, @\"sbx\\n\"}")
        );
        assert_eq!(format_sockaddr(&[0, 0]).as_deref(), Some("{AF_UNSPEC}"));
    }

    #[test]
    fn short_addresses_are_not_decoded() {
        let full = v4([10, 0, 0, 1], 80);
        assert_eq!(format_sockaddr(&full[..6]), None);
        assert_eq!(format_sockaddr(&[libc::AF_INET6 as u8, 0, 0, 80]), None);
    }

    #[test]
    fn types_levels_and_options_are_named() {
        let t = (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64;
        assert_eq!(sock_type(t), "SOCK_STREAM|SOCK_CLOEXEC");
        assert_eq!(domain(libc::AF_INET6 as u64), "AF_INET6");
        assert_eq!(domain(99), "99");
        assert_eq!(protocol(libc::IPPROTO_TCP as u64), "IPPROTO_TCP");
        assert_eq!(level(libc::IPPROTO_TCP as u64), "IPPROTO_TCP");
        assert_eq!(
            option(libc::IPPROTO_TCP as u64, libc::TCP_NODELAY as u64),
            "TCP_NODELAY"
        );
        assert_eq!(
            option(libc::SOL_SOCKET as u64, libc::SO_REUSEADDR as u64),
            "SO_REUSEADDR"
        );
        assert_eq!(option(12345, 7), "7");
        let f = (libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) as u64;
        assert_eq!(msg_flags(f), "MSG_DONTWAIT|MSG_NOSIGNAL");
    }
}
