//! The run report: a versioned JSON document written with `--report`.
//!
//! Owns the schema (see [`Report`]; REPORT.md documents it for users;
//! bump [`VERSION`] on any incompatible change) and writing it. Does not
//! own measuring: `run` fills it in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::limits::{Kill, Limits};

/// Schema version of the report (2: limits, reasons of kills, output,
/// peak memory, processes started).
pub const VERSION: u32 = 2;

/// Why the run ended.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The command exited by itself (any code).
    Exited,
    /// The command died of a signal.
    Signaled,
    /// `--timeout` passed; the sandbox was killed.
    Timeout,
    /// `--memory` was reached (the kernel's OOM killer struck); the sandbox was killed.
    Memory,
    /// `--cpu-time` was used up; the sandbox was killed.
    CpuTime,
    /// `--pids` refused a fork; the sandbox was killed.
    Pids,
    /// `--output-limit` was reached; the rest was dropped and the sandbox killed.
    Output,
    /// The command failed with the writable layer (`--disk`) full.
    Disk,
    /// The seccomp policy killed the command (SIGSYS).
    Policy,
    /// The supervisor could not run or finish the command.
    SupervisorError,
}

impl From<Kill> for Reason {
    fn from(kill: Kill) -> Reason {
        match kill {
            Kill::Timeout => Reason::Timeout,
            Kill::Memory => Reason::Memory,
            Kill::CpuTime => Reason::CpuTime,
            Kill::Pids => Reason::Pids,
            Kill::Output => Reason::Output,
        }
    }
}

/// The guest's stdout and stderr, when `--output-limit` measured them.
#[derive(Serialize, Debug, Default)]
pub struct Output {
    /// Bytes passed on (null when not measured: no `--output-limit`).
    pub bytes: Option<u64>,
    /// Whether the limit cut it.
    pub cut: bool,
}

/// The limits of the run as given (null: none), and how they were enforced.
#[derive(Serialize, Debug, Default)]
pub struct LimitsReport {
    pub memory_bytes: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    pub timeout_s: Option<f64>,
    pub cpu_time_s: Option<f64>,
    pub output_bytes: Option<u64>,
    pub nofile: Option<u64>,
    pub disk_bytes: u64,
    /// What could not be enforced through a cgroup, when anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl LimitsReport {
    pub fn new(l: &Limits, disk: u64) -> LimitsReport {
        LimitsReport {
            memory_bytes: l.memory,
            cpus: l.cpus,
            pids: l.pids,
            timeout_s: l.timeout.map(|d| d.as_secs_f64()),
            cpu_time_s: l.cpu_time.map(|d| d.as_secs_f64()),
            output_bytes: l.output,
            nofile: l.nofile,
            disk_bytes: disk,
            warning: None,
        }
    }
}

#[derive(Serialize, Debug, Default)]
pub struct CpuTime {
    pub user: f64,
    pub system: f64,
}

#[derive(Serialize, Debug, Default)]
pub struct SyscallCounts {
    /// Calls the supervisor serviced, by name.
    pub serviced: BTreeMap<String, u64>,
    /// Calls the policy denied, by name.
    pub denied: BTreeMap<String, u64>,
}

/// One refused connection (`netstack::DeniedConnection`).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct DeniedConnection {
    pub address: String,
    pub port: u16,
    /// "tcp" or "udp".
    pub proto: &'static str,
    pub reason: String,
    /// Attempts to the same destination, for the same reason.
    pub count: u64,
}

impl From<netstack::DeniedConnection> for DeniedConnection {
    fn from(d: netstack::DeniedConnection) -> Self {
        DeniedConnection {
            address: d.address,
            port: d.port,
            proto: d.proto,
            reason: d.reason,
            count: d.count,
        }
    }
}

/// Version 2 of the report.
#[derive(Serialize, Debug)]
pub struct Report {
    pub version: u32,
    /// The command's exit code when it exited.
    pub exit_code: Option<i32>,
    /// The signal number when it died of one.
    pub signal: Option<i32>,
    pub reason: Reason,
    /// One line for a person, when the run did not end normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub wall_time_s: f64,
    pub cpu_time_s: CpuTime,
    /// Most memory the sandbox used at once (its cgroup's peak; without
    /// one, the largest single process's), when known.
    pub peak_memory_bytes: Option<u64>,
    /// Processes and threads started in the sandbox (init not counted),
    /// when the run ended without a kill.
    pub processes_started: Option<u32>,
    pub output: Output,
    pub limits: LimitsReport,
    pub syscalls: SyscallCounts,
    /// Connections and datagrams the network policy refused, in order of
    /// first attempt, repeats folded.
    pub denied_connections: Vec<DeniedConnection>,
    /// CPU time as the sandbox's cgroup counted it (preferred to rusage,
    /// which misses processes a kill took).
    #[serde(skip)]
    pub cpu_time_from_cgroup: Option<(f64, f64)>,
}

impl Report {
    pub fn new(reason: Reason) -> Self {
        Report {
            version: VERSION,
            exit_code: None,
            signal: None,
            reason,
            message: None,
            wall_time_s: 0.0,
            cpu_time_s: CpuTime::default(),
            peak_memory_bytes: None,
            processes_started: None,
            output: Output::default(),
            limits: LimitsReport::default(),
            syscalls: SyscallCounts::default(),
            denied_connections: Vec::new(),
            cpu_time_from_cgroup: None,
        }
    }
}

/// Writes `report` (a [`Report`], or the one a pool's sandbox sent back)
/// to `path` as pretty JSON; the run's exit code `code` after it: a report
/// that cannot be written is one line on stderr, and 125 for a run that
/// would otherwise exit 0.
pub fn write_then_exit_code(report: &impl Serialize, path: &Path, code: i32) -> i32 {
    let written = serde_json::to_string_pretty(report)
        .map_err(std::io::Error::other)
        .and_then(|text| std::fs::write(path, text + "\n"));
    match written {
        Ok(()) => code,
        Err(e) => {
            eprintln!("supervisor: cannot write report {}: {e}", path.display());
            if code == 0 {
                125
            } else {
                code
            }
        }
    }
}
