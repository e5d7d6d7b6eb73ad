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
//! the sandbox's pid namespace (the guest cannot see or signal it), and
//! keeps only its end of a `SOCK_SEQPACKET` pair and the two namespace
//! descriptors. It then idles until the first request: most runs never
//! make a socket, and entering costs about 0.3 ms of CPU (the joins, 41
//! bounding-set drops, a filter's preparation) that they need not pay.
//! On the first request it joins the namespaces, brings the namespace's
//! loopback up (and gives it the DNS stub's address, with `--allow-net`
//! names: glibc's AI_ADDRCONFIG asks DNS for IPv4 only when an address
//! other than 127.0.0.1 exists), keeps no descriptor but the pair, drops
//! every capability and sets no_new_privs, makes one
//! `NETLINK_SOCK_DIAG` socket (a dump lists only the sockets of the
//! namespace it was made in; the supervisor copies it once, for
//! /proc/net's queues, `netstack::queues`), installs its
//! own seccomp filter (`filter.rs`: the channel, `AF_UNIX` sockets,
//! close, memory; anything else kills it), and answers. It dies with
//! the supervisor (`PR_SET_PDEATHSIG`, and at end of file on the pair).
//! A later fork would not do: the supervisor is multi-threaded by then
//! and its own filter (`confine.rs`) refuses a fork and kills `setns`.
//! Each request names a kind and a count; each answer carries an errno
//! and the numbers of the new sockets in the factory's table, which the
//! supervisor copies with `pidfd_getfd` (its own child, same owner);
//! then it says "close" and the factory drops its copies before it
//! answers, so a socket the guest closes is gone at once. Not
//! `SCM_RIGHTS`: on Linux 6.18, closing unix sockets that were once in
//! flight costs about 10 µs more each (the in-flight garbage collector's
//! bookkeeping), and a process holding thousands of them slows to a
//! crawl. Single sockets come in batches kept in a small pool, so most
//! `socket()` calls of the guest cost no round trip; a pool that runs low
//! is refilled by a thread of the factory handle's own (started at the
//! first refill, woken through a condition variable), off the guest's path
//! (a refill on a loaded machine took 0.5–1 ms: one `socket()` in 64
//! waiting for it cost the others about 14 µs each on average).
//!
//! Until 2026-12-04 init brought the loopback up while it built the
//! view: on every start, 0.6 ms of CPU (`dev_open` and what follows) of
//! about 6 for `/bin/true`. Now a sandbox that never looks at its
//! network namespace never pays it: the trap readies the namespace
//! ([`SocketFactory::ready_namespace`], an empty request) before the
//! guest's first netlink route socket or read under `/proc/<pid>/net`,
//! and any socket made here readies it first.
//!
//! Owns: the factory process (its life after the fork: `child.rs`), its
//! protocol, the pool. Does not own: what
//! the sockets are used for (netstack), or finding the namespaces
//! (launch hands them over). The kernel's list of the namespace's unix
//! sockets is read through init's `/proc/<pid>/net/unix` (init is in the
//! namespace before the guest exists, `launch/netns.rs`; the factory only
//! from its first request).

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use netstack::UnixSockets;
use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};
use nix::sys::wait::waitpid;
use nix::unistd::{getpid, Pid};
use parking_lot::{Condvar, Mutex};

use crate::sys::fd::{recv_with_fds, send_with_fds};
use crate::sys::pidfd;
use crate::sys::process::{clone_process, Forked};

mod child;
mod filter;

/// Test switch: the factory tries one call its filter forbids (a file
/// open) right after starting, which must kill it.
pub const FORBIDDEN_CALL_FOR_TESTS: &str = "SUPERVISOR_TEST_FACTORY_FORBIDDEN_CALL";

/// Single sockets fetched per round trip.
const BATCH: u8 = 64;
/// A pool left with this many sockets is refilled in the background.
const LOW_WATER: usize = 32;
/// An answer: an errno (negated when the factory could not enter the
/// sandbox's namespaces), then up to [`BATCH`] descriptor numbers.
const ANSWER_LEN: usize = 4 * (1 + BATCH as usize);

/// What a request asks for (its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Stream = 0,
    Datagram = 1,
    StreamPair = 2,
    DatagramPair = 3,
    /// The supervisor has its copies: drop ours.
    Close = 4,
    /// The `NETLINK_SOCK_DIAG` socket made at entry (kept: asked once).
    Diag = 5,
}

impl Kind {
    fn parse(byte: u8) -> Option<Kind> {
        [
            Kind::Stream,
            Kind::Datagram,
            Kind::StreamPair,
            Kind::DatagramPair,
            Kind::Close,
            Kind::Diag,
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
            Kind::Datagram | Kind::DatagramPair => SockType::Datagram,
            _ => SockType::Stream,
        }
    }
}

