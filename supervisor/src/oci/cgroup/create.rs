//! Creating a container's cgroup: where `cgroup_path.rs` places it, in
//! every hierarchy that has one of its controllers (or in the v2 one),
//! in the transient scope `systemd.rs` starts under `--systemd-cgroup`,
//! with the v2 controllers its limits need enabled above and beneath it;
//! and this process stepping back out of the directories systemd moved
//! it into.
//!
//! Owns: [`ContainerCgroup::create`] and
//! [`ContainerCgroup::create_rootless`]. Does not own: finding the
//! hierarchies (`hierarchy.rs`), who joins which, freezing or removal
//! (`cgroup.rs`), writing the limits (`resources.rs`).

use std::fs;
use std::path::{Path, PathBuf};

use super::hierarchy::{hierarchies, Hierarchy};
use super::{write, ContainerCgroup, V1_SANDBOX_ONLY, V2_MONITOR, V2_SANDBOX};
use crate::oci::cgroup_path::{placement, Placement};
use crate::oci::config::LinuxResources;
use crate::oci::systemd;

/// The v1 controllers a container uses.
const V1_CONTROLLERS: &[&str] = &["memory", "pids", "cpu", "cpuacct", "freezer"];

/// The v2 controllers a container's limits need, enabled above its directory.
const V2_CONTROLLERS: &[&str] = &["cpu", "memory", "pids"];

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
            Err(_) if !res.is_some_and(crate::oci::resources::has_limits) => Ok(ContainerCgroup::default()),
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
}

impl ContainerCgroup {
    /// Moves this process out of the container's directories it is in (a
    /// `create` that systemd moved into the container's scope, failing
    /// after that), into each hierarchy's root, so that removing them
    /// and stopping the unit spare it.
    pub(super) fn step_out(&self) {
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
