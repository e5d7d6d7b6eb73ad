//! Allowed egress TCP connects, which wait for a host connect that may
//! take up to `netstack::outbound::CONNECT_TIMEOUT`: the host connect
//! runs on a thread of its own (a *dial*), so the guest's call behaves
//! as a TCP connect does. Blocking: the worker waits for the dial in
//! slices, and a signal the thread catches ends the call with EINTR
//! while the dial goes on. Non-blocking: EINPROGRESS at once (after the
//! verdict: a denied destination is refused at once). Either way, a
//! dial still running is the socket's: another connect answers EALREADY
//! (non-blocking) or waits for it, and getsockopt(SO_ERROR) — what a
//! program asks once poll says the socket is writable — waits for it
//! and answers its errno (0: the connection took the descriptor's
//! place, as a blocking connect's does).
//!
//! Owns: the dials in progress (at most [`MAX_DIALS`], keyed by the
//! guest socket's inode). Does not own: the verdict, the host connect
//! or the relay (`netstack::outbound`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use netstack::stack::Sock;
use netstack::{addr, Proto, Refusal};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::PollFlags;
use parking_lot::Mutex;

use super::gate::{self, Gate};
use super::{nonblocking, stack, wait, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// Most dials in progress at once (past it: ENOBUFS).
const MAX_DIALS: usize = 256;
/// How long one wait for a dial lasts before checking for signals.
const SLICE: Duration = Duration::from_millis(20);

pub(super) type Outcome = Result<OwnedFd, Refusal>;

/// A dial's end: its outcome, and the stand-in's gate after a success.
struct Done {
    outcome: Outcome,
    gate: Option<Gate>,
}

/// One host connect in progress for a guest socket.
pub(super) struct Dial {
    dst: SocketAddr,
    rx: Receiver<Done>,
    /// The guest's descriptor is a stand-in (`gate`) until the dial ends.
    stand_in: bool,
    /// A loopback connect that waited for backlog room: the connection is
    /// the guest's own socket, not a relay.
    local: bool,
}

/// The sandbox's dials in progress, by guest socket inode (one sandbox
/// per supervisor process).
static DIALS: Mutex<Option<HashMap<u64, Dial>>> = parking_lot::const_mutex(None);

/// connect(2) of a TCP socket to an egress destination.
pub(super) fn connect(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dst: SocketAddr) -> Res {
    if let Some(r) = resume(ctx, g, fd, s) {
        return r;
    }
    let dial = match nonblocking(s) {
        true => return stand_in(ctx, g, fd, s, dst),
        false => start(ctx, dst, None)?,
    };
    finish(ctx, g, fd, s, dial)
}

/// connect(2) of a socket with a dial kept (`None`: it has none): EALREADY
/// or its result when non-blocking, else waits for it.
pub(super) fn resume(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock) -> Option<Res> {
    let dial = take(s.inode)?;
    Some(match nonblocking(s) {
        true => again(ctx, g, fd, s, dial),
        false => finish(ctx, g, fd, s, dial),
    })
}

/// Keeps `dial` for the stand-in `outer` (metadata `meta`), which then
/// takes the guest's descriptor `fd`.
pub(super) fn keep_with_stand_in(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    outer: &OwnedFd,
    meta: netstack::Meta,
    dial: Dial,
) -> Result<(), Errno> {
    let inode = netstack::stack::inode_of(outer.as_fd())?;
    stack(ctx).table.insert(inode, meta);
    put(inode, dial)?;
    if let Err(e) = g.replace_fd(fd, outer) {
        take(inode);
        return Err(e);
    }
    Ok(())
}

/// A non-blocking connect: the dial starts, a stand-in takes the guest's
/// descriptor (keyed by its inode from now on), EINPROGRESS.
fn stand_in(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dst: SocketAddr) -> Res {
    verdict(ctx, dst)?;
    let (outer, gate) = make_stand_in(ctx, s)?;
    let dial = start(ctx, dst, Some(gate))?;
    keep_with_stand_in(ctx, g, fd, &outer, s.meta.clone(), dial)?;
    Err(Errno::EINPROGRESS)
}

/// A stand-in for `s` (with its descriptor's status flags) and its gate.
pub(super) fn make_stand_in(ctx: &Context, s: &Sock) -> Result<(OwnedFd, Gate), Errno> {
    let (outer, gate) = gate::make(stack(ctx))?;
    let flags = fcntl(s.fd.as_raw_fd(), FcntlArg::F_GETFL)?;
    fcntl(
        outer.as_raw_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags)),
    )?;
    Ok((outer, gate))
}

