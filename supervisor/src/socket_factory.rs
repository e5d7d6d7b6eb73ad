//! The socket factory: a small process, forked from the supervisor, that
//! lives in the sandbox's network namespace and makes the netstack's
//! `AF_UNIX` sockets there, so abstract names used on them resolve only
//! among the sandbox's own (see `netstack::sockets`).
//!
//! Why a process and not a thread: `setns(CLONE_NEWNET)` needs
//! CAP_SYS_ADMIN in the namespace's user namespace *and* in the caller's
//! own. An unprivileged supervisor stays in the host's user namespace and
//! has neither; a single-threaded process forked from it can join the
//! sandbox's user namespace (it owns it), which gives it those
//! capabilities there, and then the network namespace. Root goes the same
//! way, so both share one path.
//!
//! The factory is forked while the supervisor is single-threaded, outside
//! the sandbox's pid namespace (the guest cannot see or signal it), keeps
//! no descriptor but its end of a `SOCK_SEQPACKET` pair, drops every
//! capability and sets no_new_privs once inside, and dies with
//! the supervisor (`PR_SET_PDEATHSIG`, and at end of file on the pair).
//! Each request names a kind and a count; each answer carries an errno
//! and the sockets (`SCM_RIGHTS`). Single sockets come in batches kept in
//! a small pool, so most `socket()` calls of the guest cost no round
//! trip.
//!
//! Owns: the factory process, its protocol, the pool. Does not own: what
//! the sockets are used for (netstack), or finding the namespaces
//! (launch hands them over).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use netstack::UnixSockets;
use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::Signal;
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};
use nix::sys::wait::waitpid;
use nix::unistd::{getpid, getppid, Pid};
use parking_lot::Mutex;

use crate::sys::fd::{close_all_except, recv_with_fds, send_with_fds};
use crate::sys::process::{clone_process, exit_now, Forked};

/// Single sockets fetched per round trip.
const BATCH: u8 = 16;

/// What a request asks for (its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Stream = 0,
    Datagram = 1,
    StreamPair = 2,
    DatagramPair = 3,
}

impl Kind {
    fn parse(byte: u8) -> Option<Kind> {
        [
            Kind::Stream,
            Kind::Datagram,
            Kind::StreamPair,
            Kind::DatagramPair,
        ]
        .into_iter()
        .find(|k| *k as u8 == byte)
    }

    fn single(ty: SockType) -> Kind {
        match ty {
            SockType::Stream => Kind::Stream,
            _ => Kind::Datagram,
        }
    }

    fn pair(ty: SockType) -> Kind {
        match ty {
            SockType::Stream => Kind::StreamPair,
            _ => Kind::DatagramPair,
        }
    }

    fn sock_type(self) -> SockType {
        match self {
            Kind::Stream | Kind::StreamPair => SockType::Stream,
            Kind::Datagram | Kind::DatagramPair => SockType::Datagram,
        }
    }
}

/// The supervisor's handle on its factory; `&SocketFactory` serves many
/// workers.
pub struct SocketFactory {
    pid: Pid,
    channel: Mutex<OwnedFd>,
    /// Unused single sockets: stream, datagram.
    pools: [Mutex<Vec<OwnedFd>>; 2],
}

impl std::fmt::Debug for SocketFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketFactory")
            .field("pid", &self.pid)
            .finish()
    }
}

impl SocketFactory {
    /// Forks the factory, which joins `userns` and then `netns` (the
    /// sandbox's), and waits until it has. Call it while this process has
    /// a single thread.
    pub fn start(userns: BorrowedFd<'_>, netns: BorrowedFd<'_>) -> Result<SocketFactory, String> {
        let err = |what: &str, e: Errno| format!("socket factory: {what}: {}", e.desc());
        let (ours, theirs) = socket::socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| err("socketpair", e))?;
        let parent = getpid();
        match clone_process(CloneFlags::empty()).map_err(|e| err("fork", e))? {
            Forked::Child => {
                drop(ours);
                factory_main(parent, theirs, userns, netns)
            }
            Forked::Parent(pid) => {
                drop(theirs);
                let factory = SocketFactory {
                    pid,
                    channel: Mutex::new(ours),
                    pools: Default::default(),
                };
                let mut status = [0u8; 4];
                let (n, _) = recv_with_fds(factory.channel.lock().as_fd(), &mut status)
                    .map_err(|e| err("waiting for it", e))?;
                match (n, i32::from_ne_bytes(status)) {
                    (4, 0) => Ok(factory),
                    (4, errno) => Err(err(
                        "entering the sandbox's network namespace",
                        Errno::from_raw(errno),
                    )),
                    _ => Err("socket factory: it died while starting".into()),
                }
            }
        }
    }

    /// The factory's pid (outside the sandbox).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// One round trip: `count` of `kind`.
    fn request(&self, kind: Kind, count: u8) -> Result<Vec<OwnedFd>, Errno> {
        let channel = self.channel.lock();
        send_with_fds(channel.as_fd(), &[kind as u8, count], &[]).map_err(lost)?;
        let mut status = [0u8; 4];
        let (n, fds) = recv_with_fds(channel.as_fd(), &mut status).map_err(lost)?;
        if n != 4 {
            return Err(Errno::ENOBUFS);
        }
        let expected = match kind {
            Kind::StreamPair | Kind::DatagramPair => 2,
            Kind::Stream | Kind::Datagram => usize::from(count),
        };
        match i32::from_ne_bytes(status) {
            0 if fds.len() == expected => Ok(fds),
            0 => Err(Errno::ENOBUFS),
            errno => Err(Errno::from_raw(errno)),
        }
    }
}

