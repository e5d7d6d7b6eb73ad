//! One sandbox's netstack: its names, its socket table, its egress and
//! denial log, and the host-side work on the `AF_UNIX` sockets that stand
//! for the guest's TCP/UDP sockets (create, bind, autobind, connect by
//! address, send to an address, the names they report).
//!
//! Owns: turning TCP/UDP addresses into name operations on a host
//! socket, the bind rules (loopback and wildcards only, ephemeral ports,
//! wildcard/specific conflicts), and the per-listener queue of accepted
//! connections that could not be installed. Does not own: guest memory,
//! guest descriptors or blocking (the handlers in `syscalls/` do that; every
//! call here returns at once unless the host socket itself blocks).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::socket::{self, MsgFlags, SockType, UnixAddr};
use nix::sys::stat::{fstat, SFlag};
use parking_lot::Mutex;

use crate::addr;
use crate::bound;
use crate::egress::{DenialLog, Egress, NoEgress};
use crate::name::{Named, Namer, Proto};
use crate::reuseport::Groups;
use crate::sockets::{LocalSockets, UnixSockets};
use crate::table::{Meta, Table};

/// The first and last ephemeral port (Linux's ip_local_port_range).
pub const EPHEMERAL: (u16, u16) = (32768, 60999);
/// Attempts at a free ephemeral port before EADDRINUSE.
const EPHEMERAL_TRIES: usize = 128;

/// Everything one sandbox's sockets share. `&Stack` serves many workers.
pub struct Stack {
    pub namer: Namer,
    pub table: Table,
    egress: Box<dyn Egress>,
    /// Where host sockets are made (the sandbox's network namespace).
    sockets: Arc<dyn UnixSockets>,
    denials: Arc<DenialLog>,
    /// Serialises explicit binds: the conflict check and the bind are one
    /// step (exact duplicates the kernel refuses by itself).
    bind_lock: Mutex<()>,
    /// SO_REUSEPORT groups: the names of later members by address.
    groups: Groups,
    /// Accepted connections whose installation failed (the caller died
    /// between accept and answer), by listener inode: the next accept on
    /// that listener gets them first, so no connection is lost.
    pending: Mutex<HashMap<u64, VecDeque<OwnedFd>>>,
    any_pending: AtomicBool,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack").field("namer", &self.namer).finish()
    }
}

impl Default for Stack {
    fn default() -> Self {
        Stack::new(Box::new(NoEgress))
    }
}

/// A socket the guest holds that is the netstack's.
pub struct Sock {
    pub fd: OwnedFd,
    pub inode: u64,
    pub meta: Meta,
}

impl Stack {
    /// A stack with a random token and this egress.
    pub fn new(egress: Box<dyn Egress>) -> Stack {
        Stack {
            namer: Namer::random(),
            table: Table::default(),
            egress,
            sockets: Arc::new(LocalSockets),
            denials: Arc::new(DenialLog::default()),
            bind_lock: Mutex::new(()),
            groups: Groups::default(),
            pending: Mutex::new(HashMap::new()),
            any_pending: AtomicBool::new(false),
        }
    }

    /// Replaces the egress (the default denies everything).
    pub fn set_egress(&mut self, egress: Box<dyn Egress>) {
        self.egress = egress;
    }

    /// Makes every host socket from `sockets` (the default: the calling
    /// thread's own network namespace), and reads that namespace's list
    /// of unix sockets for bind conflicts and collection.
    pub fn set_sockets(&mut self, sockets: Arc<dyn UnixSockets>) {
        self.table.set_listing(sockets.listing());
        self.sockets = sockets;
    }

    /// The source of this stack's host sockets (for egress and the DNS
    /// stub, whose guest-side sockets must be in the same namespace).
    pub fn sockets(&self) -> Arc<dyn UnixSockets> {
        self.sockets.clone()
    }

    pub fn egress(&self) -> &dyn Egress {
        self.egress.as_ref()
    }

    /// The denial log, shared with whoever writes the report.
    pub fn denials(&self) -> Arc<DenialLog> {
        self.denials.clone()
    }

