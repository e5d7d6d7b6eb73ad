//! A non-blocking loopback TCP connect whose listener's backlog is full.
//! Linux answers EINPROGRESS, and the socket polls nothing until the
//! listener makes room, then writable with SO_ERROR 0. The host
//! `AF_UNIX` connect would answer EAGAIN instead, so the connect becomes
//! a *dial* (`dial.rs`) whose dialer is the guest's own socket connecting
//! again and again on a thread: a stand-in takes the guest's descriptor
//! meanwhile (`gate.rs`), and getsockopt(SO_ERROR) or another connect
//! puts the connected socket back in its place.
//!
//! Owns: the dialer (a connect every [`RETRY`], at most [`LIMIT`], then
//! ETIMEDOUT as TCP's SYN retries end; abandoned when the guest closes
//! the stand-in) and putting the socket back. Does not own: the stand-in, or keeping the dial (`dial`).

use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netstack::stack::Sock;
use netstack::{Refusal, Stack};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};

use super::dial::{self, Outcome};
use super::gate::Gate;
use super::{stack, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// How long a connect waits for backlog room in all (Linux's six SYN
/// retries take 127 s).
const LIMIT: Duration = Duration::from_secs(127);
/// How often the dial tries the listener again (there is no wake-up for
/// room in an `AF_UNIX` backlog that a non-blocking connect can wait on).
const RETRY: Duration = Duration::from_millis(10);

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
    let watch = gate.watch()?;
    let dialer = move || dial(&shared, sock, dst, &watch);
    let dial = dial::spawn(dst, Some(gate), true, dialer)?;
    dial::keep_with_stand_in(ctx, g, fd, &outer, meta, dial)?;
    Err(Errno::EINPROGRESS)
}

/// Connects the guest's socket (no longer in its descriptor table; as
/// non-blocking as the guest made it) every [`RETRY`] until the listener
/// has room, is gone (ECONNREFUSED) or [`LIMIT`] passes (ETIMEDOUT). A
/// guest that closes the stand-in meanwhile abandons the connect
/// (ECONNABORTED), so the listener never sees it, as Linux drops the SYN.
fn dial(net: &Arc<Stack>, sock: OwnedFd, dst: SocketAddr, watch: &Gate) -> Outcome {
    let s = net.identify(sock).ok_or(Refusal::Failed(Errno::EBADF))?;
    let end = Instant::now() + LIMIT;
    loop {
        if watch.abandoned() {
            return Err(Refusal::Failed(Errno::ECONNABORTED));
        }
        match net.connect_local(&s, dst) {
            Err(Errno::EAGAIN | Errno::EINTR) if Instant::now() < end => std::thread::sleep(RETRY),
            Err(Errno::EAGAIN) => return Err(Refusal::Failed(Errno::ETIMEDOUT)),
            r => return r.map(|()| s.fd).map_err(Refusal::Failed),
        }
    }
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
