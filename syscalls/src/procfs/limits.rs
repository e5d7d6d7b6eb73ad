//! What the guest is told of its limits: memory, CPUs and tasks, fixed
//! at start or read again at each use (a container's `update` changes
//! them). The supervisor sets them ([`crate::Context::set_limits`]);
//! /proc's texts (`texts.rs`), sysinfo(2) and sched_getaffinity read
//! them.
//!
//! Does not own: enforcing the limits (cgroups, in the supervisor), or
//! the files served under them (`served.rs`).

use std::fmt;

/// What the guest is told about its limits. The default (no limits)
/// changes nothing: the guest sees the host.
#[derive(Default)]
pub struct GuestLimits {
    /// Memory limit in bytes (MemTotal in /proc/meminfo), if any.
    pub memory_limit: Option<u64>,
    /// The memory limit now, read at each open (a container's `update`
    /// changes it); `memory_limit` when it reads nothing. Only consulted
    /// when `memory_limit` is set (which decides what is covered).
    pub memory_limit_now: Option<Box<dyn Fn() -> Option<u64> + Send + Sync>>,
    /// Bytes the sandbox uses now (for MemFree/MemAvailable), read at each open of /proc/meminfo.
    pub memory_usage: Option<Box<dyn Fn() -> Option<u64> + Send + Sync>>,
    /// How many CPUs the guest may use (ceil of --cpus, at most the host's), if limited.
    pub cpus: Option<usize>,
    /// The CPUs now, read at each use (a container's `update` changes
    /// them); `cpus` when it reads nothing. Only consulted when `cpus`
    /// is set (which decides what is covered).
    pub cpus_now: Option<Box<dyn Fn() -> Option<usize> + Send + Sync>>,
    /// How many tasks the guest may have (--pids), if limited.
    pub pids: Option<u64>,
    /// The pids limit now, read at each use; `pids` when it reads
    /// nothing. Only consulted when `pids` is set.
    pub pids_now: Option<Box<dyn Fn() -> Option<u64> + Send + Sync>>,
}

impl fmt::Debug for GuestLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuestLimits")
            .field("memory_limit", &self.memory_limit)
            .field(
                "memory_limit_now",
                &self.memory_limit_now.as_ref().map(|_| "Fn"),
            )
            .field("memory_usage", &self.memory_usage.as_ref().map(|_| "Fn"))
            .field("cpus", &self.cpus)
            .field("cpus_now", &self.cpus_now.as_ref().map(|_| "Fn"))
            .field("pids", &self.pids)
            .field("pids_now", &self.pids_now.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl GuestLimits {
    /// The memory limit now: read again when it can change, else the fixed one.
    pub fn memory_limit(&self) -> Option<u64> {
        let fixed = self.memory_limit?;
        let now = self.memory_limit_now.as_ref().and_then(|f| f());
        Some(now.unwrap_or(fixed))
    }

    /// The CPUs the guest may use now: read again when they can change,
    /// else the fixed number.
    pub fn cpus_limit(&self) -> Option<usize> {
        let fixed = self.cpus?;
        let now = self.cpus_now.as_ref().and_then(|f| f());
        Some(now.unwrap_or(fixed))
    }

    /// The pids limit now: read again when it can change, else the fixed one.
    pub fn pids_limit(&self) -> Option<u64> {
        let fixed = self.pids?;
        let now = self.pids_now.as_ref().and_then(|f| f());
        Some(now.unwrap_or(fixed))
    }
}
