//! Where a container's cgroup goes, as runc places it from
//! `linux.cgroupsPath`: an absolute path is a path from the root of each
//! hierarchy (Docker's cgroupfs driver: `/docker/<id>`; the kubelet's:
//! `/kubepods/...`), a relative one lies beneath the runtime's own cgroup,
//! none is `<id>` beneath the runtime's own; and systemd's form
//! `slice:prefix:name` (the systemd cgroup driver, with
//! `--systemd-cgroup`) is the unit `prefix-name.scope` in that slice,
//! whose directory is the slice expanded as systemd does
//! (`a-b.slice` is `/a.slice/a-b.slice`) followed by the unit's name.
//! The runtime takes whatever path the engine chose: the engine owns
//! where its containers' cgroups are.
//!
//! Owns the parsing and the expansion rules (runc's
//! `libcontainer/cgroups/systemd` ones: `ExpandSlice`, the unit's name,
//! `system.slice` for an empty slice, `:runc:<id>` for no path).
//! Does not own creating the directories (`cgroup.rs`) or talking to
//! systemd (`systemd.rs`).

use std::path::{Component, Path, PathBuf};

/// The slice of a systemd form whose slice part is empty.
const DEFAULT_SLICE: &str = "system.slice";

/// The scope prefix when the systemd driver has no cgroupsPath.
const DEFAULT_PREFIX: &str = "runc";

/// Where the container's cgroup goes in each hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A path from the hierarchy's root (starts with `/`).
    FromRoot(PathBuf),
    /// A path beneath the runtime's own cgroup in that hierarchy.
    BeneathOwn(PathBuf),
}

/// A systemd unit for the container: its name and the slice it goes in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemdUnit {
    /// `prefix-name.scope` (or a `.slice` the engine named).
    pub name: String,
    /// The parent slice, e.g. `system.slice`.
    pub slice: String,
}

impl SystemdUnit {
    /// Whether the unit is a scope (systemd then needs a process for it).
    pub fn is_scope(&self) -> bool {
        self.name.ends_with(".scope")
    }
}

/// The container's placement for `cgroups_path` (None or empty: the
/// default) of container `id`; with `systemd` (`--systemd-cgroup`) the
/// path must be systemd's form. Without `--systemd-cgroup` a path of
/// systemd's form (three `:`-separated parts, no `/` in the slice) still
/// goes where systemd would put it, with no unit.
pub fn placement(
    cgroups_path: Option<&str>,
    id: &str,
    systemd: bool,
) -> Result<(Placement, Option<SystemdUnit>), String> {
    let path = cgroups_path.filter(|p| !p.is_empty());
    if systemd {
        let default = format!(":{DEFAULT_PREFIX}:{id}");
        let unit = systemd_unit(path.unwrap_or(&default))?;
        let dir = systemd_dir(&unit)?;
        return Ok((Placement::FromRoot(dir), Some(unit)));
    }
    match path {
        None => Ok((Placement::BeneathOwn(PathBuf::from(id)), None)),
        Some(p) if looks_like_systemd(p) => {
            let unit = systemd_unit(p)?;
            Ok((Placement::FromRoot(systemd_dir(&unit)?), None))
        }
        Some(p) if p.starts_with('/') => Ok((Placement::FromRoot(clean(p)), None)),
        Some(p) => {
            let rel = clean(&format!("/{p}"));
            let rel = rel.strip_prefix("/").unwrap_or(&rel).to_path_buf();
            match rel.as_os_str().is_empty() {
                true => Ok((Placement::BeneathOwn(PathBuf::from(id)), None)),
                false => Ok((Placement::BeneathOwn(rel), None)),
            }
        }
    }
}

/// `slice:prefix:name` with a slice of systemd's (no `/`).
fn looks_like_systemd(p: &str) -> bool {
    let parts: Vec<&str> = p.split(':').collect();
    parts.len() == 3 && !parts[0].contains('/')
}

/// The unit of systemd's form `slice:prefix:name`, as runc reads it.
fn systemd_unit(path: &str) -> Result<SystemdUnit, String> {
    let parts: Vec<&str> = path.split(':').collect();
    let [slice, prefix, name] = parts[..] else {
        return Err(format!(
            "cgroupsPath {path:?}: expected \"slice:prefix:name\" for systemd cgroups"
        ));
    };
    if name.is_empty() || name.contains('/') || prefix.contains('/') {
        return Err(format!("cgroupsPath {path:?}: invalid unit name"));
    }
    let slice = match slice {
        "" => DEFAULT_SLICE.to_string(),
        s => s.to_string(),
    };
    let name = match (name.ends_with(".slice"), prefix) {
        (true, _) => name.to_string(),
        (false, "") => format!("{name}.scope"),
        (false, p) => format!("{p}-{name}.scope"),
    };
    Ok(SystemdUnit { name, slice })
}