/// A channel failure (the factory is gone): the guest's socket() fails
/// as a host out of resources would make it.
fn lost(_: Errno) -> Errno {
    Errno::ENOBUFS
}

impl UnixSockets for SocketFactory {
    fn socket(&self, ty: SockType) -> Result<OwnedFd, Errno> {
        let kind = Kind::single(ty);
        let pool = &self.pools[kind as usize];
        if let Some(fd) = pool.lock().pop() {
            return Ok(fd);
        }
        let mut fresh = self.request(kind, BATCH)?;
        let fd = fresh.pop().ok_or(Errno::ENOBUFS)?;
        pool.lock().extend(fresh);
        Ok(fd)
    }

    fn pair(&self, ty: SockType) -> Result<(OwnedFd, OwnedFd), Errno> {
        let mut fds = self.request(Kind::pair(ty), 1)?.into_iter();
        match (fds.next(), fds.next()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(Errno::ENOBUFS),
        }
    }

    fn listing(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/net/unix", self.pid))
    }
}

impl Drop for SocketFactory {
    /// Closing the channel ends the factory; it is reaped here.
    fn drop(&mut self) {
        let _ = socket::shutdown(self.channel.get_mut().as_raw_fd(), socket::Shutdown::Both);
        while let Err(Errno::EINTR) = waitpid(self.pid, None) {}
    }
}

/// The factory's life: die with the supervisor, keep only the channel,
/// enter the namespaces, say so, serve until the supervisor hangs up.
fn factory_main(parent: Pid, channel: OwnedFd, userns: BorrowedFd<'_>, netns: BorrowedFd<'_>) -> ! {
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != parent {
        exit_now(1);
    }
    let entered = enter(&channel, userns, netns);
    let status = match entered {
        Ok(()) => 0,
        Err(e) => e as i32,
    };
    if send_with_fds(channel.as_fd(), &status.to_ne_bytes(), &[]).is_err() || entered.is_err() {
        exit_now(1);
    }
    serve(channel.as_fd());
    exit_now(0)
}

/// Closes every other descriptor (stdio included: the supervisor may be
/// waiting for the end of a pipe there) and joins the namespaces.
fn enter(channel: &OwnedFd, userns: BorrowedFd<'_>, netns: BorrowedFd<'_>) -> Result<(), Errno> {
    let keep = [channel.as_raw_fd(), userns.as_raw_fd(), netns.as_raw_fd()];
    close_all_except(&keep)?;
    for fd in 0..3 {
        if !keep.contains(&fd) {
            let _ = nix::unistd::close(fd);
        }
    }
    setns(userns, CloneFlags::CLONE_NEWUSER)?;
    setns(netns, CloneFlags::CLONE_NEWNET)?;
    close_all_except(&[channel.as_raw_fd()])?;
    // Joining the user namespace gave every capability in it; making
    // unix sockets needs none.
    crate::launch::privs::drop_privileges().map_err(|_| Errno::EPERM)
}

/// Answers requests until end of file or an error on the channel.
fn serve(channel: BorrowedFd<'_>) {
    let mut request = [0u8; 2];
    loop {
        let n = match recv_with_fds(channel, &mut request) {
            Ok((n, _)) => n,
            Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let made = match (n, Kind::parse(request[0])) {
            (2, Some(kind)) => make(kind, request[1].min(BATCH)),
            _ => Err(Errno::EINVAL),
        };
        let sent = match made {
            Ok(fds) => {
                let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
                send_with_fds(channel, &0i32.to_ne_bytes(), &borrowed)
            }
            Err(e) => send_with_fds(channel, &(e as i32).to_ne_bytes(), &[]),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// `count` sockets, or one pair, of `kind`, made in this namespace.
fn make(kind: Kind, count: u8) -> Result<Vec<OwnedFd>, Errno> {
    let ty = kind.sock_type();
    let flags = SockFlag::SOCK_CLOEXEC;
    match kind {
        Kind::StreamPair | Kind::DatagramPair => {
            let (a, b) = socket::socketpair(AddressFamily::Unix, ty, None, flags)?;
            Ok(vec![a, b])
        }
        Kind::Stream | Kind::Datagram => (0..count)
            .map(|_| socket::socket(AddressFamily::Unix, ty, flags, None))
            .collect(),
    }
}
