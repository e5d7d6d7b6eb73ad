//! One sandbox's netstack: its names, its socket table, its egress and
//! denial log, and the host-side work on the `AF_UNIX` sockets that stand
//! for the guest's TCP/UDP sockets (create, bind, autobind, connect by
//! address, send to an address, the names they report).
//!
//! Owns: the [`Stack`] and [`Sock`] types, creating and identifying
//! netstack sockets, recording accepted connections and peers, and the
//! addresses a socket reports. Its parts: the bind rules (`bind.rs`),
//! connections and datagrams to sandbox-loopback destinations
//! (`local.rs`), and the per-listener queue of accepted connections that
//! could not be installed (`pending.rs`), the source a wildcard-named
//! UDP socket shows and a UDP disconnect (`source.rs`), and the queued
//! datagrams a host socket leaving its peer keeps (`requeue.rs`). Does
//! not own: guest memory,
//! guest descriptors or blocking (the handlers in `syscalls/` do that;
//! every call here returns at once unless the host socket itself blocks).

mod adopt;
mod bind;
mod local;
mod pending;
mod requeue;
mod source;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::socket::{self, SockType, UnixAddr};
use nix::sys::stat::{fstat, SFlag};
use parking_lot::Mutex;

use crate::addr;
use crate::egress::{DenialLog, Egress, NoEgress};
use crate::name::{Named, Namer, Proto};
use crate::queues::Queue;
use crate::reuseport::Groups;
use crate::sockets::{LocalSockets, UnixSockets};
use crate::table::{Meta, Table};
use pending::Pending;

/// The first and last ephemeral port (Linux's ip_local_port_range).
pub const EPHEMERAL: (u16, u16) = (32768, 60999);

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
    /// Accepted connections whose installation failed.
    pending: Pending,
    /// The namespace's `NETLINK_SOCK_DIAG` socket, once asked for; held
    /// through a dump.
    diag: Mutex<Option<OwnedFd>>,
    /// Which datagrams of senders bound to `::` went over IPv4.
    over_v4: source::OverV4,
    /// Told of each TCP listener the guest opens and each UDP socket it
    /// binds to a wildcard address ([`Stack::on_listen`]).
    listen_hook: std::sync::OnceLock<ListenHook>,
    /// The network namespace cookie of `sockets`' sockets, once asked
    /// for (`adopt.rs`).
    netns: std::sync::OnceLock<Option<u64>>,
}

/// What [`Stack::on_listen`] calls with a listener's address and protocol.
pub type ListenHook = Box<dyn Fn(SocketAddr, Proto) + Send + Sync>;

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

