//! Calls that carry an address with their data: sendto and recvfrom
//! with a non-NULL address (those without pass the filter); sendmsg and
//! recvmsg with a name share [`send`] and [`receive`] (`msg.rs`).
//!
//! UDP: a datagram to sandbox loopback goes to the receiver bound to the
//! destination's name (loopback UDP drops silently when there is none);
//! anything else to the egress seam, which by default refuses with
//! ENETUNREACH. Received datagrams report the sender's decoded address.
//! TCP: the address of a send is ignored, as TCP ignores it; a receive
//! reports none (length 0), as TCP does.

use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};

use netstack::ancillary::Stamp;
use netstack::stack::Sock;
use netstack::{addr, Proto, Refusal};
use nix::errno::Errno;
use nix::poll::PollFlags;
use nix::sys::socket::{self, ControlMessageOwned, MsgFlags, UnixAddr};

use super::ancil;
use super::{
    address_domain, autobind_udp, check_family, family_of, has_destination, host_connected,
    is_udp6, nonblocking, ours, parse_addr, read_len, read_sockaddr, stack, user_range, wait,
    write_sockaddr, Res,
};
use crate::guest::{Guest, Reply};
use crate::handlers::live;
use crate::Context;

/// Largest UDP payload (IPv4: 65535 - 20 - 8).
pub(super) const MAX_DGRAM: usize = 65507;
/// Most bytes one serviced receive copies.
pub(super) const MAX_RECV: usize = 256 * 1024;
/// The most one read or write moves (the kernel's MAX_RW_COUNT).
pub(super) const MAX_RW_COUNT: usize = 0x7fff_f000;
/// Flags of a receive that the host socket honours.
const RECV_FLAGS: i32 = libc::MSG_PEEK | libc::MSG_TRUNC;

/// sendto(fd, buf, len, flags, addr, addrlen) with a non-NULL address.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sendto(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    buf: u64,
    len: u64,
    flags: i32,
    ptr: u64,
    alen: u32,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    if ptr == 0 {
        return send_empty(ctx, g, &s, len, flags);
    }
    if s.meta.proto == Proto::Tcp {
        return send_stream(g, &s, buf, len, flags);
    }
    let dst = destination(ctx, g, &s, ptr, alen)?;
    let len = usize::try_from(len).map_err(|_| Errno::EMSGSIZE)?;
    if len > MAX_DGRAM {
        return Err(Errno::EMSGSIZE);
    }
    no_oob(flags)?;
    let mut data = vec![0u8; len];
    g.read_mem(buf, &mut data)?;
    let stamp = Stamp::of_socket(s.meta.domain, &s.meta.options);
    send(ctx, g, &s, dst, &data, flags, stamp)
}

/// A datagram's destination, as `udp_sendmsg`/`udpv6_sendmsg` take
/// it, after the autobind `inet_send_prepare` does first. A UDP IPv6
/// socket also sends to an IPv4 address (ENETUNREACH when v6-only) and
/// refuses a family it does not know with EINVAL.
pub(super) fn destination(
    ctx: &Context,
    g: &dyn Guest,
    s: &Sock,
    ptr: u64,
    len: u32,
) -> Result<SocketAddr, Errno> {
    let bytes = read_sockaddr(g, ptr, len)?;
    autobind_udp(ctx, g, s)?;
    let domain = address_domain(s, &bytes, Errno::ENETUNREACH)?;
    if is_udp6(s) && domain == libc::AF_INET6 {
        let family = family_of(&bytes);
        let known = [libc::AF_INET6, libc::AF_UNSPEC].map(Some);
        if family.is_some() && !known.contains(&family) {
            return Err(Errno::EINVAL);
        }
    }
    parse_addr(domain, &bytes)?.ok_or(Errno::EAFNOSUPPORT)
}

