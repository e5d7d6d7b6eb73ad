//! The egress seam: every destination that is not sandbox loopback goes
//! to one [`Egress`], which either hands back a host-side socket already
//! connected towards the destination (a relay's end; the netstack installs
//! it in place of the guest's socket) or refuses. The default,
//! [`NoEgress`], refuses everything. Every refusal is recorded in the
//! [`DenialLog`] that the report prints as `denied_connections`.
//!
//! Owns: the trait, the default, and the log. Does not own: rules,
//! relays or DNS (they plug in here).

use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, OwnedFd};

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::name::Proto;

/// Why a destination may not be reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// One short phrase for the report ("no egress rule allows it").
    pub reason: String,
}

/// Why an egress attempt gave no socket: refused by policy (recorded as
/// a denial), or allowed but the host's own attempt failed (the errno the
/// guest gets, e.g. ECONNREFUSED or ENETUNREACH, as from a real connect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    Denied(Denied),
    Failed(Errno),
}

impl From<Denied> for Refusal {
    fn from(d: Denied) -> Refusal {
        Refusal::Denied(d)
    }
}

impl From<Errno> for Refusal {
    fn from(e: Errno) -> Refusal {
        Refusal::Failed(e)
    }
}

/// The way out of the sandbox.
pub trait Egress: Send + Sync {
    /// A host-side `AF_UNIX` socket (stream for TCP, datagram for UDP)
    /// connected to something that carries traffic to `dst`, or why not.
    /// May block while the host connects.
    fn connect(&self, dst: SocketAddr, proto: Proto) -> Result<OwnedFd, Refusal>;

    /// The verdict `connect` would give before dialling: Ok when the
    /// destination is allowed, else the same `Refusal::Denied`. Lets a
    /// non-blocking connect be refused at once and dial in the
    /// background otherwise. The default asks `connect` (right for an
    /// egress that refuses without dialling, as [`NoEgress`]).
    fn verdict(&self, dst: SocketAddr, proto: Proto) -> Result<(), Refusal> {
        self.connect(dst, proto).map(drop)
    }

    /// Sets `opt`, as the guest set it on its relayed connection whose
    /// guest end has inode `conn`, on the host socket that carries it
    /// (Nagle there would hold the guest's bytes where the guest asked
    /// for none; keep-alive probes the remote only from there); nothing
    /// for any other socket.
    fn set_host_option(&self, _conn: u64, _opt: HostOption) {}

    /// The error the host socket of the relayed UDP connection whose
    /// guest end has inode `conn` reported since the guest was last told
    /// (an ICMP port unreachable: ECONNREFUSED), taken: the errno of the
    /// mark the relay left on the guest's socket (`crate::mark`), which
    /// the guest's socket reports once, as Linux's connected UDP socket
    /// reports its `sk_err`. None for any other socket.
    fn take_error(&self, _conn: u64) -> Option<Errno> {
        None
    }

    /// Whether a loopback destination (127.0.0.0/8, ::1) is the host's
    /// rather than the sandbox's: only when a rule names it explicitly.
    fn takes_loopback(&self, dst: SocketAddr, proto: Proto) -> bool {
        let _ = (dst, proto);
        false
    }

    /// One datagram from the guest socket `from` (a host `AF_UNIX`
    /// datagram socket, already bound to its name) to `dst`; replies must
    /// reach `from`'s name. The default refuses as `connect` does.
    fn send_to(
        &self,
        from: BorrowedFd<'_>,
        dst: SocketAddr,
        data: &[u8],
    ) -> Result<usize, Refusal> {
        let _ = (from, data);
        self.connect(dst, Proto::Udp).map(|_| 0)
    }
}

/// No egress at all: the default of a sandbox.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEgress;

impl Egress for NoEgress {
    fn connect(&self, _dst: SocketAddr, _proto: Proto) -> Result<OwnedFd, Refusal> {
        Err(Refusal::Denied(Denied {
            reason: "no egress allowed (loopback only)".into(),
        }))
    }
}