/// The unit's directory from the hierarchy's root: its slice expanded,
/// then its name.
fn systemd_dir(unit: &SystemdUnit) -> Result<PathBuf, String> {
    Ok(expand_slice(&unit.slice)?.join(&unit.name))
}

/// systemd's path of slice `slice`: `-.slice` is the root, `a-b.slice`
/// is `/a.slice/a-b.slice`; a name without `.slice`, with `/`, or with
/// an empty dash-separated part (`-a.slice`, `a--b.slice`) is invalid.
pub fn expand_slice(slice: &str) -> Result<PathBuf, String> {
    let invalid = || format!("invalid slice name: {slice}");
    let base = slice.strip_suffix(".slice").ok_or_else(invalid)?;
    if base.is_empty() || slice.contains('/') {
        return Err(invalid());
    }
    if base == "-" {
        return Ok(PathBuf::from("/"));
    }
    let mut path = PathBuf::from("/");
    let mut prefix = String::new();
    for part in base.split('-') {
        if part.is_empty() {
            return Err(invalid());
        }
        path.push(format!("{prefix}{part}.slice"));
        prefix.push_str(part);
        prefix.push('-');
    }
    Ok(path)
}

/// An absolute path cleaned lexically (`.` dropped, `..` taking the
/// previous part off, never past the root), as runc's `CleanPath`.
fn clean(path: &str) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in Path::new(path).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(path: Option<&str>, systemd: bool) -> (Placement, Option<SystemdUnit>) {
        placement(path, "c1", systemd).expect("placement")
    }

    #[test]
    fn cgroupfs_paths_are_from_the_root_or_beneath_our_own() {
        let from_root = |p: &str| Placement::FromRoot(PathBuf::from(p));
        let beneath = |p: &str| Placement::BeneathOwn(PathBuf::from(p));
        assert_eq!(place(None, false), (beneath("c1"), None));
        assert_eq!(place(Some(""), false), (beneath("c1"), None));
        assert_eq!(place(Some("/docker/c1"), false).0, from_root("/docker/c1"));
        assert_eq!(place(Some("docker/c1"), false).0, beneath("docker/c1"));
        // Cleaned as runc cleans: never above the root or our own.
        assert_eq!(place(Some("/a/../../b/./c"), false).0, from_root("/b/c"));
        assert_eq!(place(Some("../x"), false).0, beneath("x"));
        assert_eq!(place(Some(".."), false).0, beneath("c1"));
    }

    #[test]
    fn systemd_paths_are_the_units_directory() {
        let (p, unit) = place(Some("system.slice:docker:c1"), true);
        assert_eq!(
            p,
            Placement::FromRoot(PathBuf::from("/system.slice/docker-c1.scope"))
        );
        let unit = unit.expect("a unit");
        assert_eq!(unit.name, "docker-c1.scope");
        assert_eq!(unit.slice, "system.slice");
        assert!(unit.is_scope());
        // The kubelet's: a pod's slice nested in its QoS class's.
        let (p, _) = place(
            Some("kubepods-burstable-pod12.slice:cri-containerd:c1"),
            true,
        );
        assert_eq!(
            p,
            Placement::FromRoot(PathBuf::from(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice/cri-containerd-c1.scope"
            ))
        );
        // No path: ":runc:<id>"; an empty slice is system.slice.
        assert_eq!(
            place(None, true).0,
            Placement::FromRoot(PathBuf::from("/system.slice/runc-c1.scope"))
        );
        assert_eq!(place(Some("::c1"), true).1.expect("unit").name, "c1.scope");
        assert_eq!(
            place(Some("-.slice:p:c1"), true).0,
            Placement::FromRoot(PathBuf::from("/p-c1.scope"))
        );
        // Without --systemd-cgroup: the same directory, no unit.
        let (p, unit) = place(Some("system.slice:docker:c1"), false);
        assert_eq!(
            p,
            Placement::FromRoot(PathBuf::from("/system.slice/docker-c1.scope"))
        );
        assert!(unit.is_none());
        for bad in [
            "/docker/c1",
            "a:b",
            "x.slice:p:",
            "bad:p:c1",
            "a--b.slice:p:c1",
        ] {
            assert!(placement(Some(bad), "c1", true).is_err(), "{bad}");
        }
    }

    #[test]
    fn slices_expand_as_systemd_expands_them() {
        assert_eq!(expand_slice("-.slice").unwrap(), PathBuf::from("/"));
        assert_eq!(
            expand_slice("user-1000.slice").unwrap(),
            PathBuf::from("/user.slice/user-1000.slice")
        );
        for bad in ["system", ".slice", "-a.slice", "a-.slice", "a/b.slice"] {
            assert!(expand_slice(bad).is_err(), "{bad}");
        }
    }
}
