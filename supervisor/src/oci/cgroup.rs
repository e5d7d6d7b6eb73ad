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
//! Owns: creating the directories, who joins which,
//! freezing and thawing, listing its processes, removing it. Writing
//! `linux.resources` into it is `resources.rs`. Does not own the `supervisor run` cgroup
//! (`limits/cgroup.rs`, whose `remove_tree` is reused here).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::cgroup_path::{placement, Placement};
use super::config::LinuxResources;
use super::systemd;
use serde::{Deserialize, Serialize};

use sandbox::config::OutsideCgroup;
use sandbox::limits::cgroup::remove_tree;

/// The v1 controllers a container uses.
const V1_CONTROLLERS: &[&str] = &["memory", "pids", "cpu", "cpuacct", "freezer"];

/// The v1 controllers whose directory holds the sandbox alone (its init
/// and the guest's processes), not the anchor and monitor: the freezer
/// (see [`ContainerCgroup::join_monitor`]) and pids, whose limit is the
/// container's (runc's `--pids-limit 4` runs a shell and two children;
/// the monitor's threads must not use up the count).
const V1_SANDBOX_ONLY: &[&str] = &["freezer", "pids"];

/// How long pause and resume wait for the kernel to finish freezing or
/// thawing (it was about a second, 500 reads 2 ms apart).
const FREEZE_BOUND: Duration = Duration::from_secs(10);

/// The v2 controllers a container's limits need, enabled above its directory.
const V2_CONTROLLERS: &[&str] = &["cpu", "memory", "pids"];

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

/// One cgroup hierarchy this process is in: its controllers (empty: v2),
/// where it is mounted with which root, and our path in it.
struct Hierarchy {
    controllers: Vec<String>,
    mount_point: PathBuf,
    mount_root: PathBuf,
    own: PathBuf,
}

impl Hierarchy {
    /// The directory of cgroup `path` (a path from the hierarchy's root).
    fn dir(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.mount_root).ok()?;
        Some(self.mount_point.join(rel))
    }
}

fn hierarchies() -> Vec<Hierarchy> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mounts: Vec<(String, PathBuf, String, Vec<String>)> = mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let mut r = right.split(' ');
            let fstype = r.next()?.to_string();
            let _source = r.next()?;
            let opts = r.next()?.split(',').map(str::to_string).collect();
            Some((
                f.get(3)?.to_string(),
                PathBuf::from(f.get(4)?),
                fstype,
                opts,
            ))
        })
        .collect();
    let mut out = Vec::new();
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let controllers: Vec<String> = ctrls
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        let mount = mounts
            .iter()
            .find(|(_, _, fstype, opts)| match controllers.is_empty() {
                true => fstype == "cgroup2",
                false => fstype == "cgroup" && controllers.iter().all(|c| opts.contains(c)),
            });
        if let Some((root, point, _, _)) = mount {
            out.push(Hierarchy {
                controllers,
                mount_point: point.clone(),
                mount_root: PathBuf::from(root),
                own: PathBuf::from(path),
            });
        }
    }
    out
}

impl ContainerCgroup {
    /// Creates the container's cgroup where `cgroups_path` places it
    /// (`cgroup_path.rs`), in every hierarchy that has one of our
    /// controllers (v2: the unified one, when no v1 hierarchy does); with
    /// `systemd` (`--systemd-cgroup`) and systemd running, in the
    /// transient scope it starts for the container (`systemd.rs`).
    pub fn create(
        cgroups_path: Option<&str>,
        id: &str,
        systemd: bool,
    ) -> Result<ContainerCgroup, String> {
        let mut cg = ContainerCgroup::default();
        if let Err(e) = cg.make_all(cgroups_path, id, systemd) {
            cg.remove();
            return Err(e);
        }
        Ok(cg)
    }

    /// [`Self::create`] for a rootless runtime, as runc: where it may not
    /// create cgroups (a v1 host delegates none to a user), the container
    /// goes without one, unless `res` asks for a limit, which could not
    /// be kept.
    pub fn create_rootless(
        cgroups_path: Option<&str>,
        id: &str,
        res: Option<&LinuxResources>,
    ) -> Result<ContainerCgroup, String> {
        match Self::create(cgroups_path, id, false) {
            Ok(cg) => Ok(cg),
            Err(_) if !res.is_some_and(super::resources::has_limits) => Ok(ContainerCgroup::default()),
            Err(e) => Err(format!(
                "{e} (a rootless runtime has no cgroup of its own to keep the container's resource limits in)"
            )),
        }
    }

