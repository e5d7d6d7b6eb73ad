//! Resource limits of one sandbox: what the user asked for, how each is
//! enforced on this host, and the verdict when one ends the run.
//!
//! Owns: [`Limits`] (the flags' values), [`Enforcement`] (the sandbox's
//! cgroup beneath our own, the rlimits of the sandbox's init, and the one
//! warning about what could not be enforced the strong way), the
//! [`Tripwire`] that a fatal limit pulls (it records why and kills the
//! whole sandbox), and the reasons' one-line messages. Submodules: the
//! cgroup itself (`cgroup`), its counters (`counters`), the thread that
//! watches time and counters (`watchdog`), and the process that cleans
//! up after a killed supervisor (`janitor`). Does not own: the output cap's relay
//! (`output.rs`, which pulls the same tripwire) or the report.

pub mod cgroup;
pub mod counters;
pub mod janitor;
pub mod watchdog;

use std::cell::RefCell;
use std::fmt::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::launch::InitHooks;
use crate::sys::pidfd;
use crate::sys::process::{prlimit, prlimit_soft_hard, Rlimit};
use cgroup::{CgroupPlan, Controller, Counters, Host, SandboxCgroup};
use janitor::Janitor;

/// Set in the supervisor's environment, it stops itself (SIGSTOP) as soon
/// as the sandbox's cgroup exists: the leftovers tests kill it there.
pub const STOP_AT_CGROUP_FOR_TESTS: &str = "SUPERVISOR_TEST_STOP_AT_CGROUP";

/// The limits of one run, as given on the command line.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Bytes of memory (page cache and the writable layer's tmpfs included).
    pub memory: Option<u64>,
    /// CPUs' worth of time per period (fractional).
    pub cpus: Option<f64>,
    /// Processes and threads at once.
    pub pids: Option<u64>,
    /// Wall-clock time of the run.
    pub timeout: Option<Duration>,
    /// CPU time of all the sandbox's processes together.
    pub cpu_time: Option<Duration>,
    /// Bytes of stdout and stderr together.
    pub output: Option<u64>,
    /// Open descriptors per process.
    pub nofile: Option<u64>,
    /// Further rlimits of the guest's processes, soft and hard apart (the
    /// OCI runtime's `process.rlimits`, all of them as runc sets them): set
    /// on the sandbox's init, which the guest inherits; after `nofile`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rlimits: Vec<GuestRlimit>,
}

/// One rlimit as given: a Linux `RLIMIT_*` resource number (below
/// [`RLIMIT_COUNT`]), its soft and hard values (`u64::MAX`: unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestRlimit {
    pub resource: u32,
    pub soft: u64,
    pub hard: u64,
}

/// How many rlimit resources Linux has (`RLIM_NLIMITS`).
pub const RLIMIT_COUNT: u32 = 16;

impl Limits {
    fn cgroup_controllers(&self) -> Vec<Controller> {
        let mut wanted = Vec::new();
        if self.memory.is_some() {
            wanted.push(Controller::Memory);
        }
        if self.pids.is_some() {
            wanted.push(Controller::Pids);
        }
        if self.cpus.is_some() {
            wanted.push(Controller::Cpu);
        }
        // With a cgroup limit, the sandbox has a cgroup anyway: account
        // its CPU time and memory there too (the report's figures then
        // cover processes a kill took, which rusage misses). `--timeout`
        // alone makes none: joining a v1 cgroup costs an RCU grace period
        // at start-up (see docs/limits-and-report.md).
        if !wanted.is_empty() || self.cpu_time.is_some() {
            for c in [Controller::CpuAcct, Controller::Memory] {
                if !wanted.contains(&c) {
                    wanted.push(c);
                }
            }
        }
        wanted
    }
}

/// Why a limit ended the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    Timeout,
    Memory,
    CpuTime,
    Pids,
    Output,
}

