//! sendmsg and recvmsg on netstack sockets: the `msghdr`'s name is
//! translated as sendto/recvfrom translate theirs (`dgram.rs`), and on
//! UDP sockets the control messages are the IP level's (`ancil.rs`):
//! a send's IPV6_HOPLIMIT, IPV6_TCLASS, IP_TTL, IP_TOS (checked as the
//! kernel checks them) travel with the datagram; a receive reports
//! IP_PKTINFO/IP_TTL/IP_TOS or IPV6_PKTINFO/IPV6_HOPLIMIT/IPV6_TCLASS
//! when the socket asked for them, cut with MSG_CTRUNC as the kernel
//! cuts them. A NULL name CONTINUEs (unless the receiving socket wants
//! control messages; a UDP send with no peer is EDESTADDRREQ), as do
//! sockets not the netstack's. A TCP send with a name is sent as
//! sendto's, the name ignored as TCP ignores it; one without CONTINUEs
//! (EPIPE when the socket was never connected).
//!
//! Every sendmsg is serviced, whatever its flags. SCM_RIGHTS and
//! SCM_CREDENTIALS, which Linux's TCP and UDP accept and ignore, are
//! dropped: such a send goes on the host socket without them, which
//! would carry them. [`send_one`] is a sendmmsg's message (`mmsg.rs`).
//! Every recvmsg is serviced (a receive's name is where the host
//! socket's unix name would show).

use netstack::ancillary::{self, Stamp};
use netstack::Proto;
use nix::errno::Errno;

use super::dgram::{destination, epipe, no_oob, receive, send, send_bytes, MAX_DGRAM, MAX_RECV};
use super::{ancil, has_destination, host_connected, ours, user_range, write_sockaddr, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// UIO_MAXIOV.
const MAX_IOV: usize = 1024;
const MSGHDR_SIZE: usize = 56;
/// Most control bytes a send may carry (the kernel's optmem_max).
const MAX_CONTROL: usize = 20480;
const NAMELEN_AT: u64 = 8;
const CONTROLLEN_AT: u64 = 40;
const FLAGS_AT: u64 = 48;

/// The x86_64 `struct msghdr` fields the handlers use.
pub(super) struct MsgHdr {
    name: u64,
    namelen: u32,
    iov: u64,
    iovlen: u64,
    control: u64,
    controllen: u64,
}

pub(super) fn read_msghdr(g: &dyn Guest, ptr: u64) -> Result<MsgHdr, Errno> {
    let mut b = [0u8; MSGHDR_SIZE];
    g.read_mem(ptr, &mut b)?;
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let name = word(0);
    // copy_msghdr_from_user: no name is length 0; a negative length is
    // EINVAL; a longer one than sockaddr_storage is cut to it.
    let namelen = if name == 0 { 0 } else { word(8) as u32 as i32 };
    let namelen = u32::try_from(namelen).map_err(|_| Errno::EINVAL)?;
    Ok(MsgHdr {
        name,
        namelen: namelen.min(netstack::addr::MAX_LEN as u32),
        iov: word(16),
        iovlen: word(24),
        control: word(32),
        controllen: word(40),
    })
}

/// The guest's iovecs as (base, len), at most UIO_MAXIOV.
fn read_iovecs(g: &dyn Guest, ptr: u64, n: u64) -> Result<Vec<(u64, usize)>, Errno> {
    let n = usize::try_from(n).map_err(|_| Errno::EMSGSIZE)?;
    if n > MAX_IOV {
        return Err(Errno::EMSGSIZE);
    }
    let mut raw = vec![0u8; n * 16];
    if n > 0 {
        g.read_mem(ptr, &mut raw)?;
    }
    let word = |c: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        u64::from_ne_bytes(w)
    };
    // import_iovec: a negative length is EINVAL, a segment past user
    // space EFAULT, before any data moves.
    raw.chunks_exact(16)
        .map(|c| {
            let (base, len) = (word(&c[..8]), word(&c[8..]));
            let len = usize::try_from(len as i64).map_err(|_| Errno::EINVAL)?;
            user_range(base, len)?;
            Ok((base, len))
        })
        .collect()
}

