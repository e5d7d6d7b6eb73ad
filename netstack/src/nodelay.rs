//! TCP_NODELAY of a sandbox-local TCP connection (accepted, or connected
//! to a sandbox listener): kept in its host `AF_UNIX` socket as the
//! `SO_WIFI_STATUS` flag, which does nothing to an `AF_UNIX` socket
//! (only a Wi-Fi driver's transmit status reads it), so that the guest's
//! preload may set and read it without a round trip (a marked
//! setsockopt or getsockopt of that flag passes the filter:
//! `sandbox/guest/socket_names.c`), and every process holding the socket
//! (a fork's child, one it was passed to, a static program) is told the
//! same value by the served call. Every other socket's TCP_NODELAY is in
//! the table ([`crate::options`]): a listener's (its connections inherit
//! it, as Linux's do), an unconnected socket's, a relayed connection's
//! (whose host TCP socket must carry it out: [`crate::HostOption`]). A
//! local connection stays connected to its host peer (a TCP disconnect
//! keeps the host connection), so it is never relayed afterwards.
//!
//! The guest's own SO_WIFI_STATUS on a netstack socket is answered from
//! the table ([`crate::options::classify`]), never from this flag.
//!
//! Owns: where a connection's TCP_NODELAY lives and its moves there.
//! Does not own: the option's classification and checks (`options`),
//! the note that tells the preload a connection is local (the handlers').

use std::os::fd::{AsFd, BorrowedFd};

use crate::options::Class;
use crate::stack::{Sock, Stack};
use crate::sys;

/// Whether `(level, name)` is TCP_NODELAY.
pub fn is_nodelay(level: i32, name: i32) -> bool {
    level == libc::IPPROTO_TCP && name == libc::TCP_NODELAY
}

impl Stack {
    /// The value of a stored option of `s` (`class` is `Stored`): a local
    /// connection's TCP_NODELAY from its host socket, anything else from
    /// the table.
    pub fn stored_option(&self, s: &Sock, level: i32, name: i32, class: Class) -> i32 {
        if s.meta.nodelay_in_host && is_nodelay(level, name) {
            if let Ok(on) = sys::wifi_status(s.fd.as_fd()) {
                return i32::from(on);
            }
        }
        s.meta.options.get(level, name, class)
    }

    /// Stores a stored option of `s` (its value checked): a local
    /// connection's TCP_NODELAY in its host socket, anything else in the
    /// table.
    pub fn set_stored_option(&self, s: &Sock, level: i32, name: i32, class: Class, v: i32) {
        if s.meta.nodelay_in_host
            && is_nodelay(level, name)
            && sys::set_wifi_status(s.fd.as_fd(), v != 0).is_ok()
        {
            return;
        }
        self.table
            .update(s.inode, |m| m.options.set(level, name, class, v));
    }

    /// Records that the TCP socket `s` is connected to `peer`, a sandbox
    /// listener's: its TCP_NODELAY (set before the connect) moves to its
    /// host socket. `false` where the host socket refused it (kept in
    /// the table then).
    pub fn connected_locally(&self, s: &Sock, peer: std::net::SocketAddr) -> bool {
        let in_host = nodelay_to_host(s.fd.as_fd(), &s.meta.options);
        self.table.update(s.inode, |m| {
            m.peer = Some(peer);
            m.nodelay_in_host = in_host;
        });
        in_host
    }
}

/// Puts the TCP_NODELAY of `options` on the new local connection `conn`
/// (a host socket's flag starts clear: nothing to do when it is off);
/// `false` when the host socket refused it, which then keeps it in the
/// table.
pub(crate) fn nodelay_to_host(conn: BorrowedFd<'_>, options: &crate::options::Options) -> bool {
    !options.flag(libc::IPPROTO_TCP, libc::TCP_NODELAY) || sys::set_wifi_status(conn, true).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::Proto;
    use crate::options::classify;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

    #[test]
    fn the_flag_starts_clear_and_holds_what_is_set() {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::empty(),
        )
        .unwrap();
        assert_eq!(sys::wifi_status(a.as_fd()), Ok(false));
        sys::set_wifi_status(a.as_fd(), true).unwrap();
        assert_eq!(sys::wifi_status(a.as_fd()), Ok(true));
        assert_eq!(sys::wifi_status(b.as_fd()), Ok(false));
        let mut o = crate::options::Options::default();
        assert!(nodelay_to_host(b.as_fd(), &o));
        assert_eq!(sys::wifi_status(b.as_fd()), Ok(false));
        let nd = classify(
            libc::AF_INET,
            Proto::Tcp,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
        );
        o.set(libc::IPPROTO_TCP, libc::TCP_NODELAY, nd, 1);
        assert!(nodelay_to_host(b.as_fd(), &o));
        assert_eq!(sys::wifi_status(b.as_fd()), Ok(true));
    }
}
