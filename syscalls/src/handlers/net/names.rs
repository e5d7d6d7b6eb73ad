//! getsockname, getpeername, getsockopt and setsockopt on netstack
//! sockets: addresses decoded from the host socket's names, options
//! classified by [`netstack::options`] (native ones CONTINUE to the host
//! socket; identity and peer ones answered truthfully; TCP/IP ones
//! stored).

use netstack::options::{self, Class};
use netstack::{addr, Proto};
use nix::errno::Errno;

use super::{ours, read_int, read_len, stack, write_sockaddr, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// getsockname (peer false) or getpeername (peer true).
pub(crate) fn name(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    ptr: u64,
    len_ptr: u64,
    peer: bool,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    // The name first, then the length (as the kernel: an unconnected
    // socket is ENOTCONN whatever the length pointer holds).
    let a = if peer {
        stack(ctx).peer_addr(&s)?
    } else {
        stack(ctx).local_addr(&s)
    };
    let room = read_len(g, len_ptr)?;
    write_sockaddr(g, ptr, len_ptr, room, &addr::encode(s.meta.domain, a))?;
    Ok(Reply::Value(0))
}

/// getsockopt(fd, level, name, value, len).
pub(crate) fn getsockopt(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    level: i32,
    name: i32,
    ptr: u64,
    len_ptr: u64,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    let class = options::classify(s.meta.domain, s.meta.proto, level, name);
    let pending = (level == libc::SOL_SOCKET && name == libc::SO_ERROR)
        .then(|| {
            let kept = || stack(ctx).take_error(&s).map(|e| Ok(e as i32));
            // A socket a refusal marks had its host socket's error read
            // (and so cleared) just now: 0, answered here, for a mark
            // landing after the read to be the next call's, not the
            // kernel's ECONNRESET to this one (`netstack::mark`).
            let unmarked = || s.meta.refusals.map(|_| Ok(0));
            super::dial::so_error(ctx, g, fd, &s)
                .or_else(kept)
                .or_else(unmarked)
        })
        .flatten();
    let fresh = options::fresh_buffer(s.meta.proto, &s.meta.options, level, name);
    let v = match (pending.or(fresh.map(Ok)), class) {
        (Some(result), _) => result?,
        (None, Class::Native) => return Ok(Reply::Continue),
        (None, Class::Unsupported) => return Err(unknown_get(&s.meta, level)),
        (None, Class::Peer) => return peer_option(ctx, g, &s, name, ptr, len_ptr),
        (None, Class::Identity) => identity(&s.meta, name),
        (None, Class::Stored { .. }) => stack(ctx).stored_option(&s, level, name, class),
    };
    let room = if level == libc::IPPROTO_IPV6 {
        // do_ipv6_getsockopt takes the length as unsigned (min with 4);
        // the other levels refuse a negative one.
        read_int(g, len_ptr)? as u32 as usize
    } else {
        read_len(g, len_ptr)?
    };
    let n = room.min(4);
    let len = (n as u32).to_ne_bytes();
    g.write_mems(&[(ptr, &v.to_ne_bytes()[..n]), (len_ptr, &len)])?;
    Ok(Reply::Value(0))
}

/// The errno of a getsockopt the netstack does not answer: an IPv4
/// socket hands a level that is not its transport's down to
/// `ip_getsockopt`, which refuses any level but SOL_IP with EOPNOTSUPP;
/// everything else is ENOPROTOOPT.
fn unknown_get(meta: &netstack::Meta, level: i32) -> Errno {
    let transport = match meta.proto {
        Proto::Tcp => level == libc::SOL_TCP,
        Proto::Udp => level == libc::SOL_UDP || level == libc::IPPROTO_UDPLITE,
    };
    let known = transport || level == libc::SOL_SOCKET || level == libc::SOL_IP;
    if meta.domain == libc::AF_INET && !known {
        Errno::EOPNOTSUPP
    } else {
        Errno::ENOPROTOOPT
    }
}

/// SO_PEERNAME, SO_PEERCRED, SO_PEERGROUPS as `sk_getsockopt` answers
/// them on an internet socket: the peer's address (ENOTCONN without one;
/// EINVAL when the length asks for more than the address holds, else
/// that many bytes), credentials of no process (pid 0, uid and gid -1:
/// a TCP or UDP socket has no `sk_peer_cred`), and so no groups
/// (ENODATA).
fn peer_option(
    ctx: &Context,
    g: &dyn Guest,
    s: &netstack::stack::Sock,
    name: i32,
    ptr: u64,
    len_ptr: u64,
) -> Res {
    // The length first (EFAULT, EINVAL when negative), as sk_getsockopt.
    let room = read_len(g, len_ptr)?;
    let value = match name {
        libc::SO_PEERNAME => {
            let a = stack(ctx).peer_addr(s).map_err(|_| Errno::ENOTCONN)?;
            let raw = addr::encode(s.meta.domain, a);
            raw.get(..room).ok_or(Errno::EINVAL)?.to_vec()
        }
        libc::SO_PEERCRED => {
            let raw: Vec<u8> = [0i32, -1, -1]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            raw[..room.min(raw.len())].to_vec()
        }
        _ => return Err(Errno::ENODATA),
    };
    let len = (value.len() as u32).to_ne_bytes();
    g.write_mems(&[(ptr, &value), (len_ptr, &len)])?;
    Ok(Reply::Value(0))
}

fn identity(meta: &netstack::Meta, name: i32) -> i32 {
    match name {
        libc::SO_TYPE => match meta.proto {
            Proto::Tcp => libc::SOCK_STREAM,
            Proto::Udp => libc::SOCK_DGRAM,
        },
        libc::SO_DOMAIN => meta.domain,
        _ => meta.protocol,
    }
}

/// setsockopt(fd, level, name, value, len).
pub(crate) fn setsockopt(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    level: i32,
    name: i32,
    ptr: u64,
    len: u32,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    // optlen is an int: negative is EINVAL before anything else.
    if (len as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    if level == libc::IPPROTO_IP && name == libc::IP_RETOPTS {
        return ip_retopts(g, ptr, len);
    }
    let class = options::classify(s.meta.domain, s.meta.proto, level, name);
    match class {
        Class::Native => {
            // The unix socket takes it (CONTINUE); a relay's host socket
            // carries out SO_KEEPALIVE too.
            let host = (level == libc::SOL_SOCKET && name == libc::SO_KEEPALIVE)
                .then(|| read_value(g, level, ptr, len).ok())
                .flatten()
                .and_then(|v| netstack::HostOption::of(level, name, v));
            if let Some(opt) = host {
                stack(ctx).egress().set_host_option(s.inode, opt);
            }
            note_buffer(ctx, g, &s, level, name, ptr, len);
            return Ok(Reply::Continue);
        }
        Class::Unsupported | Class::Identity | Class::Peer => return Err(Errno::ENOPROTOOPT),
        Class::Stored { .. } => {}
    }
    let v = read_value(g, level, ptr, len)?;
    let v = options::check(level, name, v)?;
    if level == libc::IPPROTO_IPV6
        && name == libc::IPV6_V6ONLY
        && stack(ctx).local_addr(&s).port() != 0
    {
        return Err(Errno::EINVAL);
    }
    stack(ctx).set_stored_option(&s, level, name, class, v);
    if let Some(opt) = netstack::HostOption::of(level, name, v) {
        stack(ctx).egress().set_host_option(s.inode, opt);
    }
    Ok(Reply::Value(0))
}

/// IP_RETOPTS (iputils ping sets it): IP options for a reply, at most 40
/// bytes as Linux takes them (EINVAL beyond, EFAULT unreadable). Loopback
/// carries no IP header to the guest, so they are read and accepted.
fn ip_retopts(g: &dyn Guest, ptr: u64, len: u32) -> Res {
    const MAX: usize = 40;
    let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
    if len > MAX {
        return Err(Errno::EINVAL);
    }
    let mut opts = [0u8; MAX];
    if len > 0 {
        g.read_mem(ptr, &mut opts[..len])?;
    }
    Ok(Reply::Value(0))
}

/// An option value: an `int`, or for IP-level options a single byte too
/// (as `ip_setsockopt` reads them). EINVAL when shorter.
/// A TCP socket's SO_SNDBUF or SO_RCVBUF (or their FORCE forms) that
/// the host socket will take: from now on it answers them
/// (`options::fresh_buffer`).
fn note_buffer(
    ctx: &Context,
    g: &dyn Guest,
    s: &netstack::stack::Sock,
    level: i32,
    name: i32,
    ptr: u64,
    len: u32,
) {
    let buffer = [
        libc::SO_SNDBUF,
        libc::SO_RCVBUF,
        libc::SO_SNDBUFFORCE,
        libc::SO_RCVBUFFORCE,
    ];
    if s.meta.proto != Proto::Tcp || level != libc::SOL_SOCKET || !buffer.contains(&name) {
        return;
    }
    if read_value(g, level, ptr, len).is_ok() {
        stack(ctx)
            .table
            .update(s.inode, |m| m.options.buffer_set(name));
    }
}

fn read_value(g: &dyn Guest, level: i32, ptr: u64, len: u32) -> Result<i32, Errno> {
    // do_ipv6_setsockopt reads a NULL value as 0.
    if ptr == 0 && level == libc::IPPROTO_IPV6 && len >= 4 {
        return Ok(0);
    }
    if len >= 4 {
        return read_int(g, ptr);
    }
    if len >= 1 && level == libc::IPPROTO_IP {
        let mut b = [0u8; 1];
        g.read_mem(ptr, &mut b)?;
        return Ok(i32::from(b[0]));
    }
    Err(Errno::EINVAL)
}
