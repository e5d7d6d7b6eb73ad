//! Socket options of the emulated TCP/UDP socket: which ones the host's
//! `AF_UNIX` socket answers itself, which ones the netstack answers
//! truthfully (type, domain, protocol), and which ones it accepts and
//! reports back from the socket's metadata (TCP_NODELAY, keep-alive
//! timers, IP_TOS, IPV6_V6ONLY, SO_REUSEPORT, SO_WIFI_STATUS, ...); a fresh TCP
//! socket's SO_SNDBUF and SO_RCVBUF ([`fresh_buffer`]).
//!
//! Owns: the classification, defaults, value checks and stored values.
//! Does not own: reading or writing guest memory (the handler does).

use std::collections::BTreeMap;

use nix::errno::Errno;

use crate::name::Proto;

/// How one (level, name) pair is answered on a netstack socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The host socket answers it (SO_RCVBUF, SO_KEEPALIVE, SO_LINGER...).
    Native,
    /// Read-only and answered from the metadata: SO_TYPE, SO_DOMAIN,
    /// SO_PROTOCOL.
    Identity,
    /// Accepted and reported back: the default value and whether it is
    /// a flag (reported as 0 or 1).
    Stored { default: i32, flag: bool },
    /// Not available on this socket (ENOPROTOOPT): unknown IP-level
    /// options, and what would reveal the host socket (SO_PASSCRED,
    /// SO_PEERPIDFD, SO_PEERSEC).
    Unsupported,
    /// Read-only and answered as an internet socket's peer, never from
    /// the host socket (whose peer is a unix name behind the sandbox's
    /// token and a process's credentials): SO_PEERNAME the peer's
    /// address, SO_PEERCRED no credentials, SO_PEERGROUPS none.
    Peer,
}

const SOL_TCP: i32 = libc::IPPROTO_TCP;
const SOL_UDP: i32 = libc::IPPROTO_UDP;
const SOL_IP: i32 = libc::IPPROTO_IP;
const SOL_IPV6: i32 = libc::IPPROTO_IPV6;

const fn stored(default: i32) -> Class {
    Class::Stored {
        default,
        flag: false,
    }
}
const FLAG: Class = Class::Stored {
    default: 0,
    flag: true,
};

/// The class of `(level, name)` on a socket of `domain` and `proto`.
pub fn classify(domain: i32, proto: Proto, level: i32, name: i32) -> Class {
    match level {
        libc::SOL_SOCKET => socket_level(name),
        SOL_TCP if proto == Proto::Tcp => tcp_level(name),
        SOL_UDP if proto == Proto::Udp => udp_level(name),
        libc::IPPROTO_UDPLITE if proto == Proto::Udp => udplite_level(name),
        SOL_IP => ip_level(name),
        SOL_IPV6 if domain == libc::AF_INET6 => ipv6_level(name),
        _ => Class::Unsupported,
    }
}

fn socket_level(name: i32) -> Class {
    match name {
        libc::SO_TYPE | libc::SO_DOMAIN | libc::SO_PROTOCOL => Class::Identity,
        // AF_UNIX refuses SO_REUSEPORT (inet only since Linux 6.x).
        libc::SO_REUSEPORT => FLAG,
        // The host socket's flag carries a local connection's
        // TCP_NODELAY (`nodelay.rs`): the guest's own is kept here.
        libc::SO_WIFI_STATUS => FLAG,
        libc::SO_PEERNAME | libc::SO_PEERCRED | libc::SO_PEERGROUPS => Class::Peer,
        libc::SO_PASSCRED | libc::SO_PEERSEC => Class::Unsupported,
        libc::SO_PASSSEC | 76 /* SO_PEERPIDFD */ | 77 /* SO_PASSPIDFD */ => Class::Unsupported,
        _ => Class::Native,
    }
}

fn tcp_level(name: i32) -> Class {
    match name {
        libc::TCP_NODELAY | libc::TCP_CORK | libc::TCP_FASTOPEN_CONNECT => FLAG,
        libc::TCP_QUICKACK => Class::Stored {
            default: 1,
            flag: true,
        },
        // The loopback MSS (MTU 65536).
        libc::TCP_MAXSEG => stored(65483),
        libc::TCP_KEEPIDLE => stored(7200),
        libc::TCP_KEEPINTVL => stored(75),
        libc::TCP_KEEPCNT => stored(9),
        libc::TCP_SYNCNT => stored(6),
        libc::TCP_LINGER2 => stored(60),
        libc::TCP_DEFER_ACCEPT | libc::TCP_WINDOW_CLAMP | libc::TCP_USER_TIMEOUT => stored(0),
        libc::TCP_FASTOPEN => stored(0),
        _ => Class::Unsupported,
    }
}

fn udp_level(name: i32) -> Class {
    match name {
        libc::UDP_CORK => FLAG,
        libc::UDP_SEGMENT | libc::UDP_GRO => stored(0),
        _ => Class::Unsupported,
    }
}