/// Another non-blocking connect while a dial is kept: EALREADY while it
/// runs; once it has ended, its result (0: the connection is in place).
fn again(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dial: Dial) -> Res {
    match dial.rx.try_recv() {
        Ok(done) => complete(ctx, g, fd, s, &dial, done),
        Err(mpsc::TryRecvError::Empty) => {
            put(s.inode, dial)?;
            Err(Errno::EALREADY)
        }
        Err(mpsc::TryRecvError::Disconnected) => Err(Errno::EIO),
    }
}

/// getsockopt(SO_ERROR) of a socket with a dial kept: its errno (`None`:
/// no dial, the host socket answers). A stand-in's running dial answers 0
/// at once, as a TCP connect in progress does; otherwise it waits for the
/// dial, and a signal meanwhile ends the getsockopt with EINTR (the dial
/// is kept; Python retries the call, PEP 475).
pub(super) fn so_error(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    s: &Sock,
) -> Option<Result<i32, Errno>> {
    let dial = take(s.inode)?;
    let result = match dial.stand_in {
        // The gate opens just before the outcome is sent: a stand-in that
        // polls writable has its outcome on the way, and waits for it.
        true => match again(ctx, g, fd, s, dial) {
            Err(Errno::EALREADY) if !wait::ready(s.fd.as_fd(), PollFlags::POLLOUT, 0).ok()? => {
                return Some(Ok(0))
            }
            Err(Errno::EALREADY) => finish(ctx, g, fd, s, take(s.inode)?),
            r => r,
        },
        false => finish(ctx, g, fd, s, dial),
    };
    Some(match result {
        Ok(_) => Ok(0),
        Err(e @ (Errno::EINTR | Errno::ENOENT)) => Err(e),
        Err(e) => Ok(e as i32),
    })
}

/// Refuses a denied `dst` at once (recorded).
fn verdict(ctx: &Context, dst: SocketAddr) -> Result<(), Errno> {
    ctx.net
        .egress()
        .verdict(dst, Proto::Tcp)
        .map_err(|r| refused(ctx, dst, r))
}

/// Starts a dial to an allowed `dst` (a denied one is refused here); a
/// `gate` opens when it succeeds and closes when it fails.
fn start(ctx: &Context, dst: SocketAddr, gate: Option<Gate>) -> Result<Dial, Errno> {
    verdict(ctx, dst)?;
    let net = ctx.net.clone();
    spawn(dst, gate, false, move || {
        net.egress().connect(dst, Proto::Tcp)
    })
}

/// Runs `dialer` on a thread of its own; `local`: its connection is the
/// guest's own socket, connected (see [`super::backlog`]).
pub(super) fn spawn(
    dst: SocketAddr,
    gate: Option<Gate>,
    local: bool,
    dialer: impl FnOnce() -> Outcome + Send + 'static,
) -> Result<Dial, Errno> {
    let stand_in = gate.is_some();
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("dial".into())
        .spawn(move || {
            let outcome = dialer();
            match (outcome.is_ok(), gate) {
                // Opened first: completing the dial forwards what the
                // guest wrote to the stand-in, never the filler.
                (true, Some(gate)) => {
                    let gate = gate.open().ok().map(|()| gate);
                    let _ = tx.send(Done { outcome, gate });
                }
                // Sent first: closing the gate wakes the guest's poll, and
                // its SO_ERROR must then find the outcome.
                (_, gate) => {
                    let _ = tx.send(Done {
                        outcome,
                        gate: None,
                    });
                    drop(gate);
                }
            }
        })
        .map_err(|_| Errno::ENOBUFS)?;
    Ok(Dial {
        dst,
        rx,
        stand_in,
        local,
    })
}