/// The one-line message for `kill` (after "supervisor: killed: ").
pub fn kill_message(kill: Kill, limits: &Limits, peak_memory: Option<u64>) -> String {
    let secs = |d: Option<Duration>| format_secs(d.unwrap_or_default());
    match kill {
        Kill::Timeout => format!("timeout after {}", secs(limits.timeout)),
        Kill::Memory => {
            let mut m = format!(
                "memory limit {} reached",
                format_size(limits.memory.unwrap_or(0))
            );
            if let Some(peak) = peak_memory {
                let _ = write!(m, " (peak {})", format_size(peak));
            }
            m
        }
        Kill::CpuTime => format!("cpu time limit {} used up", secs(limits.cpu_time)),
        Kill::Pids => format!(
            "process limit {} reached (a fork failed; runaway forking?)",
            limits.pids.unwrap_or(0)
        ),
        Kill::Output => format!(
            "output limit {} reached",
            format_size(limits.output.unwrap_or(0))
        ),
    }
}

/// `1.5 s`, `10 s`.
pub fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// `512 MiB`, `1.5 GiB`, `100 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 || unit == 0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Pulled by whatever sees a fatal limit: the first reason is kept and
/// the sandbox's init gets SIGKILL, which takes every process of its pid
/// namespace at once. It holds a pidfd of init, so a pull after init is
/// gone can never hit a process that reused its pid.
#[derive(Debug, Default)]
pub struct Tripwire {
    reason: OnceLock<Kill>,
    init: OnceLock<OwnedFd>,
}

impl Tripwire {
    pub fn new() -> Arc<Tripwire> {
        Arc::new(Tripwire::default())
    }

    /// Arms it with the sandbox's init (before that, a pull only records).
    pub fn arm(&self, init: Pid) -> Result<(), String> {
        let fd = pidfd::open(init.as_raw(), false)
            .map_err(|e| format!("watching the sandbox: pidfd_open: {}", e.desc()))?;
        let _ = self.init.set(fd);
        Ok(())
    }

    pub fn pull(&self, reason: Kill) {
        let _ = self.reason.set(reason);
        if let Some(fd) = self.init.get() {
            let _ = pidfd::send_signal(fd.as_fd(), Signal::SIGKILL);
        }
    }

    pub fn reason(&self) -> Option<Kill> {
        self.reason.get().copied()
    }
}

/// How the limits are enforced for one run. Planned before the launch
/// (no system call: [`Enforcement::plan`]); the cgroup is made while the
/// sandbox's init builds the view ([`Enforcement::create`], from the
/// launch's [`InitHooks::cgroup_join`]), and init joins it before it
/// forks the guest: limits hold from the guest's first instruction.
#[derive(Debug)]
pub struct Enforcement {
    pub limits: Limits,
    /// The controllers a cgroup is wanted for (none: no cgroup at all).
    wanted: Vec<Controller>,
    made: RefCell<Made>,
}

/// What [`Enforcement::create`] made.
#[derive(Debug, Default)]
struct Made {
    cgroup: Option<SandboxCgroup>,
    /// Removes the cgroup if we die first (forked right after the mkdir).
    janitor: Option<Janitor>,
    /// Opened with the cgroup, so the serving phase opens nothing.
    counters: Option<Counters>,
    worker_cpu_files: Option<(OwnedFd, OwnedFd)>,
}

impl Enforcement {
    /// Plans the enforcement of `limits`; makes nothing yet.
    pub fn plan(limits: &Limits) -> Enforcement {
        Enforcement {
            limits: limits.clone(),
            wanted: limits.cgroup_controllers(),
            made: RefCell::new(Made::default()),
        }
    }

    /// Whether a cgroup is wanted (init then joins it late).
    pub fn wants_cgroup(&self) -> bool {
        !self.wanted.is_empty()
    }

