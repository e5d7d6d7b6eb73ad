//! Adopting a host socket the guest made itself as a new netstack
//! socket: the guest's preload makes the `AF_UNIX` socket natively and
//! hands it over in one serviced call (`syscalls/src/handlers/net/
//! adopt.rs`), so the answer needs no descriptor installed in the guest.
//!
//! The socket is hostile until checked. It is taken only when it is a
//! fresh one of the kind [`Stack::create`] would have made: a socket of
//! type stream (TCP) or datagram (UDP, ping), of `AF_UNIX`, unbound
//! (its name is the family alone), without a peer, made in the same
//! network namespace as this stack's own sockets (their
//! `SO_NETNS_COOKIE`s are equal: abstract names on it then resolve among
//! the sandbox's only), and not in the table yet (a netstack socket
//! already, or one adopted twice). Domain, type and namespace never
//! change for a socket; its name and peer are the guest's to change
//! natively until the table holds it, as it may change those of any
//! `AF_UNIX` socket of its own. Anything else: EBADF, and the table is
//! unchanged.
//!
//! Owns: those checks and the entry. Does not own: where the socket
//! comes from (the guest's descriptor, the handler's `pidfd_getfd`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, SockType, UnixAddr};

use super::{inode_of, new_meta, Stack};
use crate::{sys, Proto};

impl Stack {
    /// Records `fd`, a socket the guest made, as its new socket of
    /// `socket(domain, _, protocol)` of transport `proto`; returns its
    /// inode. EBADF when it is not a fresh `AF_UNIX` socket of the
    /// right type in this stack's namespace, or is the netstack's
    /// already (module doc).
    pub fn adopt_socket(
        &self,
        fd: &OwnedFd,
        domain: i32,
        proto: Proto,
        protocol: i32,
    ) -> Result<u64, Errno> {
        let fd = fd.as_fd();
        if !self.fresh(fd, proto) {
            return Err(Errno::EBADF);
        }
        let inode = inode_of(fd).map_err(|_| Errno::EBADF)?;
        if !self
            .table
            .insert_new(inode, new_meta(domain, proto, protocol))
        {
            return Err(Errno::EBADF);
        }
        Ok(inode)
    }

    /// Whether `fd` is an unbound, unconnected `AF_UNIX` socket of
    /// `proto`'s type, made in this stack's namespace.
    fn fresh(&self, fd: BorrowedFd<'_>, proto: Proto) -> bool {
        let want = match proto {
            Proto::Tcp => SockType::Stream,
            Proto::Udp => SockType::Datagram,
        };
        // Any other family fails to decode as a unix address.
        let unnamed = socket::getsockname::<UnixAddr>(fd.as_raw_fd()).is_ok_and(|a| a.is_unnamed());
        unnamed
            && socket::getsockopt(&fd, sockopt::SockType) == Ok(want)
            && socket::getpeername::<UnixAddr>(fd.as_raw_fd()) == Err(Errno::ENOTCONN)
            && self.same_namespace(fd)
    }

    /// Whether `fd` was made in the namespace of this stack's sockets.
    fn same_namespace(&self, fd: BorrowedFd<'_>) -> bool {
        let ours = self.netns.get_or_init(|| {
            let probe = self.sockets.socket(SockType::Datagram).ok()?;
            sys::netns_cookie(probe.as_fd()).ok()
        });
        match ours {
            Some(cookie) => sys::netns_cookie(fd) == Ok(*cookie),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::OwnedFd;

    use nix::errno::Errno;
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr};

    use crate::{Proto, Stack};

    fn unix(ty: SockType) -> OwnedFd {
        socket::socket(AddressFamily::Unix, ty, SockFlag::SOCK_CLOEXEC, None).unwrap()
    }

    #[test]
    fn a_fresh_socket_is_adopted_once() {
        let st = Stack::default();
        let fd = unix(SockType::Stream);
        let inode = st.adopt_socket(&fd, libc::AF_INET6, Proto::Tcp, 0).unwrap();
        let s = st.identify(fd.try_clone().unwrap()).unwrap();
        assert_eq!(
            (s.inode, s.meta.domain, s.meta.proto),
            (inode, libc::AF_INET6, Proto::Tcp)
        );
        let again = st.adopt_socket(&fd, libc::AF_INET6, Proto::Tcp, 0);
        assert_eq!(again, Err(Errno::EBADF));
        let made = st.create(libc::AF_INET, Proto::Udp, 0, false).unwrap();
        let made_again = st.adopt_socket(&made, libc::AF_INET, Proto::Udp, 0);
        assert_eq!(made_again, Err(Errno::EBADF));
    }

    #[test]
    fn anything_but_a_fresh_socket_of_the_type_is_refused() {
        let st = Stack::default();
        let refused = |fd: &OwnedFd, proto| {
            let before = st.table.len();
            let r = st.adopt_socket(fd, libc::AF_INET, proto, 0);
            assert_eq!(r, Err(Errno::EBADF));
            assert_eq!(st.table.len(), before);
        };
        refused(&unix(SockType::Datagram), Proto::Tcp);
        refused(&unix(SockType::Stream), Proto::Udp);
        refused(&unix(SockType::SeqPacket), Proto::Tcp);
        let bound = unix(SockType::Stream);
        let name = UnixAddr::new_abstract(format!("adopt-{}", std::process::id()).as_bytes());
        socket::bind(std::os::fd::AsRawFd::as_raw_fd(&bound), &name.unwrap()).unwrap();
        refused(&bound, Proto::Tcp);
        let (a, _b) = socket::socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        refused(&a, Proto::Udp);
        let file = OwnedFd::from(std::fs::File::open("/proc/self/status").unwrap());
        refused(&file, Proto::Tcp);
    }
}
