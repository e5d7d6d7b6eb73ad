//! A non-blocking loopback TCP connect whose listener's backlog is full.
//! Linux answers EINPROGRESS, and the socket polls nothing until the
//! listener makes room, then writable with SO_ERROR 0. The host
//! `AF_UNIX` connect would answer EAGAIN instead, so the connect becomes
//! a *dial* (`dial.rs`) whose dialer is the guest's own socket connecting
//! blockingly on a thread: a stand-in takes the guest's descriptor
//! meanwhile (`gate.rs`), and getsockopt(SO_ERROR) or another connect
//! puts the connected socket back in its place.
//!
//! Owns: the dialer (blocking connect in one-second slices, at most
//! [`LIMIT`], then ETIMEDOUT as TCP's SYN retries end) and putting the
//! socket back. Does not own: the stand-in, or keeping the dial (`dial`).

use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netstack::stack::Sock;
use netstack::{Refusal, Stack};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::socket::{getsockopt, setsockopt, sockopt};
use nix::sys::time::{TimeVal, TimeValLike};

use super::dial::{self, Outcome};
use super::{stack, Res};
use crate::guest::{Guest, Reply};
use crate::handlers::Context;

/// How long a connect waits for backlog room in all (Linux's six SYN
/// retries take 127 s).
const LIMIT: Duration = Duration::from_secs(127);
/// One blocking host connect's wait (its SO_SNDTIMEO meanwhile).
const SLICE_SECS: i64 = 1;

/// Answers EINPROGRESS and keeps a dial that connects `s` to `dst` when
/// the listener has room (the caller saw EAGAIN from the host connect).
pub(super) fn connect_later(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    s: &Sock,
    dst: SocketAddr,
) -> Res {
    let net = stack(ctx);
    let (outer, gate) = dial::make_stand_in(ctx, s)?;
    let mut meta = s.meta.clone();
    meta.local = Some(net.local_addr(s));
    meta.peer = Some(dst);
    let sock = s.fd.try_clone().map_err(|_| Errno::EMFILE)?;
    let shared = ctx.net.clone();
    let dial = dial::spawn(dst, Some(gate), true, move || dial(&shared, sock, dst))?;
    dial::keep_with_stand_in(ctx, g, fd, &outer, meta, dial)?;
    Err(Errno::EINPROGRESS)
}

/// Connects the guest's socket (no longer in its descriptor table)
/// blockingly, in slices, until the listener has room, is gone
/// (ECONNREFUSED) or [`LIMIT`] passes (ETIMEDOUT).
fn dial(net: &Arc<Stack>, sock: OwnedFd, dst: SocketAddr) -> Outcome {
    let s = net.identify(sock).ok_or(Refusal::Failed(Errno::EBADF))?;
    let fd = s.fd.as_raw_fd();
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).map_err(Refusal::Failed)?);
    let timeout = getsockopt(&s.fd, sockopt::SendTimeout).map_err(Refusal::Failed)?;
    let slice = TimeVal::seconds(SLICE_SECS);
    let set = fcntl(fd, FcntlArg::F_SETFL(flags.difference(OFlag::O_NONBLOCK)))
        .and_then(|_| setsockopt(&s.fd, sockopt::SendTimeout, &slice));
    let end = Instant::now() + LIMIT;
    let result = set.and_then(|()| loop {
        match net.connect_local(&s, dst) {
            Err(Errno::EAGAIN | Errno::EINTR) if Instant::now() < end => {}
            Err(Errno::EAGAIN) => break Err(Errno::ETIMEDOUT),
            r => break r,
        }
    });
    let _ = setsockopt(&s.fd, sockopt::SendTimeout, &timeout);
    let _ = fcntl(fd, FcntlArg::F_SETFL(flags));
    result.map(|()| s.fd).map_err(Refusal::Failed)
}

/// Puts the connected socket back in the guest's descriptor (with the
/// stand-in's status flags, which the guest may have changed). A later
/// connect answers 0 once, then EISCONN.
pub(super) fn install(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    stand_in: &Sock,
    dst: SocketAddr,
    conn: OwnedFd,
) -> Res {
    let flags = fcntl(stand_in.fd.as_raw_fd(), FcntlArg::F_GETFL)?;
    fcntl(
        conn.as_raw_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags)),
    )?;
    let inode = netstack::stack::inode_of(conn.as_fd())?;
    // A connect after SO_ERROR answers 0 once more, as TCP's does.
    stack(ctx).table.update(inode, |m| {
        m.peer = Some(dst);
        m.connect_reported = true;
    });
    g.replace_fd(fd, &conn)?;
    Ok(Reply::Value(0))
}