/// Waits for a dial (interruptibly: EINTR keeps it for a later call)
/// and completes it.
fn finish(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dial: Dial) -> Res {
    let done = match dial.rx.try_recv() {
        Ok(done) => done,
        Err(_) => {
            g.may_block();
            loop {
                match dial.rx.recv_timeout(SLICE) {
                    Ok(done) => break done,
                    Err(RecvTimeoutError::Disconnected) => return Err(Errno::EIO),
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if let Err(e) = wait::interrupted(g) {
                    put(s.inode, dial)?;
                    return Err(e);
                }
            }
        }
    };
    complete(ctx, g, fd, s, &dial, done)
}

/// Puts an ended dial's connection in place of the guest's descriptor
/// (after what the guest wrote to a stand-in), or answers its errno.
fn complete(ctx: &Context, g: &dyn Guest, fd: i32, s: &Sock, dial: &Dial, done: Done) -> Res {
    let dst = dial.dst;
    match done.outcome {
        Ok(conn) => {
            if let Some(gate) = &done.gate {
                gate.forward(conn.as_fd())?;
            }
            match dial.local {
                true => super::backlog::install(ctx, g, fd, s, dst, conn),
                false => install(ctx, g, fd, s, dst, conn),
            }
        }
        Err(r) => Err(refused(ctx, dst, r)),
    }
}

/// The errno of a refusal; a denial is recorded.
fn refused(ctx: &Context, dst: SocketAddr, r: Refusal) -> Errno {
    match r {
        Refusal::Failed(e) => e,
        Refusal::Denied(denied) => {
            stack(ctx).denials().record(dst, Proto::Tcp, &denied.reason);
            Errno::ECONNREFUSED
        }
    }
}

/// Puts the relayed connection in place of the guest's descriptor with
/// the descriptor's status flags, records its addresses, and gives its
/// host socket the options the guest set before connecting.
pub(super) fn install(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    s: &Sock,
    dst: SocketAddr,
    conn: OwnedFd,
) -> Res {
    let net = stack(ctx);
    let flags = fcntl(s.fd.as_raw_fd(), FcntlArg::F_GETFL)?;
    fcntl(
        conn.as_raw_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags)),
    )?;
    let mut meta = s.meta.clone();
    meta.local = Some(addr::unspecified(s.meta.domain));
    meta.peer = Some(dst);
    // The relay marks a UDP socket its destination refuses.
    meta.refusals = (meta.proto == Proto::Udp).then_some(netstack::Refusals::Relay);
    let inode = netstack::stack::inode_of(conn.as_fd())?;
    if meta.proto == Proto::Tcp {
        host_options(net, s, &conn, inode);
    }
    net.table.insert(inode, meta);
    g.replace_fd(fd, &conn)?;
    Ok(Reply::Value(0))
}

/// The options the guest set before connecting that the relay's host
/// socket carries out (`HostOption`); SO_KEEPALIVE, which the replaced
/// unix socket held, moves to the relayed descriptor too.
fn host_options(net: &netstack::Stack, s: &Sock, conn: &OwnedFd, inode: u64) {
    use libc::{IPPROTO_TCP as TCP, SOL_SOCKET};
    let stored = [
        libc::TCP_NODELAY,
        libc::TCP_KEEPIDLE,
        libc::TCP_KEEPINTVL,
        libc::TCP_KEEPCNT,
    ]
    .map(|name| (TCP, name, s.meta.options.explicit(TCP, name)));
    use nix::sys::socket::{getsockopt, setsockopt, sockopt::KeepAlive};
    let keepalive = getsockopt(&s.fd, KeepAlive).unwrap_or(false);
    if keepalive {
        let _ = setsockopt(conn, KeepAlive, &true);
    }
    let all = stored
        .into_iter()
        .chain([(SOL_SOCKET, libc::SO_KEEPALIVE, keepalive.then_some(1))]);
    for (level, name, v) in all {
        if let Some(opt) = v.and_then(|v| netstack::HostOption::of(level, name, v)) {
            net.egress().set_host_option(inode, opt);
        }
    }
}

fn take(inode: u64) -> Option<Dial> {
    DIALS.lock().as_mut()?.remove(&inode)
}

/// Keeps a dial for a later call; finished dials nobody asked for go
/// first when the table is full (their connections close).
fn put(inode: u64, dial: Dial) -> Result<(), Errno> {
    let mut guard = DIALS.lock();
    let map = guard.get_or_insert_with(HashMap::new);
    if map.len() >= MAX_DIALS {
        map.retain(|_, d| matches!(d.rx.try_recv(), Err(mpsc::TryRecvError::Empty)));
    }
    if map.len() >= MAX_DIALS {
        return Err(Errno::ENOBUFS);
    }
    map.insert(inode, dial);
    Ok(())
}