/// MSG_CMSG_COMPAT (0x80000000) is the kernel's own flag: EINVAL from
/// a 64-bit caller.
pub(super) fn no_compat(flags: i32) -> Result<(), Errno> {
    if flags & i32::MIN != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// sendmsg(fd, msg, flags).
pub(crate) fn sendmsg(ctx: &Context, g: &dyn Guest, fd: i32, msg: u64, flags: i32) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    no_compat(flags)?;
    let m = read_msghdr(g, msg)?;
    send_msghdr(ctx, g, &s, &m, flags)
}

/// One serviced send of the `msghdr` `m` on a netstack socket; Continue
/// when the host socket may run it as the guest made it (no name, and
/// no control message that the host unix socket would carry).
pub(super) fn send_msghdr(
    ctx: &Context,
    g: &dyn Guest,
    s: &netstack::stack::Sock,
    m: &MsgHdr,
    flags: i32,
) -> Res {
    if s.meta.proto == Proto::Tcp {
        return send_stream(g, s, m, flags);
    }
    let base = Stamp::of_socket(s.meta.domain, &s.meta.options);
    if m.name == 0 {
        has_destination(ctx, g, s)?;
        let control = read_control(g, m)?;
        ancillary::parse_sent(s.meta.domain, &control, base)?;
        // A kept error fails the send, as [`send`]'s.
        if let Some(e) = super::stack(ctx).take_error(s) {
            return Err(e);
        }
        if ancillary::carries_unix(&control)? {
            return host_send(g, s, m, flags);
        }
        return Ok(Reply::Continue);
    }
    let dst = destination(ctx, g, s, m.name, m.namelen)?;
    let iovs = read_iovecs(g, m.iov, m.iovlen)?;
    no_oob(flags)?;
    let mut data = Vec::new();
    for (base, len) in iovs {
        if data.len().saturating_add(len) > MAX_DGRAM {
            return Err(Errno::EMSGSIZE);
        }
        let at = data.len();
        data.resize(at + len, 0);
        g.read_mem(base, &mut data[at..])?;
    }
    let stamp = ancillary::parse_sent(s.meta.domain, &read_control(g, m)?, base)?;
    send(ctx, g, s, dst, &data, flags, stamp)
}

/// sendmsg on a TCP socket: a name is ignored, as TCP ignores it (the
/// host stream socket would refuse it: EISCONN, or EOPNOTSUPP when not
/// connected), and the data goes as sendto's (at most MAX_RECV bytes).
/// Without a name the host socket runs it, but one never connected is
/// EPIPE (tcp_sendmsg), not the host's ENOTCONN, and one carrying
/// SCM_RIGHTS or SCM_CREDENTIALS is sent without them.
fn send_stream(g: &dyn Guest, s: &netstack::stack::Sock, m: &MsgHdr, flags: i32) -> Res {
    if m.name == 0 && !host_connected(s) {
        return Err(epipe(g, flags));
    }
    let unix = ancillary::carries_unix(&read_control(g, m)?)?;
    if m.name == 0 && !unix {
        return Ok(Reply::Continue);
    }
    host_send(g, s, m, flags)
}

/// Sends `m`'s data on the host socket, without its name or control
/// messages: TCP at most MAX_RECV bytes (a short count), UDP one
/// datagram (EMSGSIZE past MAX_DGRAM).
fn host_send(g: &dyn Guest, s: &netstack::stack::Sock, m: &MsgHdr, flags: i32) -> Res {
    let iovs = read_iovecs(g, m.iov, m.iovlen)?;
    let cap = match s.meta.proto {
        Proto::Tcp => MAX_RECV,
        Proto::Udp => {
            if iovs.iter().fold(0usize, |a, (_, l)| a.saturating_add(*l)) > MAX_DGRAM {
                return Err(Errno::EMSGSIZE);
            }
            no_oob(flags)?;
            MAX_DGRAM
        }
    };
    let mut data = Vec::new();
    for (base, len) in iovs {
        let len = len.min(cap - data.len());
        let at = data.len();
        data.resize(at + len, 0);
        g.read_mem(base, &mut data[at..])?;
    }
    send_bytes(g, s, &data, flags)
}