    /// `fd` (a dup of a guest descriptor) as a netstack socket, or `None`
    /// when it is anything else (the guest's own file or socket).
    pub fn identify(&self, fd: OwnedFd) -> Option<Sock> {
        let st = fstat(fd.as_raw_fd()).ok()?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
            return None;
        }
        let inode = st.st_ino;
        let meta = self.table.get(inode)?;
        Some(Sock { fd, inode, meta })
    }

    /// A new host socket for a guest `socket(domain, type, protocol)`
    /// (`protocol` 0: the transport's own number); `nonblock` is set on
    /// the open file description the guest will share.
    pub fn create(
        &self,
        domain: i32,
        proto: Proto,
        protocol: i32,
        nonblock: bool,
    ) -> Result<OwnedFd, Errno> {
        let ty = match proto {
            Proto::Tcp => SockType::Stream,
            Proto::Udp => SockType::Datagram,
        };
        let fd = self.sockets.socket(ty)?;
        if nonblock {
            fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        }
        let mut meta = Meta::new(domain, proto);
        if protocol != 0 {
            meta.protocol = protocol;
        }
        self.table.insert(inode_of(fd.as_fd())?, meta);
        Ok(fd)
    }

    /// Records a connection accepted on `listener` (inheriting its
    /// metadata); returns the peer's address. A wildcard listener's
    /// connection reports the address the client dialled, which is the
    /// client's own (clients bind to the loopback address they dial).
    pub fn adopt(&self, conn: BorrowedFd<'_>, listener: &Sock) -> Result<SocketAddr, Errno> {
        let ua: UnixAddr = socket::getpeername(conn.as_raw_fd())?;
        let peer = self.decode_peer(&ua, listener.meta.domain);
        let mut local = self.local_addr(listener);
        if addr::is_wildcard(local) {
            local = SocketAddr::new(peer.ip(), local.port());
        }
        self.table
            .insert(inode_of(conn)?, listener.meta.accepted(local, peer));
        Ok(peer)
    }

    /// Records the peer a socket is now connected to (`None`: dissolved).
    pub fn set_peer(&self, s: &Sock, peer: Option<SocketAddr>) {
        self.table.update(s.inode, |m| m.peer = peer);
    }

    /// bind(2) to `a`: EADDRNOTAVAIL outside loopback and wildcards,
    /// EINVAL when already bound, EADDRINUSE on a conflict; port 0 picks
    /// a free ephemeral port.
    pub fn bind(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let a = addr::canonical(a);
        if s.meta.domain == libc::AF_INET6 && a.is_ipv4() && s.meta.v6only() {
            return Err(Errno::EINVAL);
        }
        if !addr::bindable(a) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        if self.bound_name(s.fd.as_fd()).is_some() {
            return Err(Errno::EINVAL);
        }
        let _held = self.bind_lock.lock();
        if a.port() != 0 {
            return self.bind_checked(s, a);
        }
        for _ in 0..EPHEMERAL_TRIES {
            let mut p = a;
            p.set_port(random_port());
            match self.bind_checked(s, p) {
                Err(Errno::EADDRINUSE) => continue,
                r => return r,
            }
        }
        Err(Errno::EADDRINUSE)
    }

    fn bind_checked(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let new = Named {
            proto: s.meta.proto,
            addr: a,
            v6only: s.meta.v6only(),
        };
        let listing = self.sockets.listing();
        let taken = bound::bound_on(&listing, &self.namer, new.proto, a.port());
        let conflicting: Vec<_> = taken
            .iter()
            .filter(|(_, old)| bound::conflicts(&new, old))
            .collect();
        if conflicting.is_empty() {
            return self.bind_name(s, a);
        }
        let joins = self.reuses_port(&s.meta)
            && conflicting.iter().all(|(inode, old)| {
                *old == new && self.table.get(*inode).is_some_and(|m| self.reuses_port(&m))
            });
        match joins {
            true => self.bind_member(s, a),
            false => Err(Errno::EADDRINUSE),
        }
    }

    fn reuses_port(&self, meta: &Meta) -> bool {
        meta.options.flag(libc::SOL_SOCKET, libc::SO_REUSEPORT)
    }

    /// Binds a later member of an SO_REUSEPORT group to a name of its own
    /// that reads as `a` (see `crate::reuseport`).
    fn bind_member(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let v6only = s.meta.v6only();
        let primary = self.namer.encode(s.meta.proto, a, v6only);
        let tag = crate::name::random_u64();
        let member = self.namer.encode_member(s.meta.proto, a, v6only, tag);
        socket::bind(s.fd.as_raw_fd(), &UnixAddr::new_abstract(&member)?)?;
        match self.groups.add(&primary, member) {
            true => Ok(()),
            false => Err(Errno::EADDRINUSE),
        }
    }

    fn bind_name(&self, s: &Sock, a: SocketAddr) -> Result<(), Errno> {
        let name = self.namer.encode(s.meta.proto, a, s.meta.v6only());
        let ua = UnixAddr::new_abstract(&name)?;
        socket::bind(s.fd.as_raw_fd(), &ua)
    }

    /// Binds an unbound socket to an ephemeral port of the loopback
    /// address that reaches `toward`, as the kernel autobinds before a
    /// connect or a first send.
    pub fn autobind(&self, s: &Sock, toward: SocketAddr) -> Result<(), Errno> {
        if self.bound_name(s.fd.as_fd()).is_some() {
            return Ok(());
        }
        let ip = match toward.ip() {
            IpAddr::V4(v4) if v4.is_loopback() => IpAddr::V4(v4),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        for _ in 0..EPHEMERAL_TRIES {
            match self.bind_name(s, SocketAddr::new(ip, random_port())) {
                Err(Errno::EADDRINUSE) => continue,
                r => return r,
            }
        }
        Err(Errno::EADDRINUSE)
    }

    /// Binds a socket about to listen that has no name yet (and no
    /// peer) to its family's wildcard address and an ephemeral port, as
    /// TCP's listen autobinds; a bound or connected socket is left alone.
    pub fn bind_listener(&self, s: &Sock) -> Result<(), Errno> {
        let fd = s.fd.as_raw_fd();
        if self.bound_name(s.fd.as_fd()).is_some() || socket::getpeername::<UnixAddr>(fd).is_ok() {
            return Ok(());
        }
        match self.bind(s, addr::unspecified(s.meta.domain)) {
            Err(Errno::EINVAL) => Ok(()),
            r => r,
        }
    }

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
    /// destination (canonical): autobinds, then connects to the first
    /// candidate that has a socket. ECONNREFUSED when none does; other
    /// errors of the host connect (EAGAIN, EISCONN) as they come. A
    /// connected stream socket is EISCONN first (the host connect would
    /// answer EAGAIN when the listener's backlog is full).
    pub fn connect_local(&self, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
        let fd = s.fd.as_raw_fd();
        if s.meta.proto == Proto::Tcp && socket::getpeername::<UnixAddr>(fd).is_ok() {
            return Err(Errno::EISCONN);
        }
        self.autobind(s, dst)?;
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
        self.autobind(s, dst)?;
        let flags = flags | MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
        for name in self.candidates(Proto::Udp, dst) {
            let ua = UnixAddr::new_abstract(&name)?;
            match socket::sendto(s.fd.as_raw_fd(), data, &ua, flags) {
                Ok(n) => return Ok(n),
                Err(Errno::ECONNREFUSED) | Err(Errno::ENOENT) => continue,
                Err(Errno::EAGAIN) | Err(Errno::EPERM) => return Ok(data.len()),
                Err(e) => return Err(e),
            }
        }
        Ok(data.len())
    }

    /// The name a socket is bound to, decoded.
    fn bound_name(&self, fd: BorrowedFd<'_>) -> Option<Named> {
        let ua: UnixAddr = socket::getsockname(fd.as_raw_fd()).ok()?;
        self.namer.decode(crate::name::abstract_of(&ua)?)
    }

    /// The socket's own address (unbound: the domain's wildcard, port 0).
    pub fn local_addr(&self, s: &Sock) -> SocketAddr {
        if let Some(local) = s.meta.local {
            return local;
        }
        self.bound_name(s.fd.as_fd())
            .map_or_else(|| addr::unspecified(s.meta.domain), |n| n.addr)
    }

    /// The connected peer's address (ENOTCONN when not connected).
    pub fn peer_addr(&self, s: &Sock) -> Result<SocketAddr, Errno> {
        if let Some(peer) = s.meta.peer {
            return Ok(peer);
        }
        let ua: UnixAddr = socket::getpeername(s.fd.as_raw_fd())?;
        Ok(self.decode_peer(&ua, s.meta.domain))
    }

    /// The TCP/UDP address behind a peer's unix name (an unnamed peer,
    /// which only the egress seam makes, reads as the wildcard).
    pub fn decode_peer(&self, ua: &UnixAddr, domain: i32) -> SocketAddr {
        crate::name::abstract_of(ua)
            .and_then(|n| self.namer.decode(n))
            .map_or_else(|| addr::unspecified(domain), |n| n.addr)
    }

    /// Queues an accepted connection the guest did not get.
    pub fn requeue(&self, listener: u64, conn: OwnedFd) {
        self.pending
            .lock()
            .entry(listener)
            .or_default()
            .push_front(conn);
        self.any_pending.store(true, Ordering::Release);
    }

    /// A queued connection of this listener, if any.
    pub fn take_pending(&self, listener: u64) -> Option<OwnedFd> {
        if !self.any_pending.load(Ordering::Acquire) {
            return None;
        }
        let mut pending = self.pending.lock();
        let conn = pending.get_mut(&listener).and_then(VecDeque::pop_front);
        pending.retain(|_, q| !q.is_empty());
        self.any_pending
            .store(!pending.is_empty(), Ordering::Release);
        conn
    }

    /// Whether any listener has queued connections.
    pub fn has_pending(&self) -> bool {
        self.any_pending.load(Ordering::Acquire)
    }
}

