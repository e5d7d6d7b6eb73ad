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

use std::fmt::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::launch::InitHooks;
use crate::sys::pidfd;
use crate::sys::process::{prlimit, Rlimit};
use cgroup::{Controller, Counters, Host, SandboxCgroup};

/// The limits of one run, as given on the command line.
#[derive(Clone, Debug, Default, PartialEq)]
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
}

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
        // at start-up (see ARCHITECTURE.md, "Limits").
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

/// How the limits are enforced for one run.
#[derive(Debug)]
pub struct Enforcement {
    pub limits: Limits,
    cgroup: Option<SandboxCgroup>,
    rlimits: Vec<(Rlimit, u64)>,
    /// The cgroup v1 `tasks` files init writes itself into.
    self_join: Vec<OwnedFd>,
    /// What could not be enforced through a cgroup, for one warning.
    pub warning: Option<String>,
}

impl Enforcement {
    /// Creates the sandbox's cgroup (beneath ours) with the limits set,
    /// and plans the rlimits. Call before launch.
    pub fn prepare(limits: &Limits) -> Result<Enforcement, String> {
        let wanted = limits.cgroup_controllers();
        let cgroup = if wanted.is_empty() {
            None
        } else {
            let name = format!("supervisor-{}", std::process::id());
            Some(SandboxCgroup::create(&Host::discover(), &wanted, &name))
        };
        let mut e = Enforcement {
            limits: limits.clone(),
            cgroup,
            rlimits: Vec::new(),
            self_join: Vec::new(),
            warning: None,
        };
        if let Err(msg) = e.write_cgroup_limits() {
            e.remove();
            return Err(msg);
        }
        if let Some(cg) = &e.cgroup {
            match cg.self_join_files() {
                Ok(files) => e.self_join = files,
                Err(err) => {
                    e.remove();
                    return Err(format!("cannot open the sandbox's cgroup: {err}"));
                }
            }
        }
        e.plan_rlimits();
        Ok(e)
    }

    fn write_cgroup_limits(&self) -> Result<(), String> {
        let Some(cg) = &self.cgroup else {
            return Ok(());
        };
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
    /// could not take, each named in the warning.
    fn plan_rlimits(&mut self) {
        let l = self.limits.clone();
        let has = |c| self.cgroup.as_ref().is_some_and(|cg| cg.has(c));
        let mut fallback = Vec::new();
        let mut lost = Vec::new();
        if let Some(n) = l.nofile {
            self.rlimits.push((Rlimit::NoFile, n));
        }
        if let (Some(m), false) = (l.memory, has(Controller::Memory)) {
            self.rlimits.push((Rlimit::Data, m));
            fallback.push("--memory as a per-process data-size rlimit (allocations fail, no kill)");
        }
        if let (Some(p), false) = (l.pids, has(Controller::Pids)) {
            self.rlimits.push((Rlimit::NProc, p));
            fallback.push("--pids as RLIMIT_NPROC (forks fail, no kill)");
        }
        if let (Some(t), false) = (l.cpu_time, has(Controller::CpuAcct)) {
            self.rlimits.push((Rlimit::Cpu, t.as_secs().max(1)));
            fallback.push("--cpu-time as a per-process RLIMIT_CPU");
        }
        if l.cpus.is_some() && !has(Controller::Cpu) {
            lost.push("--cpus");
        }
        if fallback.is_empty() && lost.is_empty() {
            return;
        }
        let mut w = String::from("no cgroup to enforce limits in (none delegated to us)");
        if !fallback.is_empty() {
            let _ = write!(w, "; enforcing {}", fallback.join(", "));
        }
        if !lost.is_empty() {
            let _ = write!(w, "; cannot enforce {}", lost.join(", "));
        }
        self.warning = Some(w);
    }

    /// Moves the sandbox's init into the cgroup where it cannot join
    /// itself (v2: that migration waits for an RCU grace period, so
    /// launch overlaps it with init's setup).
    pub fn join_cgroup(&self, init: Pid) -> Result<(), String> {
        match &self.cgroup {
            Some(cg) => cg
                .join(init.as_raw())
                .map_err(|e| format!("cannot move the sandbox into its cgroup: {e}")),
            None => Ok(()),
        }
    }

    /// Sets init's rlimits (`prlimit`, so a root invoker may also raise
    /// `--nofile`), which the guest inherits.
    pub fn set_rlimits(&self, init: Pid) -> Result<(), String> {
        for &(resource, value) in &self.rlimits {
            prlimit(init, resource, value)
                .map_err(|e| format!("cannot set {}: {}", resource.flag_name(), e.desc()))?;
        }
        Ok(())
    }

    /// The cpu `tasks` files the trap's workers join and leave by
    /// (`SandboxCgroup::worker_cpu_files`).
    pub fn worker_cpu_files(&self) -> Option<(OwnedFd, OwnedFd)> {
        self.cgroup.as_ref()?.worker_cpu_files()
    }

    /// The counters of the sandbox's cgroup (empty without one).
    pub fn counters(&self) -> Counters {
        self.cgroup
            .as_ref()
            .map(SandboxCgroup::counters)
            .unwrap_or_default()
    }

    /// The cgroup directories, for the janitor.
    pub fn cgroup_dirs(&self) -> Vec<std::path::PathBuf> {
        self.cgroup
            .as_ref()
            .map(|c| c.dirs().to_vec())
            .unwrap_or_default()
    }

    /// Forgets the cgroup without removing it (the janitor removes it).
    pub fn leave_to_janitor(&mut self) {
        self.self_join.clear();
        self.cgroup = None;
    }

    /// Kills anything left in the cgroup and removes it.
    pub fn remove(&mut self) {
        self.self_join.clear();
        if let Some(cg) = self.cgroup.take() {
            cg.remove();
        }
    }
}

/// Init joins the cgroup while it sets up and gets its rlimits after.
impl InitHooks for Enforcement {
    fn self_join_files(&self) -> &[OwnedFd] {
        &self.self_join
    }
    fn setting_up(&self, init: Pid) -> Result<(), String> {
        self.join_cgroup(init)
    }
    fn set_up(&self, init: Pid) -> Result<(), String> {
        self.set_rlimits(init)
    }
}

impl Drop for Enforcement {
    fn drop(&mut self) {
        self.remove();
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