/// The supervisor's handle on its factory; `&SocketFactory` serves many
/// workers.
pub struct SocketFactory {
    pid: Pid,
    /// The sandbox's init: its `/proc/<pid>/net/unix` lists the
    /// namespace's unix sockets before the factory has entered it.
    init: Pid,
    shared: Arc<Shared>,
}

/// What the workers and the refill threads share.
struct Shared {
    pidfd: OwnedFd,
    channel: Mutex<OwnedFd>,
    /// Unused single sockets: stream, datagram.
    pools: [Mutex<Vec<OwnedFd>>; 2],
    /// The refill thread's work: pools to refill, or the handle is gone.
    refills: Mutex<Refills>,
    wake: Condvar,
    /// The refill thread has been started.
    refiller: AtomicBool,
    /// The factory's failure to enter the namespaces has been reported.
    warned: AtomicBool,
    /// The factory has answered a request: it is in the namespaces, and
    /// their loopback is up.
    entered: AtomicBool,
}

/// What the refill thread is asked to do.
#[derive(Default)]
struct Refills {
    wanted: [bool; 2],
    closing: bool,
}

impl std::fmt::Debug for SocketFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketFactory")
            .field("pid", &self.pid)
            .finish()
    }
}

impl SocketFactory {
    /// Forks the factory, which will join `userns` and then `netns` (the
    /// sandbox's, whose init is `init`) at its first request, and then
    /// bring its loopback up, with `dns_stub` as a second address if
    /// given; it does not wait for the child. Call it while this process
    /// has a single thread.
    pub fn start(
        init: Pid,
        userns: BorrowedFd<'_>,
        netns: BorrowedFd<'_>,
        dns_stub: Option<Ipv4Addr>,
    ) -> Result<SocketFactory, String> {
        let err = |what: &str, e: Errno| format!("socket factory: {what}: {}", e.desc());
        let (ours, theirs) = socket::socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| err("socketpair", e))?;
        let parent = getpid();
        let probe = std::env::var_os(FORBIDDEN_CALL_FOR_TESTS).is_some();
        match clone_process(CloneFlags::empty()).map_err(|e| err("fork", e))? {
            Forked::Child => {
                drop(ours);
                child::factory_main(parent, theirs, (userns, netns), dns_stub, probe)
            }
            Forked::Parent(pid) => {
                drop(theirs);
                // Our child, not reaped before `Drop`: the pid is its own.
                let pidfd = pidfd::open(pid.as_raw(), false).map_err(|e| err("pidfd", e))?;
                Ok(SocketFactory {
                    pid,
                    init,
                    shared: Arc::new(Shared {
                        pidfd,
                        channel: Mutex::new(ours),
                        pools: Default::default(),
                        refills: Default::default(),
                        wake: Condvar::new(),
                        refiller: AtomicBool::new(false),
                        warned: AtomicBool::new(false),
                        entered: AtomicBool::new(false),
                    }),
                })
            }
        }
    }

    /// The factory's pid (outside the sandbox).
    pub fn pid(&self) -> Pid {
        self.pid
    }
}

impl Shared {
    /// `count` of `kind`: the factory makes them, we copy them, it
    /// drops its copies.
    fn request(&self, kind: Kind, count: u8) -> Result<Vec<OwnedFd>, Errno> {
        let channel = self.channel.lock();
        let numbers = self.round_trip(channel.as_fd(), kind, count)?;
        let copied: Result<Vec<OwnedFd>, Errno> = numbers
            .iter()
            .map(|&n| pidfd::getfd(self.pidfd.as_fd(), n))
            .collect();
        self.round_trip(channel.as_fd(), Kind::Close, 0)?;
        let fds = copied.map_err(lost)?;
        let expected = match kind {
            Kind::StreamPair | Kind::DatagramPair => 2,
            _ => usize::from(count),
        };
        match fds.len() == expected {
            true => Ok(fds),
            false => Err(Errno::ENOBUFS),
        }
    }
}

impl Shared {
    /// [`ask`] on `channel` (held locked): an answer means the factory
    /// has entered the namespaces (noted); a failure to enter is said once.
    fn round_trip(
        &self,
        channel: BorrowedFd<'_>,
        kind: Kind,
        count: u8,
    ) -> Result<Vec<i32>, Errno> {
        let numbers = ask(channel, kind, count).map_err(|e| self.entry_failed(e))?;
        self.entered.store(true, Ordering::Release);
        Ok(numbers)
    }