/// The inode of a socket.
pub fn inode_of(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    Ok(fstat(fd.as_raw_fd())?.st_ino)
}

fn random_port() -> u16 {
    let span = u64::from(EPHEMERAL.1 - EPHEMERAL.0) + 1;
    EPHEMERAL.0 + (crate::name::random_u64() % span) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(stack: &Stack, domain: i32, proto: Proto) -> Sock {
        let fd = stack.create(domain, proto, 0, false).unwrap();
        stack.identify(fd).unwrap()
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn bind_listen_connect_accept_by_address() {
        let st = Stack::default();
        let server = sock(&st, libc::AF_INET, Proto::Tcp);
        st.bind(&server, sa("0.0.0.0:0")).unwrap();
        let port = st.local_addr(&server).port();
        assert!((EPHEMERAL.0..=EPHEMERAL.1).contains(&port));
        socket::listen(&server.fd, socket::Backlog::new(8).unwrap()).unwrap();
        let client = sock(&st, libc::AF_INET6, Proto::Tcp);
        let dst = sa(&format!("127.0.0.1:{port}"));
        st.connect_local(&client, dst).unwrap();
        st.set_peer(&client, Some(dst));
        let client = st.identify(client.fd).unwrap();
        let listener = std::os::unix::net::UnixListener::from(server.fd.try_clone().unwrap());
        let conn = OwnedFd::from(listener.accept().unwrap().0);
        let peer = st.adopt(conn.as_fd(), &server).unwrap();
        assert_eq!(peer.ip(), sa("127.0.0.1:1").ip());
        assert_eq!(peer, st.local_addr(&client));
        assert_eq!(st.peer_addr(&client).unwrap(), dst);
        let accepted = st.identify(conn).unwrap();
        assert_eq!(st.local_addr(&accepted), dst);
    }

    #[test]
    fn bind_rules() {
        let st = Stack::default();
        let a = sock(&st, libc::AF_INET, Proto::Tcp);
        assert_eq!(st.bind(&a, sa("10.0.0.1:80")), Err(Errno::EADDRNOTAVAIL));
        st.bind(&a, sa("127.0.0.1:0")).unwrap();
        let port = st.local_addr(&a).port();
        assert_eq!(st.bind(&a, sa("127.0.0.1:0")), Err(Errno::EINVAL));
        let b = sock(&st, libc::AF_INET, Proto::Tcp);
        assert_eq!(
            st.bind(&b, sa(&format!("0.0.0.0:{port}"))),
            Err(Errno::EADDRINUSE)
        );
        let c = sock(&st, libc::AF_INET6, Proto::Tcp);
        assert_eq!(
            st.bind(&c, sa(&format!("[::]:{port}"))),
            Err(Errno::EADDRINUSE)
        );
        st.bind(&c, sa(&format!("[::1]:{port}"))).unwrap();
        let u = sock(&st, libc::AF_INET, Proto::Udp);
        st.bind(&u, sa(&format!("127.0.0.1:{port}"))).unwrap();
        assert!(st.connect_local(&b, sa("127.0.0.1:1")).is_err());
    }
}
