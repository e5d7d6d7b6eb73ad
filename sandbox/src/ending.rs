//! How a run ended, put into words: the reason, the report's fields,
//! the one line on stderr, and the exit code.
//!
//! Owns: that mapping (a fatal limit, an exit, a signal, a full layer).
//! Does not own: finding out how the run ended (`run/` waits, the
//! tripwire and the cgroup counters tell).

use std::os::fd::OwnedFd;

use nix::sys::signal::Signal;

use crate::launch::Outcome;
use crate::limits::{format_size, kill_message, Kill, Limits};
use crate::report::{Reason, Report};

/// The exit code when a limit killed the sandbox, as `docker run` gives.
const KILLED_EXIT: i32 = 137;

/// Whether the writable layer is (all but) full: a command that failed
/// then most likely failed for want of space.
pub(crate) fn layer_is_full(layer: &OwnedFd) -> bool {
    match nix::sys::statfs::fstatfs(layer) {
        Ok(st) => {
            let blocks = st.blocks();
            blocks > 0 && st.blocks_available() * 100 <= blocks
        }
        Err(_) => false,
    }
}

/// How the run ended, before it is put into words.
pub(crate) struct Ending {
    pub outcome: Outcome,
    /// The fatal limit that killed the sandbox, if one did.
    pub kill: Option<Kill>,
    pub oom_kills: u64,
    pub layer_full: bool,
    /// argv[0] as given (the flags', or the pool client's).
    pub command: String,
}

impl Ending {
    /// The reason, the report's fields, the one line on stderr, and the
    /// exit code.
    pub fn conclude(self, disk: u64, limits: &Limits, report: &mut Report) -> i32 {
        let kill = self.kill.or_else(|| self.inferred_kill(limits));
        if let Some(kill) = kill {
            let line = format!(
                "killed: {}",
                kill_message(kill, limits, report.peak_memory_bytes)
            );
            eprintln!("supervisor: {line}");
            report.reason = kill.into();
            report.signal = Some(libc::SIGKILL);
            report.message = Some(line);
            return KILLED_EXIT;
        }
        match self.outcome {
            Outcome::Exited(code) => {
                report.reason = Reason::Exited;
                report.exit_code = Some(code);
                if code != 0 && self.layer_full {
                    let line = format!(
                        "the writable layer is full (--disk {}): writes failed with ENOSPC",
                        format_size(disk)
                    );
                    eprintln!("supervisor: {line}");
                    report.reason = Reason::Disk;
                    report.message = Some(line);
                }
                code
            }
            Outcome::Signaled(sig) => {
                let name = Signal::try_from(sig)
                    .map(|s| s.as_str())
                    .unwrap_or("unknown signal");
                let mut line = format!("{} killed by signal {sig} ({name})", self.command);
                report.reason = Reason::Signaled;
                if sig == libc::SIGSYS {
                    line.push_str(": a call the sandbox's policy forbids");
                    report.reason = Reason::Policy;
                }
                eprintln!("supervisor: {line}");
                report.signal = Some(sig);
                report.message = Some(line);
                128 + sig
            }
        }
    }

    /// A limit that ended the run before the watchdog saw it: the OOM
    /// killer took the main process, or (rlimit fallback) the kernel
    /// stopped it for CPU time.
    fn inferred_kill(&self, limits: &Limits) -> Option<Kill> {
        let Outcome::Signaled(sig) = self.outcome else {
            return None;
        };
        if limits.memory.is_some() && self.oom_kills > 0 {
            return Some(Kill::Memory);
        }
        (limits.cpu_time.is_some() && sig == libc::SIGXCPU).then_some(Kill::CpuTime)
    }
}
