//! Namespaces a sandbox takes from elsewhere: the IPC, UTS and pid
//! namespaces it joins ([`JoinedNamespaces`], [`JoinedPid`]) and where its clocks start
//! ([`GuestClocks`]).
//!
//! Owns that part of the configuration's shape. Does not own joining them
//! or making the time namespace (`launch/`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// IPC and UTS namespaces the sandbox joins, by path (`/proc/PID/ns/ipc`,
/// a bind-mounted namespace file), instead of making new ones: an OCI
/// container that names another's (a pod's containers, Docker's `--ipc
/// container:X`). Joined by the launching process before init is cloned,
/// so init and everything in the sandbox are born in them; the sandbox's
/// user namespace does not own them, so nothing in it may change them
/// (no `sethostname`; SysV objects by their modes alone).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinedNamespaces {
    /// SysV shared memory and semaphores are then one set with those of
    /// that namespace's processes.
    #[serde(default)]
    pub ipc: Option<PathBuf>,
    /// The hostname is then that namespace's (the guest's /etc/hostname
    /// and /etc/hosts name it, whatever [`SandboxConfig::hostname`] says).
    #[serde(default)]
    pub uts: Option<PathBuf>,
    /// Another sandbox's pid namespace, with the user namespace that owns
    /// it: the guest's processes are then that sandbox's guest's peers.
    #[serde(default)]
    pub pid: Option<JoinedPid>,
}

/// Another sandbox's pid namespace and its user namespace (by path), and
/// that user namespace's id maps as `/proc/PID/uid_map` and `gid_map`
/// read them from the launching process's user namespace. Init is born
/// in the pid namespace and joins the user namespace before it makes the
/// others, so that it may mount that pid namespace's /proc; the launch
/// refuses maps other than the sandbox's own would be (the guest's ids
/// must mean what they mean in the sandbox it joins).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinedPid {
    pub pid: PathBuf,
    pub user: PathBuf,
    pub uid_map: String,
    pub gid_map: String,
}

/// The guest's `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` as they read when
/// the sandbox's time namespace is made, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestClocks {
    pub monotonic_ns: u64,
    pub boottime_ns: u64,
}