    fn make_all(
        &mut self,
        cgroups_path: Option<&str>,
        id: &str,
        systemd: bool,
    ) -> Result<(), String> {
        let (mut place, unit) = placement(cgroups_path, id, systemd)?;
        let before = hierarchies();
        let mut in_scope = false;
        if let Some(unit) = unit.filter(|u| u.is_scope() && systemd::running()) {
            self.systemd_unit = Some(unit.name.clone());
            place = Placement::FromRoot(systemd::start_scope(&unit)?);
            in_scope = true;
        }
        let all = hierarchies();
        for h in &all {
            let used = h
                .controllers
                .iter()
                .any(|c| V1_CONTROLLERS.contains(&c.as_str()));
            if !used {
                continue;
            }
            let dir = make(h, &place)?;
            let alone = (h.controllers.iter()).any(|c| V1_SANDBOX_ONLY.contains(&c.as_str()));
            if in_scope && alone {
                // systemd moved us into the scope's directory here too: back
                // out, so that the monitor `create` forks stays out of it.
                leave_for(&before, h)?;
            }
            self.v1.push((h.controllers.clone(), dir));
        }
        if self.v1.is_empty() {
            if let Some(h) = all.iter().find(|h| h.controllers.is_empty()) {
                let dir = make(h, &place)?;
                self.v2 = Some(dir.clone());
                for leaf in [V2_MONITOR, V2_SANDBOX] {
                    fs::create_dir_all(dir.join(leaf))
                        .map_err(|e| format!("creating cgroup {}/{leaf}: {e}", dir.display()))?;
                }
                if in_scope {
                    // A process may sit only in a leaf once controllers
                    // are enabled beneath the scope.
                    write(
                        &dir.join(V2_MONITOR),
                        "cgroup.procs",
                        &std::process::id().to_string(),
                    )?;
                }
                enable_v2_leaf_controllers(&dir)?;
            }
        }
        Ok(())
    }

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

impl ContainerCgroup {
    /// Moves this process out of the container's directories it is in (a
    /// `create` that systemd moved into the container's scope, failing
    /// after that), into each hierarchy's root, so that removing them
    /// and stopping the unit spare it.
    fn step_out(&self) {
        let dirs = self.dirs();
        for h in hierarchies() {
            let inside = h
                .dir(&h.own)
                .is_some_and(|d| dirs.iter().any(|c| d.starts_with(c)));
            if inside {
                let _ = write(
                    &h.mount_point,
                    "cgroup.procs",
                    &std::process::id().to_string(),
                );
            }
        }
    }
}

/// The v2 controllers enabled beneath the container's directory, so that
/// its `sandbox` leaf has limits of its own: `pids.max` (the container's
/// count, not the monitor's threads) and `memory.max` (the limit where
/// the engine's shim, which reads the anchor's cgroup, looks for it).
const V2_LEAF_CONTROLLERS: &[&str] = &["pids", "memory"];

/// Enables [`V2_LEAF_CONTROLLERS`] beneath the container's directory
/// `dir` (still empty of processes), each where available (a hybrid host
/// whose pids controller is v1's has none to enable).
fn enable_v2_leaf_controllers(dir: &Path) -> Result<(), String> {
    let available = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let available: Vec<&str> = available.split_whitespace().collect();
    V2_LEAF_CONTROLLERS
        .iter()
        .filter(|c| available.contains(c))
        .try_for_each(|c| write(dir, "cgroup.subtree_control", &format!("+{c}")))
}

/// The pids in `dir`'s `cgroup.procs`.
fn procs(dir: &Path) -> Vec<i32> {
    let text = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Creates the container's directory in hierarchy `h` at `place` (v2:
/// with the memory, pids and cpu controllers enabled in every directory
/// above it that has them available, as runc does, so that the limits'
/// files exist in it).
fn make(h: &Hierarchy, place: &Placement) -> Result<PathBuf, String> {
    let dir = match place {
        Placement::FromRoot(p) => h.dir(p).unwrap_or_else(|| {
            let rel = p.strip_prefix("/").unwrap_or(p);
            h.mount_point.join(rel)
        }),
        Placement::BeneathOwn(rel) => h
            .dir(&h.own.join(rel))
            .ok_or_else(|| format!("cgroup {}: outside the mounted hierarchy", rel.display()))?,
    };
    fs::create_dir_all(&dir).map_err(|e| format!("creating cgroup {}: {e}", dir.display()))?;
    if h.controllers.is_empty() {
        enable_v2_above(&h.mount_point, &dir);
    }
    Ok(dir)
}

/// Enables the controllers a container's limits need in the
/// `cgroup.subtree_control` of every directory from `mount_point` down
/// to `dir`'s parent, where available and not yet enabled. Best effort:
/// a directory that holds processes refuses (the engine's own parent
/// never does); a limit whose file is then missing fails with its name.
fn enable_v2_above(mount_point: &Path, dir: &Path) {
    let Ok(rel) = dir.strip_prefix(mount_point) else {
        return;
    };
    let mut at = mount_point.to_path_buf();
    for part in rel.components() {
        let available = fs::read_to_string(at.join("cgroup.controllers")).unwrap_or_default();
        let enabled = fs::read_to_string(at.join("cgroup.subtree_control")).unwrap_or_default();
        for c in V2_CONTROLLERS {
            let has = |text: &str| text.split_whitespace().any(|x| x == *c);
            if has(&available) && !has(&enabled) {
                let _ = write(&at, "cgroup.subtree_control", &format!("+{c}"));
            }
        }
        at.push(part);
    }
}

/// Moves this process, which systemd moved into the container's scope
/// in v1 hierarchy `h`, back into the directory it was in before
/// (`before`, as read then).
fn leave_for(before: &[Hierarchy], h: &Hierarchy) -> Result<(), String> {
    let Some(old) = before.iter().find(|b| b.controllers == h.controllers) else {
        return Ok(());
    };
    match old.dir(&old.own) {
        Some(dir) => write(&dir, "cgroup.procs", &std::process::id().to_string()),
        None => Ok(()),
    }
}

pub(super) fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = dir.join(file);
    fs::write(&path, value).map_err(|e: io::Error| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_alone_is_in_the_directory_pause_freezes() {
        let v2 = ContainerCgroup {
            v1: Vec::new(),
            v2: Some(PathBuf::from("/u/c1")),
            systemd_unit: None,
        };
        // Parents first: removal goes in reverse, leaves before the container's.
        let dirs = ["/u/c1", "/u/c1/monitor", "/u/c1/sandbox"].map(PathBuf::from);
        assert_eq!(v2.dirs(), dirs);
        assert_eq!(v2.sandbox_dir(), Some(PathBuf::from("/u/c1/sandbox")));
        // The pids limit counts the sandbox's leaf, not the monitor's.
        assert_eq!(v2.pids_dir(), Some(PathBuf::from("/u/c1/sandbox")));
        let v1 = ContainerCgroup {
            v1: vec![
                (vec!["memory".into()], PathBuf::from("/m/c1")),
                (vec!["freezer".into()], PathBuf::from("/f/c1")),
            ],
            v2: None,
            systemd_unit: None,
        };
        assert_eq!(v1.sandbox_dir(), Some(PathBuf::from("/f/c1")));
        let no_freezer = ContainerCgroup {
            v1: vec![(vec!["memory".into()], PathBuf::from("/m/c1"))],
            v2: None,
            systemd_unit: None,
        };
        assert_eq!(no_freezer.sandbox_dir(), None);
    }

    #[test]
    fn under_v1_the_monitor_stays_out_of_freezer_and_pids() {
        let v1 = ContainerCgroup {
            v1: vec![
                (vec!["memory".into()], PathBuf::from("/m/c1")),
                (vec!["pids".into()], PathBuf::from("/p/c1")),
                (vec!["cpu".into(), "cpuacct".into()], PathBuf::from("/c/c1")),
                (vec!["freezer".into()], PathBuf::from("/f/c1")),
            ],
            v2: None,
            systemd_unit: None,
        };
        assert_eq!(
            v1.v1_sandbox_only(),
            [Path::new("/p/c1"), Path::new("/f/c1")]
        );
        let v2 = ContainerCgroup {
            v1: Vec::new(),
            v2: Some(PathBuf::from("/u/c1")),
            systemd_unit: None,
        };
        assert!(v2.v1_sandbox_only().is_empty());
    }
}
