//! The handlers' side of UDP ancillary data (`netstack::ancillary`):
//! the sandbox's store of datagram stamps, leaving one at a serviced
//! send, and the control messages a serviced receive reports.
//!
//! Owns: the store (one per supervisor process, which serves one
//! sandbox; stamps are keyed by names holding the sandbox's random
//! token). Does not own: the msghdr or guest memory (`msg.rs`).

use std::os::fd::AsRawFd;

use netstack::ancillary::{self, fingerprint, Stamp, Stamps, Wanted};
use netstack::stack::Sock;
use netstack::Proto;
use nix::sys::socket::{getsockname, UnixAddr};

use super::dgram::Received;
use super::stack;
use crate::Context;

/// Stamps of datagrams sent with a non-default hop limit or class.
static STAMPS: Stamps = Stamps::new();

/// Leaves the stamp of a datagram `s` (bound) is about to send.
pub(super) fn leave_stamp(s: &Sock, data: &[u8], stamp: Stamp) {
    let Ok(ua) = getsockname::<UnixAddr>(s.fd.as_raw_fd()) else {
        return;
    };
    if let Some(name) = netstack::name::abstract_of(&ua) {
        STAMPS.record(name, fingerprint(data), stamp);
    }
}

/// What the receiving socket asked for (nothing on TCP sockets).
pub(super) fn wanted(s: &Sock) -> Wanted {
    match s.meta.proto {
        Proto::Udp => Wanted::of(s.meta.domain, &s.meta.options),
        Proto::Tcp => Wanted::default(),
    }
}

/// The control messages of a received datagram, as (level, type, data).
pub(super) fn messages(
    ctx: &Context,
    s: &Sock,
    want: Wanted,
    got: &Received,
    peek: bool,
) -> Vec<(i32, i32, Vec<u8>)> {
    if !want.any() {
        return Vec::new();
    }
    let stamp = got.from.as_deref().map_or_else(Stamp::default, |from| {
        STAMPS.take(from, fingerprint(&got.data), peek)
    });
    let dst = ancillary::destination(stack(ctx).local_addr(s), got.src);
    ancillary::messages(s.meta.domain, want, dst, stamp)
}
