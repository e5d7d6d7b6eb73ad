//! The one host call of this crate that nix does not wrap: dissolving a
//! datagram socket's association (`connect` with an `AF_UNSPEC` address,
//! which `unix_dgram_connect` takes as a disconnect).
//!
//! Owns: that call and its `unsafe`. Does not own: when to make it
//! (`stack/source.rs`).

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

/// Dissolves the association of the datagram socket `fd`: it has no
/// peer again, sends need an address and any socket may send to it.
pub fn disconnect(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    let unspec = libc::sockaddr {
        sa_family: libc::AF_UNSPEC as libc::sa_family_t,
        sa_data: [0; 14],
    };
    let len = std::mem::size_of::<libc::sockaddr>() as libc::socklen_t;
    // SAFETY: `unspec` is a valid, initialised sockaddr of `len` bytes
    // that outlives the call, and `fd` is a descriptor we hold open.
    let r = unsafe { libc::connect(fd.as_raw_fd(), &unspec, len) };
    Errno::result(r).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr};
    use std::os::fd::AsFd;

    #[test]
    fn dissolves_a_datagram_association() {
        let new = || {
            socket::socket(
                AddressFamily::Unix,
                SockType::Datagram,
                SockFlag::SOCK_CLOEXEC,
                None,
            )
            .unwrap()
        };
        let (a, b) = (new(), new());
        socket::bind(b.as_raw_fd(), &UnixAddr::new_unnamed()).unwrap();
        let name: UnixAddr = socket::getsockname(b.as_raw_fd()).unwrap();
        socket::connect(a.as_raw_fd(), &name).unwrap();
        assert!(socket::getpeername::<UnixAddr>(a.as_raw_fd()).is_ok());
        disconnect(a.as_fd()).unwrap();
        let peer = socket::getpeername::<UnixAddr>(a.as_raw_fd());
        assert_eq!(peer.err(), Some(Errno::ENOTCONN));
    }
}
