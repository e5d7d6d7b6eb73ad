//! Reaching a sandbox-loopback destination: connect and datagram sends
//! by address try the names that may serve it in the order Linux picks a
//! listener (the exact address, the family's wildcard, then `::`; each
//! SO_REUSEPORT group's members from a rotating start), and the host side
//! of `--publish` connects the same way. Does not own binding (`bind.rs`)
//! or destinations outside the sandbox (the egress seam).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{self, MsgFlags, UnixAddr};

use super::{Sock, Stack};
use crate::name::Proto;

impl Stack {
    /// The names that may serve a (canonical, local) destination, in the
    /// order Linux picks a listener: the exact address, then the wildcard
    /// of its family, then `::` for IPv4 unless that socket is v6-only.
    fn candidates(&self, proto: Proto, dst: SocketAddr) -> Vec<Vec<u8>> {
        let port = dst.port();
        let any6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port);
        let mut names = vec![self.namer.encode(proto, dst, false)];
        if dst.is_ipv4() {
            let any4 = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port);
            names.push(self.namer.encode(proto, any4, false));
            names.push(self.namer.encode(proto, any6, false));
        } else {
            names.push(self.namer.encode(proto, any6, false));
            names.push(self.namer.encode(proto, any6, true));
        }
        names
            .into_iter()
            .flat_map(|n| self.groups.names(n))
            .collect()
    }

    /// connect(2) of a stream or datagram socket to a sandbox-loopback
    /// destination (canonical): autobinds (a UDP socket to a port of its
    /// wildcard, [`Stack::autobind_port`]), then connects to the first
    /// candidate that has a socket. ECONNREFUSED when none does; other
    /// errors of the host connect (EAGAIN, EISCONN) as they come. A
    /// connected stream socket is EISCONN (the host connect would answer
    /// EAGAIN when the listener's backlog is full, ECONNREFUSED when there
    /// is none): checked first when the table has a peer for it, else
    /// only once the host connect failed, so that a fresh client's
    /// connect (no peer, never connected) makes no `getpeername`. A
    /// listener's connect is EISCONN too, as Linux answers it.
    pub fn connect_local(&self, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
        let tcp = s.meta.proto == Proto::Tcp;
        if tcp && s.meta.peer.is_some() && host_connected(s) {
            return Err(Errno::EISCONN);
        }
        let result = self.connect_candidates(s, dst);
        match result {
            Err(_) if tcp && (host_connected(s) || host_listening(s)) => Err(Errno::EISCONN),
            r => r,
        }
    }

    /// Autobinds `s` (a stream socket without asking first whether it is
    /// bound: a client's usually is not), then connects it to the first
    /// candidate name of `dst` that has a socket (ECONNREFUSED when none
    /// does).
    fn connect_candidates(&self, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
        if s.meta.is_udp() {
            self.autobind_port(s)?;
            self.before_connect(s)?
        } else {
            self.autobind_unbound(s, dst)?
        }
        for name in self.candidates(s.meta.proto, dst) {
            let ua = UnixAddr::new_abstract(&name)?;
            match socket::connect(s.fd.as_raw_fd(), &ua) {
                Ok(()) => return Ok(()),
                Err(Errno::ECONNREFUSED) | Err(Errno::ENOENT) => self.groups.forget(&name),
                Err(e) => return Err(e),
            }
        }
        Err(Errno::ECONNREFUSED)
    }

    /// A host-side client of the guest's listener on 127.0.0.1:`port`
    /// (`--publish`): a new socket bound to an ephemeral 127.0.0.1 name
    /// (the guest's accept sees that address), connected as a guest's
    /// connect to that address would be. ECONNREFUSED with no listener.
    pub fn connect_from_host(&self, port: u16, proto: Proto) -> Result<OwnedFd, Errno> {
        let fd = self.create(libc::AF_INET, proto, 0, false)?;
        let s = self.identify(fd).ok_or(Errno::EBADF)?;
        let dst = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
        self.autobind(&s, dst)?;
        self.connect_local(&s, dst)?;
        Ok(s.fd)
    }

    /// One datagram to a sandbox-loopback destination (canonical), as
    /// loopback UDP delivers it: to the first receiver bound to a
    /// candidate name; dropped (and reported sent) when there is none, its
    /// queue is full, or it is connected to another peer.
    pub fn send_local(
        &self,
        s: &Sock,
        dst: SocketAddr,
        data: &[u8],
        flags: MsgFlags,
    ) -> Result<usize, Errno> {
        self.autobind_port(s)?;
        let flags = flags | MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
        let v4_sender = self.v4_sender(s, dst);
        for name in self.candidates(Proto::Udp, dst) {
            let ua = UnixAddr::new_abstract(&name)?;
            // Marked before it is sent (a receive may come at once).
            let mark = v4_sender.as_deref().filter(|_| self.reaches_any6(&name));
            if let Some(from) = mark {
                self.mark_v4(from, data, true);
            }
            let sent = socket::sendto(s.fd.as_raw_fd(), data, &ua, flags);
            if let (Some(from), Err(_)) = (mark, &sent) {
                self.mark_v4(from, data, false);
            }
            match sent {
                Ok(n) => return Ok(n),
                Err(Errno::ECONNREFUSED) | Err(Errno::ENOENT) => continue,
                Err(Errno::EAGAIN) | Err(Errno::EPERM) => return Ok(data.len()),
                Err(e) => return Err(e),
            }
        }
        Ok(data.len())
    }
}

/// Whether the host socket behind `s` has a peer.
fn host_connected(s: &Sock) -> bool {
    socket::getpeername::<UnixAddr>(s.fd.as_raw_fd()).is_ok()
}

/// Whether the host socket behind `s` listens: a TCP listener's connect
/// is EISCONN on Linux (its state is not TCP_CLOSE), where the host
/// `AF_UNIX` listener's answers EINVAL.
fn host_listening(s: &Sock) -> bool {
    socket::getsockopt(&s.fd, socket::sockopt::AcceptConn).unwrap_or(false)
}
