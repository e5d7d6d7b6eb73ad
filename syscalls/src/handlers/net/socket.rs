//! socket, bind and connect of the guest's TCP/UDP sockets.
//!
//! socket: `AF_INET`/`AF_INET6` stream and datagram sockets become host
//! `AF_UNIX` sockets installed in the guest, as are ICMP datagram
//! ("ping") sockets (or, handed over by the preload, the guest's own
//! `AF_UNIX` socket is adopted: [`adopt`]); raw and packet sockets are denied (EPERM); `AF_UNIX` and `NETLINK_ROUTE` sockets are
//! the guest kernel's own (CONTINUE: its namespace has only `lo`); other
//! families are EAFNOSUPPORT. bind: names from [`netstack::Stack::bind`];
//! a UDP socket bound to a wildcard address and a given port is told to
//! the stack's listen hook, as a TCP listener is at its listen.
//! listen: an unbound TCP socket first binds to its family's wildcard
//! address and an ephemeral port, as TCP autobinds. connect:
//! sandbox loopback through the listener's name (UDP to a port nobody
//! has bound: connected, refused at the next send; a marked TCP connect
//! learns that its connection is local, [`local_answer`]); anything else
//! goes to the egress seam, which by default refuses (ECONNREFUSED for
//! TCP, ENETUNREACH for UDP, recorded for the report).

use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

use netstack::stack::Sock;
use netstack::{addr, Proto, Refusal};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::PollFlags;

use super::{
    address_domain, adopt, autobind_udp, backlog, check_family, dial, family_of, guest_addr, ours,
    parse_addr, read_sockaddr, stack, wait, Res,
};
use crate::guest::{Guest, Reply};
use crate::handlers::live;
use crate::Context;

/// socket(domain, type, protocol); `adopt`: the guest's own socket
/// handed over for it ([`adopt`]).
pub(crate) fn socket(
    ctx: &Context,
    g: &dyn Guest,
    (domain, ty, protocol): (i32, i32, i32),
    adopt: Option<i32>,
) -> Res {
    let base = ty & 0xf;
    let flags = ty & !0xf;
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    // The kernel's __sock_create bounds the family (NPROTO), then the
    // type (SOCK_MAX), before any family looks at them.
    const NPROTO: i32 = 46;
    const SOCK_MAX: i32 = 11;
    if (0..NPROTO).contains(&domain) && base >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let proto = match domain {
        libc::AF_UNIX => return Ok(Reply::Continue),
        libc::AF_INET | libc::AF_INET6 => inet_proto(domain, base, protocol)?,
        // The guest's own namespace holds only `lo`: its kernel answers
        // getifaddrs and if_nameindex exactly, and without CAP_NET_ADMIN
        // the guest can change nothing there. Readied first: the
        // loopback comes up when the guest first looks.
        libc::AF_NETLINK if protocol == libc::NETLINK_ROUTE => {
            let _ = stack(ctx).ready_namespace();
            return Ok(Reply::Continue);
        }
        libc::AF_PACKET => return Ok(Reply::Deny(Errno::EPERM)),
        _ => return Ok(Reply::Deny(Errno::EAFNOSUPPORT)),
    };
    let proto = match proto {
        Ok(p) => p,
        Err(denied) => return Ok(Reply::Deny(denied)),
    };
    if let Some(own) = adopt {
        return adopt::adopt(ctx, g, own, domain, proto, protocol);
    }
    // No liveness check: a new socket acts on nothing of the guest's,
    // and the install fails by itself when the call is gone.
    let fd = stack(ctx).create(domain, proto, protocol, flags & libc::SOCK_NONBLOCK != 0)?;
    Ok(Reply::InstallFd {
        fd,
        cloexec: flags & libc::SOCK_CLOEXEC != 0,
    })
}