/// UDPLITE_SEND_CSCOV and UDPLITE_RECV_CSCOV (UDP-Lite sockets are UDP
/// ones here: loopback carries no checksum to cover).
fn udplite_level(name: i32) -> Class {
    match name {
        10 | 11 => stored(0),
        _ => Class::Unsupported,
    }
}

fn ip_level(name: i32) -> Class {
    match name {
        libc::IP_TOS => stored(0),
        libc::IP_TTL => stored(64),
        libc::IP_PKTINFO | libc::IP_RECVERR | libc::IP_RECVTOS | libc::IP_RECVTTL => FLAG,
        libc::IP_FREEBIND | libc::IP_BIND_ADDRESS_NO_PORT | libc::IP_TRANSPARENT => FLAG,
        libc::IP_MTU_DISCOVER => stored(libc::IP_PMTUDISC_WANT),
        libc::IP_MULTICAST_TTL => stored(1),
        libc::IP_MULTICAST_LOOP => Class::Stored {
            default: 1,
            flag: true,
        },
        _ => Class::Unsupported,
    }
}

fn ipv6_level(name: i32) -> Class {
    match name {
        libc::IPV6_V6ONLY | libc::IPV6_RECVPKTINFO | libc::IPV6_RECVERR => FLAG,
        libc::IPV6_RECVTCLASS | libc::IPV6_FREEBIND => FLAG,
        // Ancillary data requests: accepted, though no control message is
        // delivered (see docs/network.md).
        libc::IPV6_PKTINFO | libc::IPV6_RECVHOPLIMIT | libc::IPV6_HOPLIMIT => FLAG,
        libc::IPV6_RECVHOPOPTS | libc::IPV6_HOPOPTS | libc::IPV6_RECVRTHDR => FLAG,
        libc::IPV6_RECVDSTOPTS => FLAG,
        libc::IPV6_UNICAST_HOPS => stored(64),
        libc::IPV6_TCLASS => stored(0),
        libc::IPV6_MULTICAST_HOPS => stored(1),
        libc::IPV6_MULTICAST_LOOP => Class::Stored {
            default: 1,
            flag: true,
        },
        libc::IPV6_MTU_DISCOVER => stored(libc::IPV6_PMTUDISC_WANT),
        _ => Class::Unsupported,
    }
}

/// The kernel's range checks for the values it validates.
pub fn check(level: i32, name: i32, v: i32) -> Result<i32, Errno> {
    let ok = |lo: i32, hi: i32| {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(Errno::EINVAL)
        }
    };
    match (level, name) {
        (SOL_TCP, libc::TCP_KEEPIDLE) | (SOL_TCP, libc::TCP_KEEPINTVL) => ok(1, 32767),
        (SOL_TCP, libc::TCP_KEEPCNT) => ok(1, 127),
        (SOL_TCP, libc::TCP_SYNCNT) => ok(1, 127),
        (SOL_TCP, libc::TCP_USER_TIMEOUT) => ok(0, i32::MAX),
        (SOL_IP, libc::IP_TTL) if v == -1 => Ok(64),
        (SOL_IP, libc::IP_TTL) => ok(1, 255),
        (SOL_IP, libc::IP_TOS) => Ok(v & 0xff),
        (SOL_IPV6, libc::IPV6_UNICAST_HOPS) if v == -1 => Ok(64),
        (SOL_IPV6, libc::IPV6_UNICAST_HOPS) => ok(0, 255),
        (SOL_IPV6, libc::IPV6_TCLASS) if v == -1 => Ok(0),
        (SOL_IPV6, libc::IPV6_TCLASS) => ok(0, 255),
        _ => Ok(v),
    }
}

/// The stored option values of one socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    vals: BTreeMap<(i32, i32), i32>,
}

impl Options {
    /// The value of a `Stored` option (its default until set).
    pub fn get(&self, level: i32, name: i32, class: Class) -> i32 {
        match class {
            Class::Stored { default, .. } => {
                self.vals.get(&(level, name)).copied().unwrap_or(default)
            }
            _ => 0,
        }
    }

    /// Stores a `Stored` option (flags as 0 or 1).
    pub fn set(&mut self, level: i32, name: i32, class: Class, v: i32) {
        if let Class::Stored { flag, .. } = class {
            let v = if flag { i32::from(v != 0) } else { v };
            self.vals.insert((level, name), v);
        }
    }

    /// The value the program set, if it set one.
    pub fn explicit(&self, level: i32, name: i32) -> Option<i32> {
        self.vals.get(&(level, name)).copied()
    }

    /// Whether a flag option is set.
    pub fn flag(&self, level: i32, name: i32) -> bool {
        self.vals.get(&(level, name)).is_some_and(|v| *v != 0)
    }

