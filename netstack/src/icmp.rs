//! ICMP echo ("ping") datagram sockets to the sandbox's loopback.
//!
//! `socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)` (and ICMPv6) is a host
//! datagram socket like UDP's; a message it sends to 127.0.0.0/8 or ::1
//! must be an echo request (as Linux's ping sockets require), and the
//! netstack answers it itself: an echo reply with the same identifier,
//! sequence and payload and a correct checksum, sent to the socket's own
//! name from a name that decodes to the destination (port 0), so a
//! receive reports the address pinged, as Linux does.
//!
//! Owns: checking requests, building replies, delivering them. Does not
//! own: refusing destinations outside the sandbox (the handlers: they
//! never reach here) or receiving (the guest's own receive calls).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{self, MsgFlags, SockType, UnixAddr};
use parking_lot::Mutex;

use crate::name::Proto;
use crate::stack::{Sock, Stack};

/// ICMP echo request and reply types (v4, v6).
const ECHO_V4: (u8, u8) = (8, 0);
const ECHO_V6: (u8, u8) = (128, 129);
/// The ICMP header's length.
const HEADER: usize = 8;

/// Replies are sent one at a time: each binds the destination's name.
static REPLYING: Mutex<()> = parking_lot::const_mutex(());

/// Whether a socket of `domain` with `protocol` is a ping socket.
pub fn is_ping(domain: i32, protocol: i32) -> bool {
    matches!(
        (domain, protocol),
        (libc::AF_INET, libc::IPPROTO_ICMP) | (libc::AF_INET6, libc::IPPROTO_ICMPV6)
    )
}

/// The echo reply to `request` (an ICMP message sent to `dst`, a
/// sandbox-loopback address); EINVAL for anything but an echo request
/// with code 0, as Linux's ping sockets answer.
pub fn echo_reply(request: &[u8], dst: IpAddr) -> Result<Vec<u8>, Errno> {
    let (want, reply) = match dst {
        IpAddr::V4(_) => ECHO_V4,
        IpAddr::V6(_) => ECHO_V6,
    };
    if request.len() < HEADER || request[0] != want || request[1] != 0 {
        return Err(Errno::EINVAL);
    }
    let mut msg = request.to_vec();
    msg[0] = reply;
    msg[2] = 0;
    msg[3] = 0;
    let sum = match dst {
        IpAddr::V4(_) => checksum(0, &msg),
        IpAddr::V6(a) => checksum(pseudo_header_sum(a, msg.len()), &msg),
    };
    msg[2..4].copy_from_slice(&sum.to_be_bytes());
    Ok(msg)
}

/// The ICMPv6 pseudo-header's sum (source and destination `a`, the
/// length, next header 58).
fn pseudo_header_sum(a: Ipv6Addr, len: usize) -> u32 {
    let mut head = Vec::with_capacity(40);
    head.extend_from_slice(&a.octets());
    head.extend_from_slice(&a.octets());
    head.extend_from_slice(&(len as u32).to_be_bytes());
    head.extend_from_slice(&[0, 0, 0, libc::IPPROTO_ICMPV6 as u8]);
    sum_words(0, &head)
}

fn sum_words(mut sum: u32, data: &[u8]) -> u32 {
    for pair in data.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        let lo = pair.get(1).copied().map_or(0, u32::from);
        sum = sum.wrapping_add(hi | lo);
    }
    sum
}

/// The Internet checksum (RFC 1071) of `data`, starting from `sum`.
pub fn checksum(sum: u32, data: &[u8]) -> u16 {
    let mut sum = sum_words(sum, data);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Answers the echo request `request` that ping socket `s` sends to the
/// sandbox-loopback `dst`: the reply waits in `s`'s queue (dropped when
/// the queue is full, as loopback drops). Returns the length sent.
pub fn ping_local(net: &Stack, s: &Sock, dst: SocketAddr, request: &[u8]) -> Result<usize, Errno> {
    let reply = echo_reply(request, dst.ip())?;
    // Linux's ping autobind picks an identifier and no address.
    net.autobind_port(s)?;
    let own: UnixAddr = socket::getsockname(s.fd.as_raw_fd())?;
    let _one = REPLYING.lock();
    let from = net.sockets().socket(SockType::Datagram)?;
    let name = net
        .namer
        .encode(Proto::Udp, SocketAddr::new(dst.ip(), 0), false);
    socket::bind(from.as_raw_fd(), &UnixAddr::new_abstract(&name)?)?;
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    match socket::sendto(from.as_raw_fd(), &reply, &own, flags) {
        Ok(_) | Err(Errno::EAGAIN) => Ok(request.len()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v4_reply_keeps_id_seq_payload_and_checks_out() {
        let mut req = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b', b'c'];
        let sum = checksum(0, &req);
        req[2..4].copy_from_slice(&sum.to_be_bytes());
        let reply = echo_reply(&req, "127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(reply[0], 0);
        assert_eq!(&reply[4..], &req[4..]);
        assert_eq!(checksum(0, &reply), 0);
    }

    #[test]
    fn a_v6_reply_checks_out_with_its_pseudo_header() {
        let req = vec![128, 0, 0, 0, 0, 7, 0, 2, 1, 2, 3];
        let reply = echo_reply(&req, "::1".parse().unwrap()).unwrap();
        assert_eq!(reply[0], 129);
        let a: Ipv6Addr = "::1".parse().unwrap();
        assert_eq!(checksum(pseudo_header_sum(a, reply.len()), &reply), 0);
    }

    #[test]
    fn anything_but_an_echo_request_is_einval() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(echo_reply(&[8, 0, 0], v4), Err(Errno::EINVAL));
        assert_eq!(echo_reply(&[0; 8], v4), Err(Errno::EINVAL));
        assert_eq!(
            echo_reply(&[8, 1, 0, 0, 0, 0, 0, 0], v4),
            Err(Errno::EINVAL)
        );
    }
}