/// UDP (and ping) sockets have no urgent data: MSG_OOB is EOPNOTSUPP,
/// checked after the length and before the data is read, as
/// `udp_sendmsg` does.
pub(super) fn no_oob(flags: i32) -> Result<(), Errno> {
    if flags & libc::MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// send(fd, buf, 0, flags) without an address (the only such send the
/// filter does not pass). TCP takes an empty send on a connection whose
/// peer has closed (CLOSE_WAIT) and returns 0, where the host `AF_UNIX`
/// socket is already shut for sending (EPIPE). Such a socket has a peer
/// name and has hung up (both directions shut); it gets 0. Anything else
/// (a length that only looked empty to the filter) runs natively.
/// Own `shutdown(SHUT_RDWR)` looks the same and also gets 0 (TCP: EPIPE).
/// An empty send on a TCP socket that was never connected is EPIPE; on
/// a UDP socket without a peer EDESTADDRREQ (after its autobind).
fn send_empty(ctx: &Context, g: &dyn Guest, s: &Sock, len: u64, flags: i32) -> Res {
    if len != 0 {
        return Ok(Reply::Continue);
    }
    if s.meta.proto == Proto::Udp {
        has_destination(ctx, g, s)?;
        return Ok(Reply::Continue);
    }
    let connected = host_connected(s);
    if connected && wait::hung_up(s.fd.as_fd()) {
        return Ok(Reply::Value(0));
    }
    // Never connected (or listening): tcp_sendmsg's EPIPE, where the host
    // unix socket would say ENOTCONN. A dial's stand-in has a peer.
    if !connected {
        return Err(epipe(g, flags));
    }
    Ok(Reply::Continue)
}

/// A TCP send's EPIPE, with the SIGPIPE `sk_stream_error` raises unless
/// the call asked for MSG_NOSIGNAL.
pub(super) fn epipe(g: &dyn Guest, flags: i32) -> Errno {
    if flags & libc::MSG_NOSIGNAL == 0 {
        g.raise_sigpipe();
    }
    Errno::EPIPE
}

/// sendto on a TCP socket: the address is ignored, as TCP ignores it
/// (the host stream socket would refuse it with EISCONN). At most
/// MAX_RECV bytes per call (a short count, as after a signal); a
/// blocking socket waits for room in slices, so signals interrupt it.
fn send_stream(g: &dyn Guest, s: &Sock, buf: u64, len: u64, flags: i32) -> Res {
    let len = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_RECV);
    let mut data = vec![0u8; len];
    g.read_mem(buf, &mut data)?;
    send_bytes(g, s, &data, flags)
}

/// Sends `data` on a TCP socket's host stream socket (sendto and
/// sendmsg with an address, which TCP ignores).
pub(super) fn send_bytes(g: &dyn Guest, s: &Sock, data: &[u8], flags: i32) -> Res {
    live(g)?;
    let dontwait = flags & libc::MSG_DONTWAIT != 0 || nonblocking(s);
    // Never SIGPIPE in the supervisor: a closed peer is EPIPE.
    let host = MsgFlags::from_bits_truncate(flags & libc::MSG_MORE)
        | MsgFlags::MSG_DONTWAIT
        | MsgFlags::MSG_NOSIGNAL;
    loop {
        match socket::send(s.fd.as_raw_fd(), data, host) {
            Err(Errno::EAGAIN) if !dontwait => {
                wait::until_ready(g, s.fd.as_fd(), PollFlags::POLLOUT)?;
            }
            // An unconnected (or listening) TCP socket: tcp_sendmsg's
            // EPIPE, where the host unix socket says ENOTCONN.
            Err(Errno::ENOTCONN | Errno::EPIPE) => return Err(epipe(g, flags)),
            r => return Ok(Reply::Value(r? as i64)),
        }
    }
}

/// One datagram to `dst` (canonical) carrying `stamp` (its hop limit
/// and traffic class: left for the receiver when not the defaults).
pub(super) fn send(
    ctx: &Context,
    g: &dyn Guest,
    s: &Sock,
    dst: SocketAddr,
    data: &[u8],
    flags: i32,
    stamp: Stamp,
) -> Res {
    check_family(ctx, s, dst)?;
    live(g)?;
    let flags = MsgFlags::from_bits_truncate(flags & libc::MSG_DONTWAIT);
    let net = stack(ctx);
    // A kept error fails the send, which sends nothing (sock_error in
    // sock_alloc_send_pskb).
    if let Some(e) = net.take_error(s) {
        return Err(e);
    }
    if netstack::icmp::is_ping(s.meta.domain, s.meta.protocol) {
        return ping(net, s, dst, data);
    }
    // To the peer of a socket whose refusals are marked (a relay's or a
    // stand-in's end): down its host socket, where a refusal is seen.
    if s.meta.refusals.is_some() && s.meta.peer == Some(dst) {
        return relayed(net, s, data, flags);
    }
    if let Some(local) =
        addr::local_destination(dst).filter(|_| !net.egress().takes_loopback(dst, Proto::Udp))
    {
        if stamp != Stamp::default() {
            net.autobind_port(s)?;
            ancil::leave_stamp(s, data, stamp);
        }
        return Ok(Reply::Value(net.send_local(s, local, data, flags)? as i64));
    }
    if s.meta.peer == Some(dst) {
        return relayed(net, s, data, flags);
    }
    // Replies are sent to the guest socket's name: it needs one first.
    net.autobind(s, dst)?;
    match net.egress().send_to(s.fd.as_fd(), dst, data) {
        Ok(n) => Ok(Reply::Value(n as i64)),
        Err(Refusal::Failed(e)) => Err(e),
        Err(Refusal::Denied(denied)) => {
            net.denials().record(dst, Proto::Udp, &denied.reason);
            Err(Errno::ENETUNREACH)
        }
    }
}