/// The transport of an internet socket (a ping socket's host socket is
/// UDP's); `Ok(Err(errno))` for the kinds the policy denies (raw: EPERM).
fn inet_proto(domain: i32, base: i32, protocol: i32) -> Result<Result<Proto, Errno>, Errno> {
    let icmp = if domain == libc::AF_INET {
        libc::IPPROTO_ICMP
    } else {
        libc::IPPROTO_ICMPV6
    };
    // inet_create's first check (IPPROTO_MAX: 263).
    if !(0..263).contains(&protocol) {
        return Err(Errno::EINVAL);
    }
    match (base, protocol) {
        (libc::SOCK_STREAM, 0) | (libc::SOCK_STREAM, libc::IPPROTO_TCP) => Ok(Ok(Proto::Tcp)),
        (libc::SOCK_DGRAM, 0) | (libc::SOCK_DGRAM, libc::IPPROTO_UDP) => Ok(Ok(Proto::Udp)),
        // UDP-Lite: UDP with partial checksums, which loopback does not need.
        (libc::SOCK_DGRAM, libc::IPPROTO_UDPLITE) => Ok(Ok(Proto::Udp)),
        // Ping sockets: echo requests to the sandbox's loopback are
        // answered by the netstack (`netstack::icmp`).
        (libc::SOCK_DGRAM, p) if p == icmp => Ok(Ok(Proto::Udp)),
        (libc::SOCK_RAW, _) => Ok(Err(Errno::EPERM)),
        (libc::SOCK_STREAM, _) | (libc::SOCK_DGRAM, _) => Err(Errno::EPROTONOSUPPORT),
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

/// bind(fd, addr, len).
pub(crate) fn bind(ctx: &Context, g: &dyn Guest, fd: i32, ptr: u64, len: u32) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    let a = match guest_addr(g, s.meta.domain, ptr, len)? {
        Some(a) => a,
        // AF_UNSPEC binds as 0.0.0.0 on an IPv4 socket.
        None if s.meta.domain == libc::AF_INET => addr::unspecified(libc::AF_INET),
        None => return Err(Errno::EAFNOSUPPORT),
    };
    live(g)?;
    stack(ctx).bind(&s, a)?;
    // A UDP (not ping) socket bound to a port of a wildcard address is a UDP
    // server's: the stack's listen hook may publish it (an OCI
    // container's, on its network namespace).
    let udp =
        s.meta.proto == Proto::Udp && !netstack::icmp::is_ping(s.meta.domain, s.meta.protocol);
    if udp && a.ip().is_unspecified() && a.port() != 0 {
        stack(ctx).listening(a, Proto::Udp);
    }
    Ok(Reply::Value(0))
}

/// listen(fd, backlog): autobinds an unbound TCP socket, tells the
/// stack's listen hook (a container's listeners published on its
/// network namespace), then the kernel's listen runs on the host socket
/// (CONTINUE). A connected socket, a UDP one (EOPNOTSUPP) and the
/// guest's own sockets are the kernel's to answer.
pub(crate) fn listen(ctx: &Context, g: &dyn Guest, fd: i32) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    // Connected: accepted, egress or a dial's stand-in (each has its
    // peer). A listener listening again goes through again (bound
    // already: nothing to bind).
    let connected = s.meta.peer.is_some();
    if s.meta.proto == Proto::Tcp && !connected {
        live(g)?;
        stack(ctx).bind_listener(&s)?;
        let local = stack(ctx).local_addr(&s);
        // Kept: its accepted connections' addresses are made from it.
        stack(ctx).table.update(s.inode, |m| m.local = Some(local));
        stack(ctx).listening(local, Proto::Tcp);
    }
    Ok(Reply::Continue)
}

/// connect(fd, addr, len); `answer_local`: the call is marked to learn a
/// sandbox-local TCP connection ([`local_answer`]).
pub(crate) fn connect(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    (ptr, len): (u64, u32),
    answer_local: bool,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    let bytes = read_sockaddr(g, ptr, len)?;
    if bytes.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let Some(dst) = connect_addr(ctx, g, &s, &bytes)? else {
        // AF_UNSPEC: dissolve a UDP association (`Stack::disconnect`).
        live(g)?;
        stack(ctx).disconnect(&s)?;
        return Ok(Reply::Value(0));
    };
    check_family(ctx, &s, dst)?;
    live(g)?;
    if let Some(r) = dial::resume(ctx, g, fd, &s) {
        return r;
    }
    match addr::local_destination(dst) {
        Some(_) if stack(ctx).egress().takes_loopback(dst, s.meta.proto) => {
            egress(ctx, g, fd, &s, dst)
        }
        Some(local) => connect_local(ctx, g, (fd, answer_local), &s, local),
        None => egress(ctx, g, fd, &s, dst),
    }
}

