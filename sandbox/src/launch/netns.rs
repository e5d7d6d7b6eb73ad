//! The sandbox's network namespace: made beside init's setup, not in
//! init's clone, and joined by init before the guest exists.
//!
//! Why: creating a network namespace is the costliest part of the
//! sandbox's clone (`copy_net_ns`, the per-net set-up of every protocol:
//! about 1.2 ms of CPU), and nothing init does before the guest needs
//! it. So init is cloned without `CLONE_NEWNET`, and right after the
//! clone a small child of the supervisor ([`Holder::spawn_joining`], on
//! a stack of its own, sharing our memory) joins init's user namespace
//! and unshares a network namespace there, owned by that user namespace
//! as init's own would have been, on another CPU while we write the id
//! maps and init builds the view. The supervisor opens the namespace
//! from the child, lets the child go, and sends the namespace to init
//! (`Msg::Net`), which joins it (`setns`) once the view is built, while
//! it still has its capabilities and before anything is forked: the
//! guest, its exec helpers and everything they make are born in it.
//!
//! Until it joins, init is in the supervisor's network namespace, where
//! it makes no network call (mounts, files and the hostname only). If
//! the namespace cannot be made, sent or joined, the launch fails: the
//! guest never runs without it. The kernel's procfs shows a reader's own
//! network namespace under /proc/sys/net and a task's under
//! /proc/<pid>/net, whatever namespace mounted it, so the view's /proc
//! is the same either way.
//!
//! Owns: making the namespace, handing it over, init's join. Does not
//! own the child itself (`sys/holder.rs`) or what lives in the namespace
//! (the socket factory brings its loopback up: `socket_factory.rs`).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};

use super::channel::{Channel, Msg};
use super::open_namespace;
use crate::sys::holder::{Holder, Leaving};

/// The child making the sandbox's network namespace.
pub(super) struct Making(Holder);

/// Starts making the namespace in `userns` (init's user namespace).
pub(super) fn start(userns: BorrowedFd<'_>) -> Result<Making, String> {
    Holder::spawn_joining(userns, CloneFlags::CLONE_NEWNET)
        .map(Making)
        .map_err(|e| failed(e.desc()))
}

impl Making {
    /// Waits for the namespace and opens it; the child then leaves, and
    /// is reaped when what comes back with the namespace is dropped.
    pub(super) fn finish(self) -> Result<(OwnedFd, Leaving), String> {
        let Making(mut holder) = self;
        holder.ready().map_err(|e| failed(e.desc()))?;
        let net = open_namespace(holder.pid(), "net");
        let leaving = holder.release();
        net.map(|ns| (ns, leaving))
    }
}

fn failed(why: &str) -> String {
    format!("cannot create the sandbox's network namespace: {why}")
}

/// Sends the namespace to init.
pub(super) fn send(channel: &Channel, net: BorrowedFd<'_>) -> nix::Result<()> {
    channel.send(&Msg::Net(net.try_clone_to_owned().map_err(io_errno)?))
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Init's side: waits for the namespace and joins it. Called with every
/// capability still held, before anything is forked.
pub(super) fn join(channel: &Channel) -> Result<(), String> {
    let ns = match channel.recv() {
        Ok(Some(Msg::Net(ns))) => ns,
        // The supervisor is gone, or failed before sending it.
        _ => return Err("the sandbox's network namespace never came".into()),
    };
    setns(ns.as_fd(), CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("joining the sandbox's network namespace: {}", e.desc()))
}
