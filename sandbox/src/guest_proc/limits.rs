//! What the guest is told of its limits: [`GuestView`] (from the run's
//! limits, or from limits enforced outside it: `outside.rs`) and the [`GuestLimits`] the handlers
//! serve /proc/meminfo, nproc and the /proc/sys sizes from.
//!
//! Owns turning flags or a view into those figures. Does not own
//! enforcing the limits (`limits/`, or the front-end's cgroup) or the files'
//! texts (`sandbox_syscalls` handlers).

use std::sync::Arc;

use nix::unistd::{sysconf, SysconfVar};
use sandbox_syscalls::GuestLimits;

use crate::limits::cgroup::Counters;
use crate::limits::Limits;

/// Reads a figure of the sandbox's cgroup now (at each open of a file
/// that shows it).
pub type Reading = Box<dyn Fn() -> Option<u64> + Send + Sync>;

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
    /// The memory limit now (an `update` changes it); without it, `memory`.
    pub memory_limit_now: Option<Reading>,
    /// The CPUs now, rounded up (`u64::MAX`: unlimited); without it, `cpus`.
    pub cpus_now: Option<Reading>,
    /// The pids limit now (`u64::MAX`: unlimited); without it, `pids`.
    pub pids_now: Option<Reading>,
}

impl GuestView {
    /// The limits the run enforces itself, as the guest is told of them.
    pub(crate) fn of_limits(limits: &Limits) -> GuestView {
        GuestView {
            memory: limits.memory,
            cpus: limits.cpus,
            pids: limits.pids,
            ..GuestView::default()
        }
    }
}

/// What the guest is told of its limits (/proc/meminfo, /proc/cpuinfo,
/// sched_getaffinity): `view`'s, with the usage of the run's cgroup when
/// the view brings none and there is one.
pub(crate) fn guest_limits(view: GuestView, counters: &Arc<Counters>) -> GuestLimits {
    let usage = counters.clone();
    let own_usage = || Box::new(move || usage.memory_usage()) as Reading;
    GuestLimits {
        memory_limit: view.memory,
        memory_limit_now: view.memory_limit_now,
        memory_usage: view
            .memory_usage
            .or_else(|| counters.has_memory().then(own_usage)),
        cpus: guest_cpus(view.cpus),
        cpus_now: view.cpus_now.map(|read| {
            Box::new(move || read().map(|n| at_most_host(usize::try_from(n).unwrap_or(usize::MAX))))
                as Box<dyn Fn() -> Option<usize> + Send + Sync>
        }),
        pids: view.pids,
        pids_now: view.pids_now,
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
