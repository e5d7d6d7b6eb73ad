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
use std::os::fd::OwnedFd;

use parking_lot::Mutex;

use crate::name::Proto;

/// Why a destination may not be reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// One short phrase for the report ("no egress rule allows it").
    pub reason: String,
}

/// The way out of the sandbox.
pub trait Egress: Send + Sync {
    /// A host-side `AF_UNIX` socket (stream for TCP, datagram for UDP)
    /// connected to something that carries traffic to `dst`, or why not.
    fn connect(&self, dst: SocketAddr, proto: Proto) -> Result<OwnedFd, Denied>;
}

/// No egress at all: the default of a sandbox.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEgress;

impl Egress for NoEgress {
    fn connect(&self, _dst: SocketAddr, _proto: Proto) -> Result<OwnedFd, Denied> {
        Err(Denied {
            reason: "no egress allowed (loopback only)".into(),
        })
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
    fn folds_repeats() {
        let log = DenialLog::default();
        let dst: SocketAddr = "10.0.0.1:80".parse().unwrap();
        let e = NoEgress.connect(dst, Proto::Tcp).unwrap_err();
        log.record(dst, Proto::Tcp, &e.reason);
        log.record(dst, Proto::Tcp, &e.reason);
        log.record(dst, Proto::Udp, &e.reason);
        let (list, dropped) = log.snapshot();
        assert_eq!((list.len(), list[0].count, dropped), (2, 2, 0));
        assert_eq!((list[0].address.as_str(), list[0].port), ("10.0.0.1", 80));
    }
}
