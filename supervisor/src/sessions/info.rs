//! What `GET /v1/sessions/{id}` says of a session: its state (running,
//! hibernated, ended), lifetimes, idle time, processes and memory, and
//! its metadata.
//!
//! Owns that answer's form and how it is gathered from the session and
//! /proc; not the session's lifecycle (`registry.rs`).

use serde::Serialize;

use super::hibernate::Saved;
use super::metadata::{Filter, Metadata};
use super::procs;
use super::registry::{lock, Session};

/// What `GET /v1/sessions/{id}` says.
#[derive(Debug, Serialize)]
pub struct SessionInfo {
    pub id: String,
    /// `running`, `hibernated` or `ended`.
    pub state: &'static str,
    /// Why it ended: `deleted`, `idle_ttl`, `max_lifetime`, `sandbox_exited`, `daemon_stopped`, `daemon_restarted`.
    pub reason: Option<String>,
    /// The sandbox's line when it ended by itself (`sandbox_exited`):
    /// which limit killed it, e.g. `killed: memory limit 256 MiB reached (peak 256 MiB)`.
    pub message: Option<String>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
    /// Seconds since the last exec or file request ended (0 while one runs).
    pub idle_s: f64,
    pub idle_ttl_s: u64,
    pub max_lifetime_s: u64,
    /// Resident memory of the session's processes, bytes.
    pub memory_bytes: u64,
    /// The session's processes (besides its init and the process keeping it alive).
    pub processes: Vec<procs::Process>,
    pub workdir: String,
    pub volume: Option<super::spec::VolumeSpec>,
    pub publish: Vec<String>,
    /// The template it was made from.
    pub template: Option<String>,
    pub idle_hibernate_s: Option<u64>,
    /// What the last hibernation saved, while the session sleeps.
    pub hibernated: Option<Saved>,
    /// Why the last automatic hibernation failed, if it did.
    pub hibernate_error: Option<String>,
    /// The operator's tags given at creation (`{}`: none).
    pub metadata: Metadata,
}

impl Session {
    /// The session's state now.
    pub fn info(&self) -> SessionInfo {
        let record = lock(&self.record).clone();
        let running = record.ended.is_none();
        let (idle, busy, hibernate_error) = {
            let live = lock(&self.live);
            (
                live.last_active.elapsed(),
                live.running > 0,
                live.hibernate_error.clone(),
            )
        };
        let processes = match running {
            true => self.guest_processes(),
            false => Vec::new(),
        };
        let memory_bytes = processes.iter().map(|p| p.rss).sum();
        SessionInfo {
            id: self.id.clone(),
            state: match (running, record.hibernated.is_some()) {
                (false, _) => "ended",
                (true, true) => "hibernated",
                (true, false) => "running",
            },
            reason: record.ended.as_ref().map(|e| e.reason.clone()),
            message: record.ended.as_ref().and_then(|e| e.message.clone()),
            created_at: record.created_at,
            ended_at: record.ended.as_ref().map(|e| e.at),
            idle_s: if busy || !running {
                0.0
            } else {
                idle.as_secs_f64()
            },
            idle_ttl_s: self.idle_ttl.as_secs(),
            max_lifetime_s: self.max_lifetime.as_secs(),
            memory_bytes,
            processes,
            workdir: self.workdir.clone(),
            volume: record.spec.volume.clone(),
            publish: record.spec.publish.clone(),
            template: record.spec.template.clone(),
            idle_hibernate_s: self.idle_hibernate.map(|d| d.as_secs()),
            hibernated: record.hibernated.clone().filter(|_| running),
            hibernate_error,
            metadata: record.spec.metadata,
        }
    }

    /// Whether the session's metadata holds every pair of `filter`.
    pub fn matches(&self, filter: &Filter) -> bool {
        filter.matches(&lock(&self.record).spec.metadata)
    }

    /// The session's processes but its init and the process keeping the
    /// sandbox alive (the first `sleep infinity`); none while no sandbox runs.
    pub(super) fn guest_processes(&self) -> Vec<procs::Process> {
        let init = self.init();
        if init == 0 {
            return Vec::new();
        }
        let mut processes = procs::processes(init);
        let init_command = std::fs::read(format!("/proc/{init}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let keeper = processes
            .iter()
            .find(|p| p.command == "sleep infinity")
            .map(|p| p.pid);
        processes.retain(|p| Some(p.pid) != keeper && p.command != init_command.trim_end());
        processes
    }
}