    /// Creates the sandbox's cgroup beneath ours (its janitor forked at
    /// once), sets the limits, moves `init` into the directories it cannot
    /// join itself (v2), opens the counters, and returns the v1 `tasks`
    /// files for init to write "0" to (the rlimits follow from what was
    /// made: [`Enforcement::set_rlimits`]). Call while single-threaded (the
    /// janitor forks), while init builds the view.
    pub fn create(&self, init: Pid) -> Result<Vec<OwnedFd>, String> {
        let mut made = self.made.borrow_mut();
        if self.wants_cgroup() {
            let stem = format!("supervisor-{}", std::process::id());
            let plan = CgroupPlan::free(&Host::discover(), &self.wanted, &stem);
            let mut made_dirs = Vec::new();
            if !plan.dirs().is_empty() {
                let (janitor, dirs) = janitor::spawn(plan.dirs().to_vec())?;
                made.janitor = Some(janitor);
                made_dirs = dirs;
            }
            made.cgroup = Some(plan.made(&made_dirs));
            if std::env::var_os(STOP_AT_CGROUP_FOR_TESTS).is_some() {
                let _ = nix::sys::signal::raise(Signal::SIGSTOP);
            }
        }
        let joined = made.cgroup.as_ref().map_or(Ok(Vec::new()), |cg| {
            self.write_cgroup_limits(cg)?;
            cg.join(init.as_raw())
                .map_err(|e| format!("cannot move the sandbox into its cgroup: {e}"))?;
            cg.self_join_files()
                .map_err(|e| format!("cannot open the sandbox's cgroup: {e}"))
        });
        let files = match joined {
            Ok(files) => files,
            Err(msg) => {
                drop(made);
                self.finish(false);
                return Err(msg);
            }
        };
        let made = &mut *made;
        if let Some(cg) = &made.cgroup {
            made.counters = Some(cg.counters());
            made.worker_cpu_files = cg.worker_cpu_files();
        }
        Ok(files)
    }

    fn write_cgroup_limits(&self, cg: &SandboxCgroup) -> Result<(), String> {
        let l = &self.limits;
        let err = |flag: &str, e: std::io::Error| format!("{flag}: cannot set the limit: {e}");
        if let (Some(m), true) = (l.memory, cg.has(Controller::Memory)) {
            cg.set_memory(m).map_err(|e| err("--memory", e))?;
        }
        if let (Some(p), true) = (l.pids, cg.has(Controller::Pids)) {
            cg.set_pids(p).map_err(|e| err("--pids", e))?;
        }
        if let (Some(c), true) = (l.cpus, cg.has(Controller::Cpu)) {
            cg.set_cpus(c).map_err(|e| err("--cpus", e))?;
        }
        Ok(())
    }

    /// rlimits: `--nofile` always; the fallbacks of limits the cgroup
    /// (as made by then) could not take, each named in the warning.
    fn plan_rlimits(&self, cgroup: Option<&SandboxCgroup>) -> (Vec<(Rlimit, u64)>, Option<String>) {
        let l = &self.limits;
        let has = |c| cgroup.is_some_and(|cg| cg.has(c));
        let mut rlimits = Vec::new();
        let mut fallback = Vec::new();
        let mut lost = Vec::new();
        if let Some(n) = l.nofile {
            rlimits.push((Rlimit::NoFile, n));
        }
        if let (Some(m), false) = (l.memory, has(Controller::Memory)) {
            rlimits.push((Rlimit::Data, m));
            fallback.push("--memory as a per-process data-size rlimit (allocations fail, no kill)");
        }
        if let (Some(p), false) = (l.pids, has(Controller::Pids)) {
            rlimits.push((Rlimit::NProc, p));
            fallback.push("--pids as RLIMIT_NPROC (forks fail, no kill)");
        }
        if let (Some(t), false) = (l.cpu_time, has(Controller::CpuAcct)) {
            rlimits.push((Rlimit::Cpu, t.as_secs().max(1)));
            fallback.push("--cpu-time as a per-process RLIMIT_CPU");
        }
        if l.cpus.is_some() && !has(Controller::Cpu) {
            lost.push("--cpus");
        }
        if fallback.is_empty() && lost.is_empty() {
            return (rlimits, None);
        }
        let mut w = String::from("no cgroup to enforce limits in (none delegated to us)");
        if !fallback.is_empty() {
            let _ = write!(w, "; enforcing {}", fallback.join(", "));
        }
        if !lost.is_empty() {
            let _ = write!(w, "; cannot enforce {}", lost.join(", "));
        }
        (rlimits, Some(w))
    }

