//! accept and accept4 on a netstack listener, with or without an address
//! buffer: the accepted connection enters the netstack's table either way,
//! so its own and its peer's names are TCP addresses (libuv, hence Node,
//! accepts with a NULL address and asks getpeername after). On the guest's
//! own `AF_UNIX` listeners the call CONTINUEs to the kernel's accept.
//!
//! A connection is taken only once the listener is ready (a blocking
//! guest waits in [`wait`] slices, so a signal interrupts it), the peer's
//! name is decoded into the client's TCP address, and the socket is
//! installed with ADDFD+SEND. If the guest cannot take it (the thread died,
//! its address buffer is bad, its table is full), the connection goes to
//! the listener's queue, which the next accept serves first: none is lost.
//! A marked accept also gets the connection's name note ([`note`]).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use netstack::stack::Sock;
use netstack::{addr, Proto};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::PollFlags;

use super::{nonblocking, note, ours, read_len, stack, wait, write_sockaddr, Res};
use crate::guest::{Guest, Reply};
use crate::Context;

/// accept4(fd, addr, addrlen, flags) (accept: flags 0); `note`: where a
/// marked call asks for its name note.
pub(crate) fn accept4(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    (ptr, len_ptr): (u64, u64),
    flags: i32,
    note: Option<u64>,
) -> Res {
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let Some(s) = ours(ctx, g, fd) else {
        return Ok(Reply::Continue);
    };
    if s.meta.proto != Proto::Tcp {
        return Err(Errno::EOPNOTSUPP);
    }
    let nonblock = flags & libc::SOCK_NONBLOCK != 0;
    let conn = match stack(ctx).take_pending(s.inode) {
        Some(conn) => {
            if let Err(e) = set_status(&conn, nonblock) {
                stack(ctx).requeue(s.inode, conn);
                return Err(e);
            }
            conn
        }
        None => take(ctx, g, &s, nonblock)?,
    };
    // The length after the connection, as the kernel reads it (nothing
    // pending is EAGAIN whatever the pointer); a bad one requeues it.
    let room = match (ptr != 0).then(|| read_len(g, len_ptr)).transpose() {
        Ok(room) => room,
        Err(e) => {
            stack(ctx).requeue(s.inode, conn);
            return Err(e);
        }
    };
    let to = Delivery {
        ptr,
        len_ptr,
        room,
        flags,
        note,
    };
    deliver(ctx, g, &s, conn, &to)
}

/// Where and how an accepted connection goes to the guest.
struct Delivery {
    ptr: u64,
    len_ptr: u64,
    room: Option<usize>,
    flags: i32,
    note: Option<u64>,
}

/// One connection from the listener, waiting for it if the guest's
/// socket blocks. The host accept gives the new file the guest's
/// O_NONBLOCK (`nonblock`) itself, so delivering it needs no fcntl. A
/// listener that polls ready is accepted from at once, blocking or not
/// (a server accepts after its poll said so): its status flags are read
/// only when it is not ready.
fn take(ctx: &Context, g: &dyn Guest, s: &Sock, nonblock: bool) -> Result<OwnedFd, Errno> {
    let ready = wait::ready(s.fd.as_fd(), PollFlags::POLLIN, 0)?;
    let mut wait_first = !ready && !nonblocking(s);
    loop {
        if wait_first {
            wait::until_ready(g, s.fd.as_fd(), PollFlags::POLLIN)?;
        }
        match stack(ctx).accept(s, nonblock) {
            Err(Errno::EAGAIN) if !nonblocking(s) => wait_first = true,
            r => return r,
        }
    }
}

/// Gives a queued connection this call's O_NONBLOCK (it was accepted
/// for an earlier call, which may have asked otherwise).
fn set_status(conn: &OwnedFd, nonblock: bool) -> Result<(), Errno> {
    let flags = match nonblock {
        true => OFlag::O_NONBLOCK,
        false => OFlag::empty(),
    };
    fcntl(conn.as_raw_fd(), FcntlArg::F_SETFL(flags)).map(drop)
}

/// Writes the peer's address (and the note, if asked) and installs the
/// connection; on failure the connection waits in the listener's queue.
fn deliver(ctx: &Context, g: &dyn Guest, s: &Sock, conn: OwnedFd, to: &Delivery) -> Res {
    let net = stack(ctx);
    let adopted = match net.adopt(conn.as_fd(), s) {
        Ok(adopted) => adopted,
        Err(e) => {
            net.requeue(s.inode, conn);
            return Err(e);
        }
    };
    if let Some(room) = to.room {
        let bytes = addr::encode(s.meta.domain, adopted.peer);
        if let Err(e) = write_sockaddr(g, to.ptr, to.len_ptr, room, &bytes) {
            net.requeue(s.inode, conn);
            return Err(e);
        }
    }
    // Before the install: the guest's call returns as ADDFD completes.
    note::leave(g, to.note, s.meta.domain, &adopted);
    match g.install_fd(conn, to.flags & libc::SOCK_CLOEXEC != 0) {
        Ok(n) => Ok(Reply::Answered(i64::from(n))),
        Err((e, conn)) => {
            net.requeue(s.inode, conn);
            Err(e)
        }
    }
}
