//! The sandbox's network namespace, made beside init instead of in its
//! clone: creating a network namespace (its sysctl tables, `lo`) is the
//! dearest part of that clone (0.5–1.2 ms on the 2-vCPU VM), and a
//! helper process makes it on the other CPU while init builds the view.
//!
//! The helper is a fork of the (still single-threaded) supervisor: it
//! joins the sandbox's user namespace, unshares a new network namespace
//! there (so the sandbox's root owns it, as if init had made it), brings
//! `lo` up (and the DNS stub's address on it), sends the namespace back
//! over a channel and exits. The supervisor hands it to the socket
//! factory and to init, which joins it before it drops its privileges and
//! refuses to go on without it (`init.rs`): no process of the sandbox
//! ever runs in the host's network namespace, and init itself never
//! holds a capability there.
//!
//! Owns: the helper. Does not own: when init joins (`init.rs`) or the
//! order of the launch (`sandbox.rs`).

use std::fs::File;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sched::{setns, unshare, CloneFlags};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::channel::{self, Channel, Msg};
use crate::sys::fd::close_all_except;
use crate::sys::net::{add_address, set_link_up};
use crate::sys::process::{exit_now, fork_single_threaded, Forked};

/// A helper making the sandbox's network namespace.
pub(super) struct NetnsMaker {
    pid: Pid,
    channel: Channel,
}

impl NetnsMaker {
    /// Forks the helper into `userns` (the sandbox's user namespace, whose
    /// id maps are written). Call it while the process is single-threaded.
    pub(super) fn start(
        userns: BorrowedFd<'_>,
        nameserver: Option<IpAddr>,
    ) -> Result<NetnsMaker, String> {
        let err = |what: &str, e: Errno| format!("{what}: {}", e.desc());
        let (ours, theirs) = channel::pair().map_err(|e| err("creating a channel", e))?;
        match fork_single_threaded().map_err(|e| err("forking the netns helper", e))? {
            Forked::Child => {
                drop(ours);
                let msg = match make(userns, nameserver, &theirs) {
                    Ok(netns) => Msg::Net(netns),
                    Err(e) => Msg::Failed(format!("creating the sandbox's network: {}", e.desc())),
                };
                let _ = theirs.send(&msg);
                exit_now(0)
            }
            Forked::Parent(pid) => Ok(NetnsMaker { pid, channel: ours }),
        }
    }

    /// Waits for the namespace (and reaps the helper).
    pub(super) fn finish(self) -> Result<OwnedFd, String> {
        let reply = self.channel.recv();
        let _ = waitpid(self.pid, None);
        match reply {
            Ok(Some(Msg::Net(fd))) => Ok(fd),
            Ok(Some(Msg::Failed(msg))) => Err(msg),
            _ => Err("creating the sandbox's network: the helper died".into()),
        }
    }
}

/// The helper's work: a new network namespace owned by `userns`.
fn make(
    userns: BorrowedFd<'_>,
    nameserver: Option<IpAddr>,
    channel: &Channel,
) -> Result<OwnedFd, Errno> {
    close_all_except(&[userns.as_raw_fd(), channel.fd().as_raw_fd()])?;
    setns(userns, CloneFlags::CLONE_NEWUSER)?;
    unshare(CloneFlags::CLONE_NEWNET)?;
    // Loopback only matters to programs that use it; no reason to fail.
    let _ = set_link_up("lo");
    // glibc's getaddrinfo with AI_ADDRCONFIG (curl, getent ahosts) asks
    // DNS for IPv4 only when an address other than 127.0.0.1 is
    // configured: the stub's own address on `lo` is that address.
    if let Some(IpAddr::V4(stub)) = nameserver {
        let _ = add_address("lo:dns", stub);
    }
    File::open("/proc/self/ns/net")
        .map(OwnedFd::from)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}