/// A connection [`Stack::adopt`] recorded: its peer's and its own
/// address, and its host socket's inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adopted {
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub inode: u64,
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
            pending: Pending::default(),
            diag: Mutex::new(None),
            over_v4: source::OverV4::default(),
            listen_hook: std::sync::OnceLock::new(),
            netns: std::sync::OnceLock::new(),
        }
    }

    /// Calls `hook` with the address of every TCP listener the guest opens
    /// from now on (at its listen, before the kernel's: a client of the
    /// hook's may meet no listener for a moment, and retries), and of
    /// every UDP socket it binds to a wildcard address and a port (once
    /// bound). Set once; a second hook is refused (EBUSY).
    pub fn on_listen(&self, hook: ListenHook) -> Result<(), Errno> {
        self.listen_hook.set(hook).map_err(|_| Errno::EBUSY)
    }

    /// The guest listens on `local` (its bound address): a TCP listener,
    /// or a UDP socket bound to a wildcard address.
    pub fn listening(&self, local: SocketAddr, proto: Proto) {
        if let Some(hook) = self.listen_hook.get() {
            hook(local, proto);
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
        self.netns = std::sync::OnceLock::new();
    }

    /// The source of this stack's host sockets (for egress and the DNS
    /// stub, whose guest-side sockets must be in the same namespace).
    pub fn sockets(&self) -> Arc<dyn UnixSockets> {
        self.sockets.clone()
    }

    /// [`UnixSockets::ready_namespace`] of the sockets' namespace.
    pub fn ready_namespace(&self) -> Result<(), Errno> {
        self.sockets.ready_namespace()
    }

    /// The queues of the namespace's unix sockets by inode
    /// (`queues.rs`); empty when the kernel will not say.
    pub fn queues(&self) -> HashMap<u64, Queue> {
        let diag = self.diag();
        let Some(fd) = diag.as_ref() else {
            return HashMap::new();
        };
        crate::queues::dump(fd.as_fd()).unwrap_or_default()
    }

    /// Whether the supervisor holds the namespace's `NETLINK_SOCK_DIAG`
    /// socket (asked for here when it was not yet): the one socket the
    /// sockets' source keeps in the namespace that its unix listing does
    /// not show (`/proc/net/sockstat` leaves it out of the guest's count).
    pub fn holds_diag(&self) -> bool {
        self.diag().is_some()
    }

    /// The namespace's `NETLINK_SOCK_DIAG` socket, asked for at the first
    /// use (`None` when the source has none).
    fn diag(&self) -> parking_lot::MutexGuard<'_, Option<OwnedFd>> {
        let mut diag = self.diag.lock();
        if diag.is_none() {
            *diag = self.sockets.diag().ok();
        }
        diag
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
        self.table
            .insert(inode_of(fd.as_fd())?, new_meta(domain, proto, protocol));
        Ok(fd)
    }

    /// One connection waiting on `listener` (EAGAIN when none is and the
    /// listener does not block), O_NONBLOCK when `nonblock`; see
    /// [`Stack::adopt`] to record it.
    pub fn accept(&self, listener: &Sock, nonblock: bool) -> Result<OwnedFd, Errno> {
        crate::sys::accept(listener.fd.as_fd(), nonblock)
    }

    /// Records a connection accepted on `listener` (inheriting its
    /// metadata); returns its names and inode. A wildcard listener's
    /// connection reports the address the client dialled, which is the
    /// client's own (clients bind to the loopback address they dial).
    pub fn adopt(&self, conn: BorrowedFd<'_>, listener: &Sock) -> Result<Adopted, Errno> {
        let ua: UnixAddr = socket::getpeername(conn.as_raw_fd())?;
        let peer = self.decode_peer(&ua, listener.meta.domain);
        let mut local = self.local_addr(listener);
        if addr::is_wildcard(local) {
            local = SocketAddr::new(peer.ip(), local.port());
        }
        let inode = inode_of(conn)?;
        let mut meta = listener.meta.accepted(local, peer);
        meta.nodelay_in_host = crate::nodelay::nodelay_to_host(conn, &listener.meta.options);
        self.table.insert(inode, meta);
        Ok(Adopted { peer, local, inode })
    }

    /// Keeps `e` as the socket's error for its next call ([`Meta::error`]).
    pub fn keep_error(&self, s: &Sock, e: Errno) {
        self.table.update(s.inode, |m| m.error = Some(e));
    }

    /// The error the socket kept, taken (`sock_error`): reported once.
    /// Its own ([`Meta::error`]) first, then, for a connected UDP socket
    /// whose destination's refusals mark it ([`Meta::refusals`]), the
    /// refusal its host socket's mark stands for (`crate::mark`): a
    /// relay's errno ([`Egress::take_error`]: an ICMP error its host
    /// socket met), a stand-in's ECONNREFUSED. Any other socket makes no
    /// call and takes no lock here.
    pub fn take_error(&self, s: &Sock) -> Option<Errno> {
        // The snapshot says whether there is one to take.
        let own = s
            .meta
            .error
            .and_then(|_| self.table.update(s.inode, |m| m.error.take()).flatten());
        match (own, s.meta.refusals) {
            (None, Some(by)) if s.meta.is_udp() => {
                crate::mark::take(s.fd.as_fd()).then(|| self.refusal(s, by))
            }
            (own, _) => own,
        }
    }

    /// What a host call on the socket failed with, as the guest is told:
    /// the host socket's ECONNRESET on a socket whose refusals mark it
    /// is the mark, met by the call itself (it came after
    /// [`Stack::take_error`] looked): the refusal it stands for.
    pub fn host_error(&self, s: &Sock, e: Errno) -> Errno {
        match s.meta.refusals {
            Some(by) if e == Errno::ECONNRESET && s.meta.is_udp() => self.refusal(s, by),
            _ => e,
        }
    }

    /// The errno of a refusal `by` marked the socket with.
    fn refusal(&self, s: &Sock, by: crate::table::Refusals) -> Errno {
        let relayed = match by {
            crate::table::Refusals::Relay => self.egress.take_error(s.inode),
            crate::table::Refusals::StandIn => None,
        };
        relayed.unwrap_or(Errno::ECONNREFUSED)
    }

    /// Records who marks the socket when its destination refuses it
    /// (`None`: nobody; its calls look for no refusal).
    pub fn set_refusals(&self, s: &Sock, by: Option<crate::table::Refusals>) {
        if s.meta.refusals != by {
            self.table.update(s.inode, |m| m.refusals = by);
        }
    }

    /// Records the peer a socket is now connected to (`None`: dissolved).
    pub fn set_peer(&self, s: &Sock, peer: Option<SocketAddr>) {
        self.table.update(s.inode, |m| m.peer = peer);
    }

    /// The name a socket is bound to, decoded.
    fn bound_name(&self, fd: BorrowedFd<'_>) -> Option<Named> {
        let ua: UnixAddr = socket::getsockname(fd.as_raw_fd()).ok()?;
        self.namer.decode(crate::name::abstract_of(&ua)?)
    }

    /// The socket's own address (unbound: the domain's wildcard, port 0;
    /// a port a disconnect released: port 0).
    pub fn local_addr(&self, s: &Sock) -> SocketAddr {
        if let Some(local) = s.meta.local {
            return local;
        }
        let mut a = self
            .bound_name(s.fd.as_fd())
            .map_or_else(|| addr::unspecified(s.meta.domain), |n| n.addr);
        if s.meta.released {
            a.set_port(0);
        }
        a
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

    /// Queues an accepted connection the guest did not get (`pending.rs`).
    pub fn requeue(&self, listener: u64, conn: OwnedFd) {
        self.pending.requeue(listener, conn);
    }

    /// A queued connection of this listener, if any.
    pub fn take_pending(&self, listener: u64) -> Option<OwnedFd> {
        self.pending.take(listener)
    }

    /// Whether any listener has queued connections.
    pub fn has_pending(&self) -> bool {
        self.pending.any()
    }
}

/// The metadata of a new socket of `socket(domain, _, protocol)`
/// (`protocol` 0: the transport's own number).
fn new_meta(domain: i32, proto: Proto, protocol: i32) -> Meta {
    let mut meta = Meta::new(domain, proto);
    if protocol != 0 {
        meta.protocol = protocol;
    }
    meta
}

/// The inode of a socket.
pub fn inode_of(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    Ok(fstat(fd.as_raw_fd())?.st_ino)
}
