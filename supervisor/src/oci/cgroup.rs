//! A container's cgroup: the one the engine names in
//! `linux.cgroupsPath` (Docker's `docker stats` and containerd's OOM
//! events read it), created in each v1 hierarchy of memory, pids, cpu,
//! cpuacct and freezer (or in the v2 hierarchy), wherever the engine
//! placed it (`cgroup_path.rs`; under `--systemd-cgroup` in the systemd
//! scope `systemd.rs` starts for it). The monitor joins
//! it before it launches the sandbox, so everything in the sandbox is in
//! it too — except the directories that hold the sandbox alone, which
//! its init joins itself: the one pause freezes (v1: the freezer
//! hierarchy; v2: the `sandbox` leaf beside the monitor's `monitor`
//! leaf) and the pids limit's (v1: the pids hierarchy, which the anchor
//! joins too, for `docker stats`, the limit raised by those two; v2: the
//! `sandbox` leaf, which the anchor joins too, for the shim's OOM events
//! and `docker stats`, the pids controller enabled beneath the container's
//! directory, the limit raised by those two), so that `pids.max`
//! counts the container's processes, not the monitor's threads, as
//! runc's does.
//!
//! Owns: the container's directories once made, who joins which,
//! freezing and thawing, listing its processes, removing it. Creating
//! the directories is `cgroup/create.rs`, finding the hierarchies this
//! process is in `cgroup/hierarchy.rs`; writing `linux.resources` into
//! it is `resources.rs`. Does not own the `supervisor run` cgroup
//! (`limits/cgroup.rs`, whose `remove_tree` is reused here).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::systemd;
use serde::{Deserialize, Serialize};

use sandbox::config::OutsideCgroup;
use sandbox::limits::cgroup::remove_tree;

mod create;
mod hierarchy;

/// The v1 controllers whose directory holds the sandbox alone (its init
/// and the guest's processes), not the anchor and monitor: the freezer
/// (see [`ContainerCgroup::join_monitor`]) and pids, whose limit is the
/// container's (runc's `--pids-limit 4` runs a shell and two children;
/// the monitor's threads must not use up the count).
const V1_SANDBOX_ONLY: &[&str] = &["freezer", "pids"];

/// How long pause and resume wait for the kernel to finish freezing or
/// thawing (it was about a second, 500 reads 2 ms apart).
const FREEZE_BOUND: Duration = Duration::from_secs(10);

/// The v2 leaves beneath the container's directory: the monitor's, and
/// the sandbox's, which pause freezes (a process may sit only in a
/// leaf once controllers are enabled, and the monitor must not freeze).
const V2_MONITOR: &str = "monitor";
const V2_SANDBOX: &str = "sandbox";

/// The container's cgroup directories.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ContainerCgroup {
    /// (controllers of the hierarchy, directory), v1.
    pub v1: Vec<(Vec<String>, PathBuf)>,
    /// The directory in the v2 hierarchy, when the host uses v2 for these controllers.
    pub v2: Option<PathBuf>,
    /// The systemd scope that holds them (`--systemd-cgroup`), stopped at removal.
    #[serde(default)]
    pub systemd_unit: Option<String>,
}

