//! The cgroup hierarchies this process is in, as `/proc/self/cgroup`
//! and `/proc/self/mountinfo` tell: each one's controllers (none: v2),
//! where it is mounted with which root, and our path in it.
//!
//! Owns: finding them and turning a cgroup path into a directory. Does
//! not own: creating the container's directories in them
//! (`create.rs`), or the `supervisor run` cgroup's own finding
//! (`limits/cgroup.rs`).

use std::fs;
use std::path::{Path, PathBuf};

/// One cgroup hierarchy this process is in: its controllers (empty: v2),
/// where it is mounted with which root, and our path in it.
pub(super) struct Hierarchy {
    pub(super) controllers: Vec<String>,
    pub(super) mount_point: PathBuf,
    pub(super) mount_root: PathBuf,
    pub(super) own: PathBuf,
}

impl Hierarchy {
    /// The directory of cgroup `path` (a path from the hierarchy's root).
    pub(super) fn dir(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.mount_root).ok()?;
        Some(self.mount_point.join(rel))
    }
}

/// Every hierarchy this process is in that is mounted here.
pub(super) fn hierarchies() -> Vec<Hierarchy> {
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