/// A connect's destination (`None`: `AF_UNSPEC`). Any other family
/// autobinds a UDP socket first, as `inet_dgram_connect` does. A UDP IPv6
/// socket also takes an IPv4 address, as `__ip6_datagram_connect` hands it
/// to IPv4's connect: it then reports a v4-mapped source
/// (`::ffff:127.0.0.1`) and peer, and reaches IPv4 only. A v6-only one
/// refuses it with EAFNOSUPPORT (a v4-mapped address: ENETUNREACH, from
/// [`check_family`]).
fn connect_addr(
    ctx: &Context,
    g: &dyn Guest,
    s: &Sock,
    bytes: &[u8],
) -> Result<Option<SocketAddr>, Errno> {
    if family_of(bytes) == Some(libc::AF_UNSPEC) {
        return Ok(None);
    }
    autobind_udp(ctx, g, s)?;
    parse_addr(address_domain(s, bytes, Errno::EAFNOSUPPORT)?, bytes)
}

/// Connects to a sandbox-loopback destination. A non-blocking TCP
/// connect answers EINPROGRESS, and the socket polls writable with
/// SO_ERROR 0, as on Linux's loopback; when the listener's backlog is
/// full it connects later ([`backlog`]). A blocking one waits for room
/// here in slices, so signals and other guest threads go on.
fn connect_local(
    ctx: &Context,
    g: &dyn Guest,
    (fd, answer_local): (i32, bool),
    s: &Sock,
    dst: SocketAddr,
) -> Res {
    let flags = OFlag::from_bits_truncate(fcntl(s.fd.as_raw_fd(), FcntlArg::F_GETFL)?);
    let guest_nonblocking = flags.contains(OFlag::O_NONBLOCK);
    let to = Connected {
        answer_local,
        nonblocking: guest_nonblocking,
    };
    if guest_nonblocking && s.meta.proto == Proto::Tcp {
        match stack(ctx).connect_local(s, dst) {
            Err(Errno::EAGAIN) => return backlog::connect_later(ctx, g, fd, s, dst),
            result => return connected(ctx, s, dst, &to, result),
        }
    }
    if !guest_nonblocking {
        fcntl(
            s.fd.as_raw_fd(),
            FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
        )?;
    }
    let result = connect_retrying(ctx, g, s, dst);
    if !guest_nonblocking {
        fcntl(s.fd.as_raw_fd(), FcntlArg::F_SETFL(flags))?;
    }
    let result = match result {
        Err(Errno::ECONNREFUSED) if s.meta.proto == Proto::Udp => udp_unbound(ctx, s),
        Ok(()) if s.meta.proto == Proto::Udp => {
            stack(ctx).set_refusals(s, None);
            Ok(())
        }
        r => r,
    };
    connected(ctx, s, dst, &to, result)
}

/// How a loopback connect answers: marked to learn a local connection
/// ([`local_answer`]), and whether its socket is non-blocking.
#[derive(Clone, Copy)]
struct Connected {
    answer_local: bool,
    nonblocking: bool,
}

/// Set in a marked connect's answer when it is in progress.
const IN_PROGRESS: u64 = super::note::CONNECT_IN_PROGRESS;

/// The answer of a loopback TCP connect that connected (`in_progress`:
/// a non-blocking one's first) the socket `s`, whose TCP_NODELAY is in
/// its host socket when `in_host`. Unmarked: 0, or EINPROGRESS. Marked
/// with [`crate::policy::NODELAY_MARK`] in its fifth register (r8, which
/// the kernel ignores): the host socket's inode (a sockfs inode, below
/// 2^32), with [`IN_PROGRESS`] set for the non-blocking one. The guest's
/// preload (`sandbox/guest/socket_names.c`) answers its caller 0 or
/// EINPROGRESS, and keeps the descriptor as a local connection while
/// `fstat` shows that inode: its TCP_NODELAY is the host socket's
/// (`netstack::nodelay`). Nothing is written to the guest; a guest that
/// forges the mark learns its own socket's inode, which `fstat` tells it
/// anyway.
fn local_answer(to: &Connected, s: &Sock, in_host: bool, in_progress: bool) -> Res {
    // A sockfs inode is below 2^32; anything else is answered unmarked.
    match (
        to.answer_local && in_host && s.inode < IN_PROGRESS,
        in_progress,
    ) {
        (true, false) => Ok(Reply::Value(s.inode as i64)),
        (true, true) => Ok(Reply::Value((s.inode | IN_PROGRESS) as i64)),
        (false, false) => Ok(Reply::Value(0)),
        (false, true) => Err(Errno::EINPROGRESS),
    }
}

