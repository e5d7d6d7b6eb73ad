//! The host calls of this crate that nix does not wrap as it needs them:
//! dissolving a datagram socket's association (`connect` with an
//! `AF_UNSPEC` address, which `unix_dgram_connect` takes as a
//! disconnect), and an `accept4` that hands back an owned descriptor
//! with the flags asked for (nix's gives a raw number; std's listener
//! would need a dup of the guest's socket first), a socket's network
//! namespace cookie (`SO_NETNS_COOKIE`, which nix does not wrap), and
//! its `SO_WIFI_STATUS` flag (neither: `nodelay.rs` says what it carries).
//!
//! Owns: those calls and their `unsafe`. Does not own: when to make
//! them (`stack/source.rs`, `stack.rs`).

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

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

/// One connection from the listener `fd` (none waiting: EAGAIN when
/// the listener's file is non-blocking), its file close-on-exec and,
/// with `nonblock`, O_NONBLOCK; the peer's name is not asked for.
pub fn accept(fd: BorrowedFd<'_>, nonblock: bool) -> Result<OwnedFd, Errno> {
    let flags = libc::SOCK_CLOEXEC | if nonblock { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: null address and length pointers ask the kernel for no
    // peer name; `fd` is a descriptor we hold open.
    let r = unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            flags,
        )
    };
    let conn = Errno::result(r)?;
    // SAFETY: accept4 succeeded, so `conn` is a new descriptor nothing
    // else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(conn) })
}

/// The cookie of the network namespace socket `fd` was made in
/// (`SO_NETNS_COOKIE`, Linux 5.14): equal cookies, the same namespace.
pub fn netns_cookie(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `cookie` and `len` are valid for writes of the sizes given
    // and outlive the call; `fd` is a descriptor we hold open.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    Errno::result(r)?;
    if len as usize != std::mem::size_of::<u64>() {
        return Err(Errno::EINVAL);
    }
    Ok(cookie)
}

/// The `SO_WIFI_STATUS` flag of socket `fd`.
pub fn wifi_status(fd: BorrowedFd<'_>) -> Result<bool, Errno> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes of the sizes given and
    // outlive the call; `fd` is a descriptor we hold open.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_WIFI_STATUS,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    Errno::result(r).map(|_| v != 0)
}

/// Sets or clears the `SO_WIFI_STATUS` flag of socket `fd`.
pub fn set_wifi_status(fd: BorrowedFd<'_>, on: bool) -> Result<(), Errno> {
    let v = libc::c_int::from(on);
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a valid int of `len` bytes that outlives the call;
    // `fd` is a descriptor we hold open.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_WIFI_STATUS,
            (&v as *const libc::c_int).cast(),
            len,
        )
    };
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

    #[test]
    fn accepts_with_the_flags_asked_for() {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
        let l = socket::socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK,
            None,
        )
        .unwrap();
        socket::bind(l.as_raw_fd(), &UnixAddr::new_unnamed()).unwrap();
        socket::listen(&l, socket::Backlog::new(4).unwrap()).unwrap();
        assert_eq!(accept(l.as_fd(), false).err(), Some(Errno::EAGAIN));
        let name: UnixAddr = socket::getsockname(l.as_raw_fd()).unwrap();
        for nonblock in [false, true] {
            let c = socket::socket(
                AddressFamily::Unix,
                SockType::Stream,
                SockFlag::empty(),
                None,
            )
            .unwrap();
            socket::connect(c.as_raw_fd(), &name).unwrap();
            let conn = accept(l.as_fd(), nonblock).unwrap();
            let fl = OFlag::from_bits_truncate(fcntl(conn.as_raw_fd(), FcntlArg::F_GETFL).unwrap());
            assert_eq!(fl.contains(OFlag::O_NONBLOCK), nonblock);
            let fd =
                FdFlag::from_bits_truncate(fcntl(conn.as_raw_fd(), FcntlArg::F_GETFD).unwrap());
            assert!(fd.contains(FdFlag::FD_CLOEXEC));
        }
    }
}