/// An option of the guest's TCP socket that the host socket of a relayed
/// connection carries out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostOption {
    NoDelay(bool),
    KeepAlive(bool),
    KeepIdle(u32),
    KeepIntvl(u32),
    KeepCnt(u32),
}

impl HostOption {
    /// `(level, name)` set to `v` (already checked as the kernel checks
    /// it), if a relay's host socket carries it.
    pub fn of(level: i32, name: i32, v: i32) -> Option<HostOption> {
        let n = u32::try_from(v).ok();
        match (level, name) {
            (libc::IPPROTO_TCP, libc::TCP_NODELAY) => Some(HostOption::NoDelay(v != 0)),
            (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => Some(HostOption::KeepAlive(v != 0)),
            (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => n.map(HostOption::KeepIdle),
            (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL) => n.map(HostOption::KeepIntvl),
            (libc::IPPROTO_TCP, libc::TCP_KEEPCNT) => n.map(HostOption::KeepCnt),
            _ => None,
        }
    }
}

/// One refused connection, as the report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeniedConnection {
    /// The address as the guest named it (IPv4-mapped shown as IPv4).
    pub address: String,
    pub port: u16,
    /// "tcp" or "udp".
    pub proto: &'static str,
    pub reason: String,
    /// How many times the guest tried (repeats are folded).
    pub count: u64,
}

/// Most distinct refusals kept; further ones are only counted.
const MAX_ENTRIES: usize = 1000;

/// The refusals of one run, in order of first attempt.
#[derive(Debug, Default)]
pub struct DenialLog {
    inner: Mutex<(Vec<DeniedConnection>, u64)>,
}

impl DenialLog {
    /// Records one refused attempt.
    pub fn record(&self, dst: SocketAddr, proto: Proto, reason: &str) {
        let address = dst.ip().to_string();
        let proto = match proto {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        };
        let mut inner = self.inner.lock();
        let (list, dropped) = &mut *inner;
        let same = |d: &&mut DeniedConnection| {
            d.address == address && d.port == dst.port() && d.proto == proto && d.reason == reason
        };
        if let Some(d) = list.iter_mut().find(same) {
            d.count += 1;
        } else if list.len() < MAX_ENTRIES {
            list.push(DeniedConnection {
                address,
                port: dst.port(),
                proto,
                reason: reason.to_string(),
                count: 1,
            });
        } else {
            *dropped += 1;
        }
    }

    /// The refusals so far, and how many distinct ones did not fit.
    pub fn snapshot(&self) -> (Vec<DeniedConnection>, u64) {
        self.inner.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_options_are_the_transmission_and_keepalive_ones() {
        let tcp = libc::IPPROTO_TCP;
        assert_eq!(
            HostOption::of(tcp, libc::TCP_NODELAY, 7),
            Some(HostOption::NoDelay(true))
        );
        assert_eq!(
            HostOption::of(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 0),
            Some(HostOption::KeepAlive(false))
        );
        assert_eq!(
            HostOption::of(tcp, libc::TCP_KEEPIDLE, 30),
            Some(HostOption::KeepIdle(30))
        );
        assert_eq!(HostOption::of(tcp, libc::TCP_KEEPCNT, -1), None);
        assert_eq!(HostOption::of(tcp, libc::TCP_CORK, 1), None);
        assert_eq!(
            HostOption::of(libc::SOL_SOCKET, libc::SO_RCVBUF, 4096),
            None
        );
    }

    #[test]
    fn folds_repeats() {
        let log = DenialLog::default();
        let dst: SocketAddr = "10.0.0.1:80".parse().unwrap();
        let Err(Refusal::Denied(e)) = NoEgress.connect(dst, Proto::Tcp) else {
            panic!("NoEgress allowed a connection");
        };
        log.record(dst, Proto::Tcp, &e.reason);
        log.record(dst, Proto::Tcp, &e.reason);
        log.record(dst, Proto::Udp, &e.reason);
        let (list, dropped) = log.snapshot();
        assert_eq!((list.len(), list[0].count, dropped), (2, 2, 0));
        assert_eq!((list[0].address.as_str(), list[0].port), ("10.0.0.1", 80));
    }
}
