//! Where the netstack's host `AF_UNIX` sockets come from, and where the
//! kernel lists them.
//!
//! An abstract unix name is looked up in the network namespace the
//! socket was *created* in (`sock_net(sk)`), whichever thread binds,
//! connects or sends on it later. So every socket that stands for a
//! guest TCP/UDP socket, or that the guest's sockets reach by name (the
//! DNS stub's, `--publish`'s guest side, egress's guest side), must be
//! created in the sandbox's own network namespace, where only the
//! sandbox's own abstract names exist. A run plugs in a source that does
//! so (the supervisor's socket factory); [`LocalSockets`] creates them in
//! the caller's namespace, for tests of this crate.
//!
//! Owns: the [`UnixSockets`] seam and the in-process source. Does not
//! own: entering namespaces (the supervisor does).

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};

/// `/proc/net/unix` of the caller's own network namespace.
pub const OWN_PROC_NET_UNIX: &str = "/proc/net/unix";

/// A source of `AF_UNIX` sockets in one network namespace. Every socket
/// it returns is close-on-exec and blocking.
pub trait UnixSockets: Send + Sync {
    /// A new unbound socket of type `ty` (stream or datagram).
    fn socket(&self, ty: SockType) -> Result<OwnedFd, Errno>;
    /// A connected pair of type `ty`.
    fn pair(&self, ty: SockType) -> Result<(OwnedFd, OwnedFd), Errno>;
    /// The kernel's list of the unix sockets of that namespace (the
    /// `/proc/<pid>/net/unix` of a process inside it).
    fn listing(&self) -> PathBuf;
    /// A `NETLINK_SOCK_DIAG` socket of that namespace (its unix sockets'
    /// queues, `queues.rs`). Every call may return the same socket.
    fn diag(&self) -> Result<OwnedFd, Errno>;
    /// Readies that namespace before the guest looks at it or uses it
    /// (its loopback up, for one): called before the guest's first
    /// netlink route socket or read under `/proc/<pid>/net`; the first
    /// socket made here readies it too. Idempotent and cheap once done.
    fn ready_namespace(&self) -> Result<(), Errno> {
        Ok(())
    }
}

/// Sockets created by the calling thread, in its own network namespace.
#[derive(Debug, Default)]
pub struct LocalSockets;

impl UnixSockets for LocalSockets {
    fn socket(&self, ty: SockType) -> Result<OwnedFd, Errno> {
        socket::socket(AddressFamily::Unix, ty, SockFlag::SOCK_CLOEXEC, None)
    }

    fn pair(&self, ty: SockType) -> Result<(OwnedFd, OwnedFd), Errno> {
        socket::socketpair(AddressFamily::Unix, ty, None, SockFlag::SOCK_CLOEXEC)
    }

    fn listing(&self) -> PathBuf {
        PathBuf::from(OWN_PROC_NET_UNIX)
    }

    fn diag(&self) -> Result<OwnedFd, Errno> {
        diag_socket()
    }
}

/// A new `NETLINK_SOCK_DIAG` socket in the caller's network namespace.
pub fn diag_socket() -> Result<OwnedFd, Errno> {
    socket::socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        socket::SockProtocol::NetlinkSockDiag,
    )
}