impl ContainerCgroup {
    /// Every directory, parents before children (v2: the container's
    /// and its two leaves).
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.v1.iter().map(|(_, d)| d.clone()).collect();
        if let Some(d) = &self.v2 {
            dirs.extend([d.clone(), d.join(V2_MONITOR), d.join(V2_SANDBOX)]);
        }
        dirs
    }

    /// The directory of v1 controller `name` (or the v2 directory).
    pub(super) fn dir_of(&self, name: &str) -> Option<&Path> {
        match &self.v2 {
            Some(d) => Some(d),
            None => self
                .v1
                .iter()
                .find(|(c, _)| c.iter().any(|c| c == name))
                .map(|(_, d)| d.as_path()),
        }
    }

    /// The directory whose `pids.max` is the container's pids limit:
    /// v1's pids directory (the anchor, init and the guest's), the v2
    /// `sandbox` leaf (the same; the monitor's leaf beside it is not
    /// counted).
    pub(super) fn pids_dir(&self) -> Option<PathBuf> {
        match &self.v2 {
            Some(d) => Some(d.join(V2_SANDBOX)),
            None => self.dir_of("pids").map(Path::to_path_buf),
        }
    }

    /// The directory that holds the sandbox alone, and that pause
    /// freezes: the v1 freezer's, or the v2 `sandbox` leaf.
    fn sandbox_dir(&self) -> Option<PathBuf> {
        match &self.v2 {
            Some(d) => Some(d.join(V2_SANDBOX)),
            None => self.dir_of("freezer").map(Path::to_path_buf),
        }
    }

    /// The v1 directories that hold the sandbox alone
    /// ([`V1_SANDBOX_ONLY`]); none under v2.
    fn v1_sandbox_only(&self) -> Vec<&Path> {
        self.v1
            .iter()
            .filter(|(c, _)| c.iter().any(|c| V1_SANDBOX_ONLY.contains(&c.as_str())))
            .map(|(_, d)| d.as_path())
            .collect()
    }

    /// Moves the monitor, process `pid`, into every directory but those
    /// of the sandbox alone (v1: every hierarchy but the freezer and
    /// pids; v2: the `monitor` leaf): the monitor serves the guest's
    /// trapped calls, and a guest thread waiting for an answer cannot
    /// freeze while its server is frozen (the freezer would stay
    /// FREEZING for ever); and the pids limit is the container's.
    /// The sandbox joins its own directories itself ([`Self::sandbox_join_files`]).
    pub fn join_monitor(&self, pid: i32) -> Result<(), String> {
        let dirs: Vec<PathBuf> = match &self.v2 {
            Some(d) => vec![d.join(V2_MONITOR)],
            None => {
                let alone = self.v1_sandbox_only();
                let mut dirs = self.dirs();
                dirs.retain(|d| !alone.contains(&d.as_path()));
                dirs
            }
        };
        for dir in dirs {
            write(&dir, "cgroup.procs", &pid.to_string())?;
        }
        Ok(())
    }

    /// Moves the anchor, process `pid`, once it has forked the monitor
    /// (which stays out), where the engine's shim must find the
    /// container: the v1 pids directory, or the v2 `sandbox` leaf. The
    /// shim takes the container's cgroup from the anchor's pid: under v2
    /// it watches that directory's `memory.events` for OOM kills (which
    /// happen to the guest, in the `sandbox` leaf, and count there and
    /// above, not in the sibling `monitor` leaf) and reads its limits.
    pub fn join_anchor_pids(&self, pid: i32) -> Result<(), String> {
        match &self.v2 {
            Some(d) => write(&d.join(V2_SANDBOX), "cgroup.procs", &pid.to_string()),
            None => (self.v1.iter())
                .filter(|(c, _)| c.iter().any(|c| c == "pids"))
                .try_for_each(|(_, d)| write(d, "cgroup.procs", &pid.to_string())),
        }
    }

    /// The cgroup as the engine reads it: where the guest's limits are
    /// read from (`procfs::view_of`), and the files by which
    /// the sandbox's init joins the directories of the sandbox alone (v1
    /// `tasks` of the freezer and pids, v2 the `sandbox` leaf's
    /// `cgroup.procs`: the monitor stays out of them).
    pub fn outside(&self) -> OutsideCgroup {
        let join: Vec<PathBuf> = match &self.v2 {
            Some(d) => vec![d.join(V2_SANDBOX).join("cgroup.procs")],
            None => (self.v1_sandbox_only().iter())
                .map(|d| d.join("tasks"))
                .collect(),
        };
        OutsideCgroup {
            v2: self.v2.is_some(),
            memory: self.dir_of("memory").map(Path::to_path_buf),
            cpu: self.dir_of("cpu").map(Path::to_path_buf),
            pids: self.pids_dir(),
            pids_overhead: self.pids_overhead().unsigned_abs(),
            join,
        }
    }

    /// Freezes (`true`) or thaws every process, and waits until the
    /// kernel says it is done: at most [`FREEZE_BOUND`] (every task must
    /// be scheduled once to freeze, which a loaded machine delays).
    pub fn set_frozen(&self, frozen: bool) -> Result<(), String> {
        let Some(dir) = self.sandbox_dir() else {
            return Err("no freezer cgroup for this container".into());
        };
        let (file, value) = match (self.v2.is_some(), frozen) {
            (true, _) => ("cgroup.freeze", if frozen { "1" } else { "0" }),
            (false, true) => ("freezer.state", "FROZEN"),
            (false, false) => ("freezer.state", "THAWED"),
        };
        write(&dir, file, value)?;
        let end = Instant::now() + FREEZE_BOUND;
        while Instant::now() < end {
            if self.is_frozen() == frozen {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(2));
        }
        Err(format!(
            "{}: the kernel did not finish",
            dir.join(file).display()
        ))
    }

    pub fn is_frozen(&self) -> bool {
        let read = |f: &str| match self.sandbox_dir() {
            Some(d) => fs::read_to_string(d.join(f)).unwrap_or_default(),
            None => String::new(),
        };
        match self.v2.is_some() {
            true => read("cgroup.events").lines().any(|l| l == "frozen 1"),
            false => read("freezer.state").trim() == "FROZEN",
        }
    }

    /// The host pids of every process in the cgroup (the monitor's too).
    pub fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self.dirs().iter().flat_map(|d| procs(d)).collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// The host pids of the sandbox's processes (its init and the
    /// guest's), without the monitor, which serves them from outside;
    /// `None` without a directory of the sandbox's own.
    pub fn sandbox_pids(&self) -> Option<Vec<i32>> {
        self.sandbox_dir().map(|d| procs(&d))
    }

    /// Kills what is left (thawing it first), removes every directory,
    /// and stops the container's systemd unit, if it has one.
    pub fn remove(&self) {
        if self.is_frozen() {
            let _ = self.set_frozen(false);
        }
        if self.systemd_unit.is_some() {
            self.step_out();
        }
        remove_tree(&self.dirs());
        if let Some(unit) = &self.systemd_unit {
            systemd::stop_unit(unit);
        }
    }
}

/// The pids in `dir`'s `cgroup.procs`.
fn procs(dir: &Path) -> Vec<i32> {
    let text = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

pub(super) fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = dir.join(file);
    fs::write(&path, value).map_err(|e: io::Error| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests;