/// A datagram to the peer of a socket whose egress connect made it a
/// relay's end (only egress gives a UDP socket a peer off the sandbox's
/// loopback): down the relay, as a send without an address goes. A UDP
/// `sendto` naming the socket's own peer is a send; the unconnected path
/// would open a session whose socket cannot reach a connected one
/// (EPERM). The relay drops what it cannot take, as UDP may: a full
/// queue is a datagram sent unless the call asked not to wait.
fn relayed(net: &netstack::Stack, s: &Sock, data: &[u8], flags: MsgFlags) -> Res {
    let dontwait = flags.contains(MsgFlags::MSG_DONTWAIT) || nonblocking(s);
    match socket::send(s.fd.as_raw_fd(), data, flags | MsgFlags::MSG_DONTWAIT) {
        Err(Errno::EAGAIN) if !dontwait => Ok(Reply::Value(data.len() as i64)),
        Err(e) => Err(net.host_error(s, e)),
        Ok(n) => Ok(Reply::Value(n as i64)),
    }
}

/// An echo request from a ping socket: the netstack answers for the
/// sandbox's loopback; anything else is unreachable at once (recorded).
fn ping(net: &netstack::Stack, s: &Sock, dst: SocketAddr, data: &[u8]) -> Res {
    let Some(local) = addr::local_destination(dst) else {
        net.denials()
            .record(dst, Proto::Udp, "icmp echo outside the sandbox");
        return Err(Errno::ENETUNREACH);
    };
    Ok(Reply::Value(
        netstack::icmp::ping_local(net, s, local, data)? as i64,
    ))
}

/// recvfrom(fd, buf, len, flags, addr, addrlen) with a non-NULL address.
#[allow(clippy::too_many_arguments)]
pub(crate) fn recvfrom(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    buf: u64,
    len: u64,
    flags: i32,
    ptr: u64,
    len_ptr: u64,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    // import_ubuf's bound, before anything is taken off the queue.
    user_range(
        buf,
        usize::try_from(len).unwrap_or(usize::MAX).min(MAX_RW_COUNT),
    )?;
    let cap = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_RECV);
    let got = receive(ctx, g, &s, cap, flags)?;
    // After the receive, as the kernel reads it (a bad pointer loses the
    // datagram there too).
    let room = read_len(g, len_ptr)?;
    g.write_mem(buf, &got.data[..got.data.len().min(cap)])?;
    write_sockaddr(g, ptr, len_ptr, room, &got.name)?;
    Ok(Reply::Value(got.ret as i64))
}

/// What one serviced receive got.
pub(super) struct Received {
    pub data: Vec<u8>,
    /// The call's return value (the full length under MSG_TRUNC).
    pub ret: usize,
    /// The sender's address for the guest (empty for TCP).
    pub name: Vec<u8>,
    /// The sender's host name (a netstack sender's abstract name).
    pub from: Option<Vec<u8>>,
    /// The sender's address (UDP).
    pub src: Option<SocketAddr>,
    /// The datagram was longer than the buffer.
    pub truncated: bool,
    /// The socket level's control messages the host socket attached
    /// (SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMPING: `AF_UNIX`
    /// datagram sockets stamp as UDP's do), as (level, type, data).
    pub socket_cmsgs: Vec<(i32, i32, Vec<u8>)>,
}

