//! A session's record on disk, `<data-dir>/sessions/<id>/session.json`:
//! what was asked for, when, and whether (and why) it ended. Written at
//! creation and at the end. A daemon that starts finds the records of
//! sessions that were running when the last one stopped and reports them
//! ended, reason `daemon_restarted` (their sandboxes died with that
//! daemon: `host.rs`'s lifeline); their volumes stay. Hibernated sessions
//! have no sandbox to lose: they stay hibernated and wake on request. A
//! daemon that stops cleanly ends its sessions itself (`daemon_stopped`).
//! Directories of templates' warm sessions never handed out (no record)
//! are removed.
//!
//! Owns the record's format and its reading and writing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec::SessionSpec;

/// The reason given for sessions found running at a daemon's start.
pub const DAEMON_RESTARTED: &str = "daemon_restarted";
/// The reason given for sessions a stopping daemon ends.
pub const DAEMON_STOPPED: &str = "daemon_stopped";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub spec: SessionSpec,
    /// Seconds since the epoch.
    pub created_at: u64,
    /// `None` while running.
    pub ended: Option<Ended>,
    /// Set while the session is hibernated: its processes are saved under
    /// its directory (`hibernate/`) and no sandbox runs. Such a session
    /// outlives a daemon's restart.
    #[serde(default)]
    pub hibernated: Option<super::hibernate::Saved>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ended {
    pub reason: String,
    /// Seconds since the epoch.
    pub at: u64,
    /// The sandbox's own line when it ended by itself (`sandbox_exited`):
    /// which limit killed it (`ending.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The sessions' directory under `data_dir`.
pub fn sessions_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sessions")
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Record {
    /// Writes the record into `dir` (whole, through a rename).
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        let tmp = dir.join("session.json.tmp");
        let path = dir.join("session.json");
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every record under `data_dir`; those not ended are marked ended
    /// now (reason [`DAEMON_RESTARTED`]) and saved so. Unreadable records
    /// are skipped with a line on stderr.
    pub fn recover(data_dir: &Path) -> Vec<Record> {
        let Ok(entries) = std::fs::read_dir(sessions_dir(data_dir)) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let dir = entry.path();
            let path = dir.join("session.json");
            // A template's warm session never handed out: its sandbox
            // died with the last daemon, and it was nobody's yet.
            if dir.join(super::templates::WARM_FILE).exists() && !path.exists() {
                let _ = std::fs::remove_dir_all(&dir);
                continue;
            }
            let record = match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_slice::<Record>(&t).map_err(|e| e.to_string()))
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("supervisor: sessions: skipping {}: {e}", path.display());
                    continue;
                }
            };
            let mut record = record;
            if record.ended.is_none() && record.hibernated.is_none() {
                record.ended = Some(Ended {
                    reason: DAEMON_RESTARTED.into(),
                    at: now(),
                    message: None,
                });
                if let Err(e) = record.save(&dir) {
                    eprintln!("supervisor: sessions: {e}");
                }
            }
            for stale in [super::host::EXEC_SOCKET, super::host::READY_FILE] {
                let _ = std::fs::remove_file(dir.join(stale));
            }
            found.push(record);
        }
        found
    }
}