    /// Notes that the program set a buffer size, which the host socket
    /// keeps and answers from then on ([`fresh_buffer`]).
    pub fn buffer_set(&mut self, name: i32) {
        let name = match name {
            libc::SO_SNDBUFFORCE => libc::SO_SNDBUF,
            libc::SO_RCVBUFFORCE => libc::SO_RCVBUF,
            n => n,
        };
        self.vals.insert((libc::SOL_SOCKET, name), 1);
    }
}

/// SO_SNDBUF or SO_RCVBUF of a TCP socket that never set it: what
/// `tcp_init_sock` gives a fresh one, the second value of
/// `net.ipv4.tcp_wmem` or `tcp_rmem` (read once: the kernel reads it at
/// the socket's creation). The host unix socket would report
/// `net.core.wmem_default`/`rmem_default`, which are a fresh UDP
/// socket's too. Once set, the host socket's value is Linux's:
/// `sk_setsockopt` doubles and bounds it alike for every family. `None`:
/// the host socket answers.
pub fn fresh_buffer(proto: Proto, options: &Options, level: i32, name: i32) -> Option<i32> {
    static TCP_DEFAULTS: std::sync::OnceLock<(Option<i32>, Option<i32>)> =
        std::sync::OnceLock::new();
    if proto != Proto::Tcp || level != libc::SOL_SOCKET || options.explicit(level, name).is_some() {
        return None;
    }
    let (snd, rcv) =
        *TCP_DEFAULTS.get_or_init(|| (tcp_default("tcp_wmem"), tcp_default("tcp_rmem")));
    match name {
        libc::SO_SNDBUF => snd,
        libc::SO_RCVBUF => rcv,
        _ => None,
    }
}

/// The default (second) value of `/proc/sys/net/ipv4/<file>`.
fn tcp_default(file: &str) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{file}")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let c = |l, n| classify(libc::AF_INET, Proto::Tcp, l, n);
        assert_eq!(c(libc::SOL_SOCKET, libc::SO_RCVBUF), Class::Native);
        assert_eq!(c(libc::SOL_SOCKET, libc::SO_DOMAIN), Class::Identity);
        assert_eq!(c(libc::SOL_SOCKET, libc::SO_PEERCRED), Class::Peer);
        assert_eq!(c(libc::SOL_SOCKET, libc::SO_PEERNAME), Class::Peer);
        assert_eq!(c(libc::SOL_SOCKET, libc::SO_PASSCRED), Class::Unsupported);
        assert_eq!(c(SOL_IP, 9999), Class::Unsupported);
        assert_eq!(c(SOL_IPV6, libc::IPV6_V6ONLY), Class::Unsupported);
        assert_eq!(c(SOL_UDP, libc::UDP_CORK), Class::Unsupported);
        let v6 = classify(libc::AF_INET6, Proto::Udp, SOL_IPV6, libc::IPV6_V6ONLY);
        assert_eq!(v6, FLAG);
    }

    #[test]
    fn stored_values() {
        let mut o = Options::default();
        let nd = classify(libc::AF_INET, Proto::Tcp, SOL_TCP, libc::TCP_NODELAY);
        assert_eq!(o.get(SOL_TCP, libc::TCP_NODELAY, nd), 0);
        o.set(SOL_TCP, libc::TCP_NODELAY, nd, 7);
        assert_eq!(o.get(SOL_TCP, libc::TCP_NODELAY, nd), 1);
        let idle = classify(libc::AF_INET, Proto::Tcp, SOL_TCP, libc::TCP_KEEPIDLE);
        assert_eq!(o.get(SOL_TCP, libc::TCP_KEEPIDLE, idle), 7200);
        assert_eq!(check(SOL_TCP, libc::TCP_KEEPIDLE, 0), Err(Errno::EINVAL));
        assert_eq!(check(SOL_IP, libc::IP_TTL, -1), Ok(64));
    }

    #[test]
    fn a_fresh_tcp_socket_reports_the_tcp_defaults_until_set() {
        let mut o = Options::default();
        let sol = libc::SOL_SOCKET;
        assert_eq!(fresh_buffer(Proto::Udp, &o, sol, libc::SO_SNDBUF), None);
        let wmem = tcp_default("tcp_wmem");
        assert!(wmem.is_some());
        assert_eq!(fresh_buffer(Proto::Tcp, &o, sol, libc::SO_SNDBUF), wmem);
        assert_eq!(
            fresh_buffer(Proto::Tcp, &o, sol, libc::SO_RCVBUF),
            tcp_default("tcp_rmem")
        );
        o.buffer_set(libc::SO_SNDBUFFORCE);
        assert_eq!(fresh_buffer(Proto::Tcp, &o, sol, libc::SO_SNDBUF), None);
        assert!(fresh_buffer(Proto::Tcp, &o, sol, libc::SO_RCVBUF).is_some());
    }
}