/// Receives at most `cap` bytes, waiting (interruptibly) if the guest's
/// socket blocks and MSG_DONTWAIT is not set.
pub(super) fn receive(
    ctx: &Context,
    g: &dyn Guest,
    s: &Sock,
    cap: usize,
    flags: i32,
) -> Result<Received, Errno> {
    // The netstack keeps no error queue: empty, as the kernel's
    // ip_recv_error answers.
    if flags & libc::MSG_ERRQUEUE != 0 {
        return Err(Errno::EAGAIN);
    }
    // An error the socket kept comes before any datagram (sock_error).
    if let Some(e) = stack(ctx).take_error(s) {
        return Err(e);
    }
    let dontwait = flags & libc::MSG_DONTWAIT != 0 || nonblocking(s);
    let host_flags = MsgFlags::from_bits_truncate(flags & RECV_FLAGS) | MsgFlags::MSG_DONTWAIT;
    let mut data = vec![0u8; cap];
    let mut space = nix::cmsg_space!(libc::timeval, libc::timespec, [libc::timespec; 3]);
    loop {
        let mut iov = [IoSliceMut::new(&mut data)];
        let got =
            socket::recvmsg::<UnixAddr>(s.fd.as_raw_fd(), &mut iov, Some(&mut space), host_flags);
        match got {
            Ok(m) => {
                let (ret, from) = (m.bytes, m.address);
                let truncated = m.flags.contains(MsgFlags::MSG_TRUNC);
                let socket_cmsgs = m.cmsgs().map(timestamps).unwrap_or_default();
                data.truncate(ret.min(cap));
                let raw = from
                    .as_ref()
                    .and_then(netstack::name::abstract_of)
                    .map(<[u8]>::to_vec);
                let (name, src) = match s.meta.proto {
                    Proto::Tcp => (Vec::new(), None),
                    // An unnamed source is the egress relay of a
                    // connected socket: the peer it was connected to.
                    Proto::Udp => {
                        let peek = flags & libc::MSG_PEEK != 0;
                        let src = raw
                            .as_deref()
                            .and_then(|n| Some((n, stack(ctx).namer.decode(n)?.addr)))
                            .map(|(n, from)| stack(ctx).source_seen(s, from, n, &data, peek))
                            .or(s.meta.peer)
                            .unwrap_or_else(|| addr::unspecified(s.meta.domain));
                        (addr::encode(s.meta.domain, src), Some(src))
                    }
                };
                return Ok(Received {
                    data,
                    ret,
                    name,
                    from: raw,
                    src,
                    truncated,
                    socket_cmsgs,
                });
            }
            Err(Errno::EAGAIN) if !dontwait => {
                let mut kept = || stack(ctx).take_error(s);
                wait::until_ready_or(g, s.fd.as_fd(), PollFlags::POLLIN, &mut kept)?;
            }
            // An unconnected host stream socket says EINVAL; TCP's
            // receive on a socket never connected is ENOTCONN.
            Err(Errno::EINVAL) if s.meta.proto == Proto::Tcp => return Err(Errno::ENOTCONN),
            // The mark of a refusal that came after the look above.
            Err(e) => return Err(stack(ctx).host_error(s, e)),
        }
    }
}

/// The receive timestamps among a host receive's control messages, laid
/// out as the kernel's `put_cmsg` gives them to the guest.
fn timestamps(cmsgs: socket::CmsgIterator) -> Vec<(i32, i32, Vec<u8>)> {
    let ts = |t: &libc::timespec| [t.tv_sec.to_ne_bytes(), t.tv_nsec.to_ne_bytes()].concat();
    cmsgs
        .filter_map(|c| match c {
            ControlMessageOwned::ScmTimestamp(tv) => {
                let tv: &libc::timeval = tv.as_ref();
                let data = [tv.tv_sec.to_ne_bytes(), tv.tv_usec.to_ne_bytes()].concat();
                Some((libc::SOL_SOCKET, libc::SCM_TIMESTAMP, data))
            }
            ControlMessageOwned::ScmTimestampns(t) => {
                Some((libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, ts(t.as_ref())))
            }
            ControlMessageOwned::ScmTimestampsns(t) => {
                let data = [t.system, t.hw_trans, t.hw_raw]
                    .iter()
                    .flat_map(|t| ts(t.as_ref()))
                    .collect();
                Some((libc::SOL_SOCKET, libc::SCM_TIMESTAMPING, data))
            }
            _ => None,
        })
        .collect()
}
