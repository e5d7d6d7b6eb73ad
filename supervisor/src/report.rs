//! The run report: a versioned JSON document written with `--report`.
//!
//! Owns the schema (see [`Report`]; bump [`VERSION`] on any incompatible
//! change) and writing it. Does not own measuring: `run` fills it in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

/// Schema version of the report.
pub const VERSION: u32 = 1;

/// Why the run ended.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The command exited by itself (any code).
    Exited,
    /// The command died of a signal.
    Signaled,
    /// The supervisor could not run or finish the command.
    SupervisorError,
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

/// Version 1 of the report.
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
    pub syscalls: SyscallCounts,
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
            syscalls: SyscallCounts::default(),
        }
    }

    /// Writes the report as pretty JSON.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}