    /// Says once on stderr that the factory could not enter the
    /// sandbox's namespaces (it has exited: every later socket() fails).
    fn entry_failed(&self, e: Failure) -> Errno {
        match e {
            Failure::Entering(errno) => {
                if !self.warned.swap(true, Ordering::AcqRel) {
                    eprintln!(
                        "supervisor: warning: socket factory: entering the sandbox's network namespace: {}",
                        errno.desc()
                    );
                }
                errno
            }
            Failure::Answer(errno) => errno,
        }
    }

    /// Asks the refill thread for `kind`'s pool (starting it the first
    /// time); if it cannot start, an empty pool asks in line.
    fn refill_later(self: &Arc<Self>, kind: Kind) {
        {
            let mut r = self.refills.lock();
            if r.wanted[kind as usize] {
                return;
            }
            r.wanted[kind as usize] = true;
        }
        self.wake.notify_one();
        if self.refiller.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::clone(self);
        let started = std::thread::Builder::new()
            .name("socket-refill".into())
            .spawn(move || shared.refill_loop());
        if started.is_err() {
            self.refills.lock().wanted[kind as usize] = false;
            self.refiller.store(false, Ordering::Release);
        }
    }

    /// Refills the pools asked for until the handle is dropped. A failed
    /// request is met again, and reported, by the socket() that finds
    /// its pool empty.
    fn refill_loop(&self) {
        loop {
            let at = {
                let mut r = self.refills.lock();
                loop {
                    if r.closing {
                        return;
                    }
                    if let Some(at) = r.wanted.iter().position(|w| *w) {
                        break at;
                    }
                    self.wake.wait(&mut r);
                }
            };
            let kind = if at == Kind::Stream as usize {
                Kind::Stream
            } else {
                Kind::Datagram
            };
            if let Ok(fresh) = self.request(kind, BATCH) {
                self.pools[at].lock().extend(fresh);
            }
            self.refills.lock().wanted[at] = false;
        }
    }
}

/// Why a round trip gave no sockets.
enum Failure {
    /// The factory could not join the namespaces (and has exited).
    Entering(Errno),
    /// The factory's errno, or the channel's failure.
    Answer(Errno),
}

/// One round trip on the channel: the descriptor numbers of the answer.
fn ask(channel: BorrowedFd<'_>, kind: Kind, count: u8) -> Result<Vec<i32>, Failure> {
    let lost = |e| Failure::Answer(lost(e));
    send_with_fds(channel, &[kind as u8, count], &[]).map_err(lost)?;
    let mut answer = [0u8; ANSWER_LEN];
    let (n, _) = recv_with_fds(channel, &mut answer).map_err(lost)?;
    let mut words = answer[..n.min(ANSWER_LEN)]
        .chunks_exact(4)
        .map(|w| i32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    match words.next() {
        Some(0) => Ok(words.collect()),
        Some(errno) if errno < 0 => Err(Failure::Entering(Errno::from_raw(-errno))),
        Some(errno) => Err(Failure::Answer(Errno::from_raw(errno))),
        None => Err(Failure::Answer(Errno::ENOBUFS)),
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
        let pool = &self.shared.pools[kind as usize];
        let (popped, left) = {
            let mut p = pool.lock();
            (p.pop(), p.len())
        };
        if let Some(fd) = popped {
            if left <= LOW_WATER {
                self.shared.refill_later(kind);
            }
            return Ok(fd);
        }
        let mut fresh = self.shared.request(kind, BATCH)?;
        let fd = fresh.pop().ok_or(Errno::ENOBUFS)?;
        pool.lock().extend(fresh);
        Ok(fd)
    }

    fn pair(&self, ty: SockType) -> Result<(OwnedFd, OwnedFd), Errno> {
        let mut fds = self.shared.request(Kind::pair(ty), 1)?.into_iter();
        match (fds.next(), fds.next()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(Errno::ENOBUFS),
        }
    }

    fn listing(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/net/unix", self.init))
    }

    fn diag(&self) -> Result<OwnedFd, Errno> {
        self.shared
            .request(Kind::Diag, 1)?
            .pop()
            .ok_or(Errno::ENOBUFS)
    }

    /// An empty request, the first time: the factory enters the
    /// namespaces (bringing their loopback up) before it answers.
    fn ready_namespace(&self) -> Result<(), Errno> {
        if self.shared.entered.load(Ordering::Acquire) {
            return Ok(());
        }
        let channel = self.shared.channel.lock();
        self.shared
            .round_trip(channel.as_fd(), Kind::Close, 0)
            .map(drop)
    }
}

impl Drop for SocketFactory {
    /// Closing the channel ends the factory; it is reaped here.
    fn drop(&mut self) {
        self.shared.refills.lock().closing = true;
        self.shared.wake.notify_all();
        let channel = self.shared.channel.lock().as_raw_fd();
        let _ = socket::shutdown(channel, socket::Shutdown::Both);
        while let Err(Errno::EINTR) = waitpid(self.pid, None) {}
    }
}