/// One message of a sendmmsg (`mmsg.rs`), which cannot CONTINUE: what
/// [`send_msghdr`] leaves to the host socket is sent on it here. The
/// bytes sent, and whether that was all of the message's.
pub(super) fn send_one(
    ctx: &Context,
    g: &dyn Guest,
    s: &netstack::stack::Sock,
    m: &MsgHdr,
    flags: i32,
) -> Result<(usize, bool), Errno> {
    let total = read_iovecs(g, m.iov, m.iovlen)?
        .iter()
        .fold(0usize, |a, (_, l)| a.saturating_add(*l));
    let sent = match send_msghdr(ctx, g, s, m, flags)? {
        Reply::Continue => host_send(g, s, m, flags)?,
        other => other,
    };
    match sent {
        Reply::Value(n) => Ok((n as usize, n as usize >= total)),
        _ => Err(Errno::EINVAL),
    }
}

/// The control bytes of a send (ENOBUFS past MAX_CONTROL, as the kernel).
fn read_control(g: &dyn Guest, m: &MsgHdr) -> Result<Vec<u8>, Errno> {
    let len = usize::try_from(m.controllen).map_err(|_| Errno::ENOBUFS)?;
    if len > MAX_CONTROL {
        return Err(Errno::ENOBUFS);
    }
    let mut buf = vec![0u8; len];
    if len > 0 {
        g.read_mem(m.control, &mut buf)?;
    }
    Ok(buf)
}

/// recvmsg(fd, msg, flags).
pub(crate) fn recvmsg(ctx: &Context, g: &dyn Guest, fd: i32, msg: u64, flags: i32) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    no_compat(flags)?;
    let m = read_msghdr(g, msg)?;
    let want = ancil::wanted(&s);
    if m.name == 0 && !want.any() {
        if let Some(e) = super::stack(ctx).take_error(&s) {
            return Err(e);
        }
        // A host stream socket never connected says EINVAL; TCP's
        // receive says ENOTCONN (as `receive` maps it).
        if s.meta.proto == Proto::Tcp && !host_connected(&s) {
            return Err(Errno::ENOTCONN);
        }
        return Ok(Reply::Continue);
    }
    recv_into(ctx, g, &s, msg, &m, flags).map(|n| Reply::Value(n as i64))
}

/// One serviced receive into the guest's `msghdr` at `msg` (read as
/// `m`): the data, the sender's TCP/UDP address as the name, the control
/// messages, `msg_controllen` and `msg_flags`. The bytes received.
pub(super) fn recv_into(
    ctx: &Context,
    g: &dyn Guest,
    s: &netstack::stack::Sock,
    msg: u64,
    m: &MsgHdr,
    flags: i32,
) -> Result<usize, Errno> {
    let want = ancil::wanted(s);
    let iovs = read_iovecs(g, m.iov, m.iovlen)?;
    let cap = iovs
        .iter()
        .fold(0usize, |a, (_, l)| a.saturating_add(*l))
        .min(MAX_RECV);
    let got = receive(ctx, g, s, cap, flags)?;
    let mut rest: &[u8] = &got.data;
    for (base, len) in iovs {
        if rest.is_empty() {
            break;
        }
        let n = len.min(rest.len());
        g.write_mem(base, &rest[..n])?;
        rest = &rest[n..];
    }
    if m.name != 0 {
        let room = m.namelen as usize;
        write_sockaddr(g, m.name, msg + NAMELEN_AT, room, &got.name)?;
    }
    let peek = flags & libc::MSG_PEEK != 0;
    let mut cmsgs = got.socket_cmsgs.clone();
    cmsgs.extend(ancil::messages(ctx, s, want, &got, peek));
    let room = if m.control == 0 { 0 } else { m.controllen };
    let (control, cut) = ancillary::layout(&cmsgs, usize::try_from(room).unwrap_or(usize::MAX));
    // A control message the kernel cannot write (put_cmsg's EFAULT) is
    // skipped, not the call's error: the data is returned and
    // msg_controllen counts none.
    let written = if control.is_empty() || g.write_mem(m.control, &control).is_err() {
        0
    } else {
        control.len()
    };
    g.write_mem(msg + CONTROLLEN_AT, &(written as u64).to_ne_bytes())?;
    let mut out_flags = if got.truncated { libc::MSG_TRUNC } else { 0 };
    if cut {
        out_flags |= libc::MSG_CTRUNC;
    }
    g.write_mem(msg + FLAGS_AT, &out_flags.to_ne_bytes())?;
    Ok(got.ret)
}
