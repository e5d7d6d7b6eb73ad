//! A socket() the guest's preload made half natively: for an
//! `AF_INET`/`AF_INET6` stream or datagram socket the preload
//! (`sandbox/guest/socket_adopt.c`) makes a host `AF_UNIX` socket of the
//! same type and flags itself (the filter passes `AF_UNIX`), then makes
//! the socket call again with [`ADOPT_MARK`] in its fourth register (r10)
//! and that descriptor in its fifth (r8), both ignored by the kernel.
//! The handler takes a copy of the descriptor (`pidfd_getfd`), and the
//! netstack enters the socket in its table when it is a fresh one of
//! its own namespace ([`netstack::Stack::adopt_socket`]); the call
//! answers the descriptor's number with a plain answer: no descriptor
//! is installed, so the kernel does not wait for the guest to take one
//! (ADDFD).
//!
//! The socket call's own checks (family, type, protocol, the policy's
//! denials) come first, as for an unmarked call. A descriptor that is
//! not such a socket (forged, a netstack socket already, bound,
//! connected, of another namespace, closed) is EBADF, which a socket
//! call never answers otherwise: the preload then closes its socket and
//! makes the call unmarked. Nothing is trusted of the guest's but the
//! descriptor, which is checked; everything the guest does with the
//! socket afterwards goes through the filter and the handlers as with
//! one the supervisor made. Does not own: the checks (netstack) or the
//! unmarked path ([`super::socket`]).

use netstack::Proto;

use super::{stack, Res};
use crate::guest::{Guest, Reply, SyscallArgs};
use crate::Context;

/// The mark of a socket call that hands over the guest's own socket
/// (r10). Must equal `ADOPT_MARK` of `sandbox/guest/socket_adopt.c` (a
/// unit test in `sandbox/src/launch/fast_reads.rs` compares them).
pub const ADOPT_MARK: u64 = 0x736f_636b_ad0b_7ed0;

/// The descriptor a socket call hands over (`None`: unmarked).
pub(crate) fn requested(c: &SyscallArgs) -> Option<i32> {
    (c.args[3] == ADOPT_MARK).then_some(c.int(4))
}

/// Adopts the guest's descriptor `fd` as its new socket of
/// `socket(domain, _, protocol)`; answers `fd`.
pub(crate) fn adopt(
    ctx: &Context,
    g: &dyn Guest,
    fd: i32,
    domain: i32,
    proto: Proto,
    protocol: i32,
) -> Res {
    // No liveness check: the socket is the guest's already, and an
    // entry for it changes nothing until the guest uses it.
    let own = g.dup_fd(fd).map_err(|_| nix::errno::Errno::EBADF)?;
    stack(ctx).adopt_socket(&own, domain, proto, protocol)?;
    Ok(Reply::Value(i64::from(fd)))
}
