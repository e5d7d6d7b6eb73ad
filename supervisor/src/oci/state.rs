//! The state directory: one directory per container beneath `--root`
//! (`<root>/<id>/`), holding `state.json` (our record of the container),
//! the `start` FIFO the monitor waits on, and the monitor's own log.
//!
//! Owns: container ids (validated: they become path names), the record's
//! fields, loading and saving it atomically, and the status derived from
//! it (the monitor's liveness, the freezer, whether `start` ran), and the
//! OCI state JSON that `state` prints and hooks read. Does not own the
//! monitor or the cgroup.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cgroup::ContainerCgroup;

/// The OCI runtime-spec version our state and features report.
pub const OCI_VERSION: &str = "1.0.2";

/// The lifecycle states of the runtime spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Created,
    Running,
    Paused,
    Stopped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
        }
    }
}

/// What the runtime remembers of one container.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    /// The anchor (`anchor.rs`): the container's process as the engine
    /// sees it (`--pid-file`, `state`), the monitor's parent.
    pub pid: i32,
    /// The anchor's start time (/proc/<pid>/stat field 22): a pid the
    /// kernel reused for another process is not our anchor.
    pub pid_start: u64,
    /// The host pid of the sandbox's init (pid 1 of its pid namespace),
    /// where `exec` opens its terminals; 0 in records written before it
    /// was kept.
    #[serde(default)]
    pub init_pid: i32,
    pub created: String,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `start` ran.
    #[serde(default)]
    pub started: bool,
    pub cgroup: ContainerCgroup,
    /// The bundle's poststart and poststop hooks (run by `start`, `delete`).
    #[serde(default)]
    pub poststart: Vec<super::config::Hook>,
    #[serde(default)]
    pub poststop: Vec<super::config::Hook>,
    /// The loopback the container's guest uses (`loopback.rs`): its
    /// own, or the one it shares with the container whose network
    /// namespace it joined.
    #[serde(default)]
    pub loopback: Option<super::loopback::Loopback>,
    /// The runtime's own work directory beside an engine's overlay
    /// layers (`launch/engine_overlay.rs`, `own_workdir`), which
    /// `delete` removes.
    #[serde(default)]
    pub overlay_workdir: Option<PathBuf>,
}

/// A container id that is safe as a directory name.
pub fn check_id(id: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "_+-.".contains(c);
    if id.is_empty() || id.len() > 1024 || id == "." || id == ".." || !id.chars().all(ok_char) {
        return Err(format!("invalid container id {id:?}"));
    }
    Ok(())
}

/// `<root>/<id>`.
pub fn container_dir(root: &Path, id: &str) -> Result<PathBuf, String> {
    check_id(id)?;
    Ok(root.join(id))
}

impl Record {
    /// The record of `id`; `Ok(None)` when there is no such container.
    pub fn load(root: &Path, id: &str) -> Result<Option<Record>, String> {
        let path = container_dir(root, id)?.join("state.json");
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The record of `id`, or the error runc gives for a missing one.
    pub fn require(root: &Path, id: &str) -> Result<Record, String> {
        Record::load(root, id)?.ok_or_else(|| format!("container {id} does not exist"))
    }

    /// Writes the record (a new file renamed over the old one).
    pub fn save(&self, root: &Path) -> Result<(), String> {
        let dir = container_dir(root, &self.id)?;
        let tmp = dir.join("state.json.tmp");
        let text = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        fs::write(&tmp, text)
            .and_then(|_| fs::rename(&tmp, dir.join("state.json")))
            .map_err(|e| format!("saving the state of {}: {e}", self.id))
    }

    /// Whether the monitor still runs (not gone, not a zombie, not a
    /// reused pid).
    pub fn monitor_alive(&self) -> bool {
        matches!(proc_stat(self.pid), Some((state, start)) if state != 'Z' && state != 'X' && start == self.pid_start)
    }

    pub fn status(&self) -> Status {
        if !self.monitor_alive() {
            Status::Stopped
        } else if self.cgroup.is_frozen() {
            Status::Paused
        } else if self.started {
            Status::Running
        } else {
            Status::Created
        }
    }

    /// The runtime spec's state, as `state` prints it and hooks read it.
    pub fn oci_state(&self) -> serde_json::Value {
        let status = self.status();
        let pid = if status == Status::Stopped {
            0
        } else {
            self.pid
        };
        serde_json::json!({
            "ociVersion": OCI_VERSION,
            "id": self.id,
            "pid": pid,
            "status": status.as_str(),
            "bundle": self.bundle,
            "rootfs": self.rootfs,
            "created": self.created,
            "owner": "",
            "annotations": self.annotations,
        })
    }
}

/// (state letter, start time in clock ticks) of process `pid`.
pub fn proc_stat(pid: i32) -> Option<(char, u64)> {
    if pid <= 0 {
        return None;
    }
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let line = procfs::StatLine::parse(&text)?;
    Some((line.state()?, line.number(22)?))
}

/// Every container id under `root`, sorted.
pub fn list_ids(root: &Path) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().join("state.json").is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_are_not_plain_names_are_refused() {
        for bad in ["", ".", "..", "a/b", "../x", "a b", "x\0"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        for good in ["abc", "0123456789abcdef", "my-container_1.2+x"] {
            assert!(check_id(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn our_own_stat_is_read() {
        let (state, start) = proc_stat(std::process::id() as i32).expect("own stat");
        assert!(state == 'R' || state == 'S');
        assert!(start > 0);
        assert!(proc_stat(0).is_none());
    }
}
