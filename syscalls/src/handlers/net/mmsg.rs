//! sendmmsg and recvmmsg on netstack sockets.
//!
//! sendmmsg: each message is one serviced send as sendmsg's (`msg.rs`,
//! [`send_one`]), so a name is a TCP/UDP address and SCM_RIGHTS is
//! dropped. `__sys_sendmmsg`'s loop: at most UIO_MAXIOV messages; it
//! ends at the first error (the call's error only when no message went;
//! the kernel drops it otherwise), at a `msg_len` it cannot write, or
//! after a stream send that took less than the whole message.
//!
//! recvmmsg: each message is one serviced receive
//! as recvmsg's (`msg.rs`), so its name is the sender's TCP/UDP address
//! and never the host socket's unix name behind the sandbox's token.
//! `do_recvmmsg`'s loop as the kernel runs it: at most UIO_MAXIOV
//! messages; MSG_WAITFORONE makes every receive after the first
//! non-blocking; the timeout is looked at after each message (it never
//! ends a wait) and what is left of it written back when a message came;
//! an error after the first message ends the loop with the count, and a
//! UDP socket keeps it for its next call (`netstack::Meta::error`: the
//! next serviced receive or SO_ERROR reports it; a receive that passes
//! the filter, plain `recv`/`read`, does not see it). Sockets not the
//! netstack's CONTINUE.
//!
//! Owns: the loops over the `mmsghdr` array. Does not own: a message's
//! send or receive (`msg::send_one`, `msg::recv_into`).

use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::msg::{no_compat, read_msghdr, recv_into, send_one};
use super::{ours, stack, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// UIO_MAXIOV: the most messages one call takes.
const MAX_MESSAGES: u32 = 1024;
/// `struct mmsghdr`: a `msghdr` (56 bytes), then `msg_len` (padded to 64).
const MMSGHDR_SIZE: u64 = 64;
const MSG_LEN_AT: u64 = 56;

/// sendmmsg(fd, msgvec, vlen, flags).
pub(crate) fn sendmmsg(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    vec: u64,
    vlen: u32,
    flags: i32,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    no_compat(flags)?;
    let mut done = 0u32;
    while done < vlen.min(MAX_MESSAGES) {
        let at = vec + u64::from(done) * MMSGHDR_SIZE;
        let sent = read_msghdr(g, at).and_then(|m| send_one(ctx, g, &s, &m, flags));
        let whole = match sent.and_then(|(n, whole)| {
            g.write_mem(at + MSG_LEN_AT, &(n as u32).to_ne_bytes())?;
            Ok(whole)
        }) {
            Ok(whole) => whole,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += 1;
        if !whole {
            break;
        }
    }
    Ok(Reply::Value(i64::from(done)))
}

/// recvmmsg(fd, msgvec, vlen, flags, timeout).
pub(crate) fn recvmmsg(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    vec: u64,
    vlen: u32,
    flags: i32,
    timeout: u64,
) -> Res {
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    no_compat(flags)?;
    let end = match timeout {
        0 => None,
        ptr => Some(Instant::now() + read_timeout(g, ptr)?),
    };
    let mut flags = flags;
    let mut done = 0u32;
    while done < vlen.min(MAX_MESSAGES) {
        let at = vec + u64::from(done) * MMSGHDR_SIZE;
        let got = read_msghdr(g, at)
            .and_then(|m| recv_into(ctx, g, &s, at, &m, flags))
            .and_then(|n| g.write_mem(at + MSG_LEN_AT, &(n as u32).to_ne_bytes()));
        match got {
            Ok(()) => {}
            Err(e) if done == 0 => return Err(e),
            Err(e) => {
                keep_error(ctx, &s, e);
                break;
            }
        }
        done += 1;
        if flags & libc::MSG_WAITFORONE != 0 {
            flags |= libc::MSG_DONTWAIT;
        }
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
    }
    // What is left of the timeout goes back once a message came.
    if let Some(end) = end.filter(|_| done > 0) {
        write_timeout(g, timeout, end.saturating_duration_since(Instant::now()))?;
    }
    Ok(Reply::Value(i64::from(done)))
}

/// An error after recvmmsg's first message: a UDP socket keeps it for
/// its next call (`sk_err`), as `do_recvmmsg` does with any but EAGAIN.
fn keep_error(ctx: &Context, s: &netstack::stack::Sock, e: Errno) {
    if e != Errno::EAGAIN && s.meta.is_udp() {
        stack(ctx).keep_error(s, e);
    }
}

/// A `struct timespec` (EFAULT unreadable, EINVAL out of range).
fn read_timeout(g: &dyn Guest, ptr: u64) -> Result<Duration, Errno> {
    let mut b = [0u8; 16];
    g.read_mem(ptr, &mut b)?;
    let sec = i64::from_ne_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let nsec = i64::from_ne_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok(Duration::new(sec as u64, nsec as u32))
}

fn write_timeout(g: &dyn Guest, ptr: u64, left: Duration) -> Result<(), Errno> {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(left.as_secs() as i64).to_ne_bytes());
    b[8..].copy_from_slice(&i64::from(left.subsec_nanos()).to_ne_bytes());
    g.write_mem(ptr, &b)
}
