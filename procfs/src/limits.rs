//! What the guest is told of its limits: memory, CPUs and tasks, fixed
//! at start or read again at each use (a container's `update` changes
//! them). The engine describes them as a [`GuestView`] (from the run's
//! own limits, or from limits enforced outside it: `outside.rs`) and
//! turns that into the [`GuestLimits`] the served files read
//! ([`GuestView::into_limits`]; the syscalls crate's
//! `Context::set_limits` takes them); /proc's texts (`texts.rs`),
//! sysinfo(2) and sched_getaffinity read them.
//!
//! Does not own: enforcing the limits (cgroups, in the engine or the
//! front-end), or the files served under them (`served.rs`).

use std::fmt;

use nix::unistd::{sysconf, SysconfVar};

use crate::cgroup_memory::CgroupMemory;

/// Reads a figure of the sandbox's cgroup now (at each open of a file
/// that shows it).
pub type Reading = Box<dyn Fn() -> Option<u64> + Send + Sync>;

/// Reads a text of the sandbox's cgroup now (its `memory.stat`).
pub type TextReading = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// What the guest is told of its limits (/proc/meminfo, nproc, the
/// /proc/sys sizes, and which host files are covered): the run's
/// memory, CPUs and pids limits, or those enforced outside it (the OCI
/// runtime's `linux.resources`).
#[derive(Default)]
pub struct GuestView {
    pub memory: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    /// Bytes in use now; without it, the run's own cgroup's.
    pub memory_usage: Option<Reading>,
    /// The `memory.stat` of the cgroup `memory_usage` reads, if it has one.
    pub memory_stat: Option<TextReading>,
    /// The memory limit now (an `update` changes it); without it, `memory`.
    pub memory_limit_now: Option<Reading>,
    /// The CPUs now, rounded up (`u64::MAX`: unlimited); without it, `cpus`.
    pub cpus_now: Option<Reading>,
    /// The pids limit now (`u64::MAX`: unlimited); without it, `pids`.
    pub pids_now: Option<Reading>,
}

impl GuestView {
    /// Limits the run enforces itself (fixed figures), as the guest is
    /// told of them.
    pub fn fixed(memory: Option<u64>, cpus: Option<f64>, pids: Option<u64>) -> GuestView {
        GuestView {
            memory,
            cpus,
            pids,
            ..GuestView::default()
        }
    }

    /// What the guest is told of its limits (/proc/meminfo,
    /// /proc/cpuinfo, sched_getaffinity): this view's, with `own_memory`
    /// (the memory in use of the run's own cgroup and its memory.stat,
    /// when there is one) when the view brings no usage of its own.
    pub fn into_limits(
        self,
        own_memory: impl FnOnce() -> (Option<Reading>, Option<TextReading>),
    ) -> GuestLimits {
        let (memory_usage, memory_stat) = match self.memory_usage {
            Some(usage) => (Some(usage), self.memory_stat),
            None => own_memory(),
        };
        GuestLimits {
            memory_limit: self.memory,
            memory_limit_now: self.memory_limit_now,
            memory_usage,
            memory_stat,
            cpus: guest_cpus(self.cpus),
            cpus_now: self.cpus_now.map(|read| {
                Box::new(move || {
                    read().map(|n| at_most_host(usize::try_from(n).unwrap_or(usize::MAX)))
                }) as Box<dyn Fn() -> Option<usize> + Send + Sync>
            }),
            pids: self.pids,
            pids_now: self.pids_now,
        }
    }
}

/// The CPUs the guest may use: `cpus` rounded up, at most the host's
/// online ones.
pub fn guest_cpus(cpus: Option<f64>) -> Option<usize> {
    Some(at_most_host(cpus?.ceil().max(1.0) as usize))
}

/// `n` CPUs, at least one and at most the host's online ones.
fn at_most_host(n: usize) -> usize {
    let host = sysconf(SysconfVar::_NPROCESSORS_ONLN).ok().flatten();
    let host = host.and_then(|h| usize::try_from(h).ok()).unwrap_or(n);
    n.min(host).max(1)
}

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
    /// The sandbox cgroup's `memory.stat` now (the rest of
    /// /proc/meminfo's figures: `cgroup_memory.rs`), read at each open.
    pub memory_stat: Option<TextReading>,
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
            .field("memory_stat", &self.memory_stat.as_ref().map(|_| "Fn"))
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

    /// The sandbox cgroup's memory figures now (its `memory.stat`, read
    /// and parsed), for /proc/meminfo and sysinfo(2); `None` when it
    /// reads nothing or nothing known.
    pub fn cgroup_memory(&self) -> Option<CgroupMemory> {
        let stat = self.memory_stat.as_ref().and_then(|f| f())?;
        CgroupMemory::new(&stat)
    }
}