/// A UDP connect to a loopback port nobody has bound succeeds, as UDP's
/// only records the peer (the socket is autobound already); a stand-in
/// refuses each datagram after, as Linux's loopback answers it with a
/// port unreachable ([`netstack::refused`]). A ping socket's peer closes
/// at once (its next send is refused).
fn udp_unbound(ctx: &Context, s: &Sock) -> Result<(), Errno> {
    use netstack::refused::{self, Refuser};
    let net = stack(ctx);
    let sockets = net.sockets();
    let by = if s.meta.is_udp() {
        refused::connect_refused(sockets.as_ref(), s.fd.as_fd())?
    } else {
        refused::connect_to_closed(sockets.as_ref(), s.fd.as_fd())?;
        Refuser::Closed
    };
    let refusals = (by == Refuser::StandIn).then_some(netstack::Refusals::StandIn);
    net.set_refusals(s, refusals);
    Ok(())
}

/// The answer to a loopback connect whose host connect ended with
/// `result`: a second connect of a non-blocking socket answers 0 once
/// (as a TCP connect in progress that has completed), a first one
/// EINPROGRESS. A marked TCP connect learns its connection is local
/// ([`local_answer`]).
fn connected(
    ctx: &Context,
    s: &Sock,
    dst: SocketAddr,
    to: &Connected,
    result: Result<(), Errno>,
) -> Res {
    let net = stack(ctx);
    if result == Err(Errno::EISCONN) && s.meta.connect_reported {
        net.table.update(s.inode, |m| m.connect_reported = false);
        return local_answer(to, s, s.meta.nodelay_in_host, false);
    }
    result?;
    if s.meta.proto == Proto::Udp {
        net.set_peer(s, Some(dst));
        net.connected_to(s, dst);
        return Ok(Reply::Value(0));
    }
    let in_host = net.connected_locally(s, dst);
    if to.nonblocking {
        net.table.update(s.inode, |m| m.connect_reported = true);
    }
    local_answer(to, s, in_host, to.nonblocking)
}

/// Retries while the listener's backlog is full, until the socket's
/// SO_SNDTIMEO passes: then EINPROGRESS, as a blocking TCP connect that
/// times out answers.
fn connect_retrying(ctx: &Context, g: &dyn Guest, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
    let mut handed_off = false;
    let mut deadline = None;
    loop {
        match stack(ctx).connect_local(s, dst) {
            Err(Errno::EAGAIN) => {
                if !handed_off {
                    g.may_block();
                    handed_off = true;
                    let timeout = wait::timeout_of(s.fd.as_fd(), PollFlags::POLLOUT);
                    deadline = timeout.map(|t| Instant::now() + t);
                }
                if deadline.is_some_and(|end| Instant::now() >= end) {
                    return Err(Errno::EINPROGRESS);
                }
                wait::pause(g)?;
            }
            r => return r,
        }
    }
}

/// A destination outside the sandbox: the egress seam decides. Refused:
/// recorded, and ECONNREFUSED (TCP) or ENETUNREACH (UDP) at once. Allowed:
/// the seam's connected socket takes the guest descriptor's place; a host
/// connect that failed is the guest's errno (ECONNREFUSED, ENETUNREACH...).
/// TCP dials in the background (`dial.rs`).
fn egress(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dst: SocketAddr) -> Res {
    if s.meta.proto == Proto::Tcp {
        return dial::connect(ctx, g, fd, s, dst);
    }
    let net = stack(ctx);
    let conn = match net.egress().connect(dst, s.meta.proto) {
        Ok(conn) => conn,
        Err(Refusal::Failed(e)) => return Err(e),
        Err(Refusal::Denied(denied)) => {
            net.denials().record(dst, s.meta.proto, &denied.reason);
            return Err(Errno::ENETUNREACH);
        }
    };
    dial::install(ctx, g, fd, s, dst, conn)
}