    /// What could not be enforced the strong way (after the launch).
    pub fn warning(&self) -> Option<String> {
        self.plan_rlimits(self.made.borrow().cgroup.as_ref()).1
    }

    /// Sets init's rlimits (`prlimit`, so a root invoker may also raise
    /// `--nofile`), which the guest inherits.
    pub fn set_rlimits(&self, init: Pid) -> Result<(), String> {
        let (rlimits, _) = self.plan_rlimits(self.made.borrow().cgroup.as_ref());
        for (resource, value) in rlimits {
            prlimit(init, resource, value)
                .map_err(|e| format!("cannot set {}: {}", resource.flag_name(), e.desc()))?;
        }
        for r in &self.limits.rlimits {
            prlimit_soft_hard(init, r.resource, r.soft, r.hard).map_err(|e| {
                format!(
                    "cannot set rlimit {} to {}:{}: {}",
                    r.resource,
                    r.soft,
                    r.hard,
                    e.desc()
                )
            })?;
        }
        Ok(())
    }

    /// The cpu `tasks` files the trap's workers join and leave by
    /// (`SandboxCgroup::worker_cpu_files`), once.
    pub fn worker_cpu_files(&self) -> Option<(OwnedFd, OwnedFd)> {
        self.made.borrow_mut().worker_cpu_files.take()
    }

    /// The counters of the sandbox's cgroup (empty without one), once.
    pub fn counters(&self) -> Counters {
        self.made.borrow_mut().counters.take().unwrap_or_default()
    }

    /// Ends the enforcement: removes the cgroup and dismisses the
    /// janitor; or, when init was `released` and may not have left the
    /// cgroup yet, leaves the removal to the janitor without waiting.
    pub fn finish(&self, released: bool) {
        let mut made = self.made.borrow_mut();
        made.worker_cpu_files = None;
        made.counters = None;
        let cgroup = made.cgroup.take();
        match (made.janitor.take(), released) {
            // The directories are forgotten here, removed by the janitor.
            (Some(janitor), true) => janitor.hand_over(),
            (janitor, _) => {
                if let Some(cg) = cgroup {
                    cg.remove();
                }
                if let Some(j) = janitor {
                    j.dismiss();
                }
            }
        }
    }
}

/// With limits, init joins the cgroup made while it builds the view, and
/// gets its rlimits once set up.
impl InitHooks for Enforcement {
    fn joins_late(&self) -> bool {
        self.wants_cgroup()
    }
    fn cgroup_join(&self, init: Pid) -> Result<Vec<OwnedFd>, String> {
        self.create(init)
    }
    fn setting_up(&self, _: Pid, _: crate::launch::Namespaces<'_>) -> Result<(), String> {
        Ok(())
    }
    fn set_up(&self, init: Pid) -> Result<(), String> {
        self.set_rlimits(init)
    }
}

impl Drop for Enforcement {
    fn drop(&mut self) {
        self.finish(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(format_size(512 << 20), "512 MiB");
        assert_eq!(format_size(1536 << 20), "1.5 GiB");
        assert_eq!(format_size(100), "100 B");
        assert_eq!(format_secs(Duration::from_secs(10)), "10 s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn the_first_pull_is_the_reason() {
        let t = Tripwire::new();
        t.pull(Kill::Timeout);
        t.pull(Kill::Memory);
        assert_eq!(t.reason(), Some(Kill::Timeout));
    }

    #[test]
    fn messages_name_the_limit() {
        let l = Limits {
            memory: Some(512 << 20),
            timeout: Some(Duration::from_secs(10)),
            ..Limits::default()
        };
        assert_eq!(
            kill_message(Kill::Memory, &l, Some(512 << 20)),
            "memory limit 512 MiB reached (peak 512 MiB)"
        );
        assert_eq!(kill_message(Kill::Timeout, &l, None), "timeout after 10 s");
    }
}
