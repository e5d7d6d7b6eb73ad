//! The plan of the guest's view: plain data computed in the supervisor
//! before the sandbox exists, from the launch config and a look at the
//! host. `view.rs` carries it out inside the new mount namespace.
//!
//! Owns: deciding what the view contains (the host's directories or the
//! `--rootfs` tree, which /etc entries to hide, the sandbox's /etc files
//! (their text is `etc.rs`'s), what
//! /sys/devices/system/cpu says, whether the host's current directory is
//! bound, the user's mounts in order, the `--mask` paths) and
//! checking that the user's host paths exist. Does not own: mounting.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::etc;
use nix::errno::Errno;
use procfs::SysCpu;
use vfs::mounts::{MountKind, MountSpec, HOST_DIRS, RESERVED};

/// Everything `view::build` needs, decided up front.
#[derive(Clone, Debug, Default)]
pub struct ViewPlan {
    /// Size of the writable layer (tmpfs) in bytes.
    pub layer_size: u64,
    /// `--rootfs`: the tree (canonical, a directory) that is the lower
    /// layer of `/` instead of the host's directories.
    pub rootfs: Option<PathBuf>,
    /// The guest writes to the `rootfs` tree itself, not to an overlay
    /// of it ([`super::LaunchConfig::rootfs_in_place`]).
    pub rootfs_in_place: bool,
    /// The `/` mount is made read-only last ([`super::LaunchConfig::root_read_only`]).
    pub root_read_only: bool,
    /// What /dev/shm is ([`super::LaunchConfig::dev_shm`]).
    pub dev_shm: super::DevShm,
    /// The rootfs must be the idmapped copy ([`super::LaunchConfig::mounts_keep_ids`]).
    pub mounts_keep_ids: bool,
    /// Top-level host directories shown in the view (none with a rootfs).
    pub top_dirs: Vec<TopDir>,
    /// Entries of /etc (relative) that exist on the host and are hidden.
    pub etc_hidden: Vec<PathBuf>,
    /// Files written into the view's /etc: (name relative to /etc, contents).
    pub etc_files: Vec<(PathBuf, Vec<u8>)>,
    /// Written like `etc_files` but left the guest's own (not sealed
    /// read-only for an unprivileged invoker, which costs two mounts a
    /// file): the fast-reads preload (`fast_reads.rs`), which a guest
    /// that changed it would break for itself alone.
    pub etc_guest_files: Vec<(PathBuf, Vec<u8>)>,
    /// The host's dynamic loader patched so that its own opens are marked
    /// (`ldso_patch.rs`), bound over the file in the view; `None`: as built.
    pub ldso: Option<super::ldso_patch::Patched>,
    /// The DNS stub's address, given to the guest's `lo` as well (see
    /// `sys::net::add_address`), when resolv.conf names it.
    pub nameserver: Option<std::net::IpAddr>,
    /// Host device nodes bound into the view's /dev.
    pub dev_nodes: Vec<&'static str>,
    /// What the view's /sys/devices/system/cpu holds.
    pub sys_cpu: SysCpu,
    /// The host's current directory, bound read-only at the same path.
    pub cwd_bind: Option<PathBuf>,
    /// The guest's $HOME, created in the layer if missing.
    pub home: Option<PathBuf>,
    /// The user's mounts, parents before children.
    pub mounts: Vec<PlannedMount>,
    /// `--remount-ro` paths, made read-only (with their submounts) after
    /// every mount is in place, before the masks (runc's order).
    pub read_only: Vec<PathBuf>,
    /// `--mask` paths, hidden after every mount is in place.
    pub masks: Vec<PathBuf>,
    /// The limits that decide which /proc files get covers.
    pub proc_covers: procfs::Limited,
}

/// A top-level directory of the host (`/usr`, `/bin`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopDir {
    /// Name without the slash: "usr".
    pub name: String,
    pub kind: TopKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopKind {
    /// A real directory shown as the host's, read-only (a bind mount):
    /// the system directories unless [`PlanInput::writable_system`].
    ReadOnly,
    /// A real directory: shown as an overlay whose upper layer is in the
    /// layer (/etc always; the others when the guest may write there).
    Overlay,
    /// A symlink on the host (merged /usr): recreated with this target.
    Symlink(PathBuf),
}

/// One user mount, checked against the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedMount {
    /// `--ro /a:/b`, to prefix error messages.
    pub label: String,
    pub guest: PathBuf,
    pub what: MountWhat,
}

impl PlannedMount {
    /// Whether the mount is a directory (a file bind is not).
    pub fn is_dir(&self) -> bool {
        match &self.what {
            MountWhat::Bind { is_dir, .. } => *is_dir,
            MountWhat::Tmpfs { .. } => true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountWhat {
    Bind {
        host: PathBuf,
        writable: bool,
        is_dir: bool,
    },
    Tmpfs {
        size: u64,
    },
}

/// Device nodes of the host that the view's /dev binds when present.
const DEV_NODES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// The inputs of a plan that do not come from looking at the host.
pub struct PlanInput<'a> {
    pub mounts: &'a [MountSpec],
    pub env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    pub hostname: &'a str,
    pub workdir: &'a Path,
    pub host_cwd: Option<&'a Path>,
    pub layer_size: u64,
    pub uid: u32,
    pub gid: u32,
    /// CPUs the guest may use, if limited.
    pub cpus: Option<usize>,
    /// `--rootfs DIR`, as given (absolute).
    pub rootfs: Option<&'a Path>,
    /// `--mask` paths (absolute, normalised).
    pub masks: &'a [PathBuf],
    /// `--remount-ro` paths (absolute, normalised).
    pub read_only: &'a [PathBuf],
    /// The name server resolv.conf names, if any.
    pub nameserver: Option<std::net::IpAddr>,
    /// `--writable-system`: /usr, /bin, /sbin, /lib and /lib64 as
    /// overlays the guest may write to, not read-only binds.
    pub writable_system: bool,
}

impl ViewPlan {
    /// Builds the plan, looking at the host. Errors are one line, ready
    /// for the user (`--ro /nope:/data: /nope: No such file or directory`).
    pub fn new(input: &PlanInput<'_>) -> Result<ViewPlan, String> {
        let home = etc::guest_home(input.env);
        let rootfs = input.rootfs.map(check_rootfs).transpose()?;
        let top_dirs = match rootfs {
            Some(_) => Vec::new(),
            None => HOST_DIRS
                .iter()
                .filter_map(|d| inspect_top_dir(d, overlaid(d, input)))
                .collect(),
        };
        let mut mounts = Vec::new();
        for m in input.mounts {
            mounts.push(plan_mount(m)?);
        }
        // Parents before children; the sort is stable, so equal depths
        // keep the user's order.
        mounts.sort_by_key(|m: &PlannedMount| m.guest.components().count());
        // A rootfs is the whole view: the host's cwd has no place in it.
        let cwd_bind = input
            .host_cwd
            .filter(|_| rootfs.is_none())
            .filter(|cwd| cwd_needs_bind(cwd, input.workdir, &mounts));
        let home_for_passwd = home.clone().unwrap_or_else(|| etc::default_home(input.uid));
        let etc_hidden = match rootfs {
            // The tree is the user's own: nothing of the host to hide.
            Some(_) => Vec::new(),
            None => etc::hidden_entries(Path::new("/etc")),
        };
        // The host's system users and groups; none with a rootfs, whose
        // tree is the user's (its /etc, maybe links out, is not read here).
        let etc_of_users = match rootfs {
            Some(_) => None,
            None => Some(Path::new("/etc")),
        };
        let mut etc_files = etc::files(
            input.uid,
            input.gid,
            &home_for_passwd,
            input.hostname,
            input.nameserver,
            etc_of_users,
        );
        // The host's id would name the host to every tenant; a rootfs
        // tree's own is the image's, not the host's, and stays.
        if rootfs.is_none() {
            etc_files.push(("machine-id".into(), etc::machine_id()?.into_bytes()));
        }
        Ok(ViewPlan {
            layer_size: input.layer_size,
            rootfs,
            rootfs_in_place: false,
            root_read_only: false,
            dev_shm: super::DevShm::Layer,
            mounts_keep_ids: false,
            top_dirs,
            etc_hidden,
            etc_files,
            etc_guest_files: Vec::new(),
            ldso: None,
            nameserver: input.nameserver,
            dev_nodes: DEV_NODES
                .iter()
                .copied()
                .filter(|n| Path::new("/dev").join(n).exists())
                .collect(),
            sys_cpu: SysCpu::new(input.cpus, Path::new("/sys/devices/system/cpu")),
            cwd_bind: cwd_bind.map(Path::to_path_buf),
            home,
            mounts,
            read_only: input.read_only.to_vec(),
            masks: input.masks.to_vec(),
            proc_covers: Default::default(),
        })
    }
}

/// Whether the host directory `dir` (`/usr`) is shown as an overlay. /etc
/// always is: the sandbox writes its own files there and hides secrets.
/// The others are read-only binds, faster to walk (a fresh overlay's
/// dentries are cold), unless the guest may write there
/// (`--writable-system`) or a user mount lies below (its mount point may
/// have to be made, which only the layer allows).
fn overlaid(dir: &str, input: &PlanInput<'_>) -> bool {
    dir == "/etc"
        || input.writable_system
        || input
            .mounts
            .iter()
            .any(|m| m.guest.starts_with(dir) && m.guest != Path::new(dir))
}

fn inspect_top_dir(path: &str, overlay: bool) -> Option<TopDir> {
    let meta = fs::symlink_metadata(path).ok()?;
    let name = path.trim_start_matches('/').to_string();
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path).ok()?;
        Some(TopDir {
            name,
            kind: TopKind::Symlink(target),
        })
    } else if meta.is_dir() {
        let kind = match overlay {
            true => TopKind::Overlay,
            false => TopKind::ReadOnly,
        };
        Some(TopDir { name, kind })
    } else {
        None
    }
}

/// The `--rootfs` directory, canonical; one line for the user otherwise.
fn check_rootfs(dir: &Path) -> Result<PathBuf, String> {
    let label = format!("--rootfs {}", dir.display());
    let real = fs::canonicalize(dir).map_err(|e| format!("{label}: {}", describe(&e)))?;
    let meta = fs::metadata(&real).map_err(|e| format!("{label}: {}", describe(&e)))?;
    if !meta.is_dir() {
        return Err(format!("{label}: not a directory"));
    }
    if real == Path::new("/") {
        return Err(format!(
            "{label}: the host's / is not a root file system for a sandbox (leave out --rootfs)"
        ));
    }
    Ok(real)
}

fn plan_mount(m: &MountSpec) -> Result<PlannedMount, String> {
    let label = m.label();
    let what = match (&m.kind, &m.host) {
        (MountKind::Tmpfs { size }, _) => MountWhat::Tmpfs { size: *size },
        (kind, Some(host)) => {
            let meta = fs::metadata(host)
                .map_err(|e| format!("{label}: {}: {}", host.display(), describe(&e)))?;
            MountWhat::Bind {
                host: host.clone(),
                writable: *kind == MountKind::ReadWrite,
                is_dir: meta.is_dir(),
            }
        }
        (_, None) => return Err(format!("{label}: no host path")),
    };
    Ok(PlannedMount {
        label,
        guest: m.guest.clone(),
        what,
    })
}

/// Whether the host's current directory must be bound into the view: only
/// when it is the starting directory, and not already visible there.
pub fn cwd_needs_bind(cwd: &Path, workdir: &Path, mounts: &[PlannedMount]) -> bool {
    // /tmp itself is the view's own (writable, empty) /tmp; binding the
    // host's over it would also show other programs' files and sockets.
    let visible_anyway = HOST_DIRS.iter().chain(RESERVED).any(|d| cwd.starts_with(d))
        || cwd == Path::new("/tmp")
        || mounts.iter().any(|m| cwd.starts_with(&m.guest));
    cwd == workdir && cwd != Path::new("/") && !visible_anyway
}

/// An I/O error as the C library words it, without Rust's "(os error N)".
pub fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(
        mounts: &'a [MountSpec],
        env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    ) -> PlanInput<'a> {
        PlanInput {
            mounts,
            env,
            hostname: "box",
            workdir: Path::new("/work/x"),
            host_cwd: Some(Path::new("/work/x")),
            layer_size: 1 << 20,
            uid: 1000,
            gid: 1000,
            cpus: None,
            rootfs: None,
            masks: &[],
            read_only: &[],
            nameserver: None,
            writable_system: false,
        }
    }

    #[test]
    fn missing_host_path_is_named() {
        let m = [MountSpec::parse_ro("/nope-xyz:/data").unwrap()];
        let e = ViewPlan::new(&input(&m, &[])).unwrap_err();
        assert_eq!(
            e,
            "--ro /nope-xyz:/data: /nope-xyz: No such file or directory"
        );
    }

    #[test]
    fn system_dirs_are_read_only_binds_unless_writable() {
        let kind = |plan: &ViewPlan, name: &str| {
            let top = plan.top_dirs.iter().find(|t| t.name == name);
            top.map(|t| t.kind.clone())
        };
        let plan = ViewPlan::new(&input(&[], &[])).unwrap();
        assert_eq!(kind(&plan, "usr"), Some(TopKind::ReadOnly));
        assert_eq!(kind(&plan, "etc"), Some(TopKind::Overlay));
        let mut writable = input(&[], &[]);
        writable.writable_system = true;
        let plan = ViewPlan::new(&writable).unwrap();
        assert_eq!(kind(&plan, "usr"), Some(TopKind::Overlay));
        // A mount below /usr needs the layer for its mount point; one at
        // /usr itself covers it whole.
        let below = [MountSpec::parse_tmpfs("/usr/local/scratch").unwrap()];
        let plan = ViewPlan::new(&input(&below, &[])).unwrap();
        assert_eq!(kind(&plan, "usr"), Some(TopKind::Overlay));
        let at = [MountSpec::parse_tmpfs("/usr").unwrap()];
        let plan = ViewPlan::new(&input(&at, &[])).unwrap();
        assert_eq!(kind(&plan, "usr"), Some(TopKind::ReadOnly));
        let beside = [MountSpec::parse_tmpfs("/usrdata").unwrap()];
        let plan = ViewPlan::new(&input(&beside, &[])).unwrap();
        assert_eq!(kind(&plan, "usr"), Some(TopKind::ReadOnly));
    }

    #[test]
    fn mounts_parents_first() {
        let m = [
            MountSpec::parse_tmpfs("/data/sub/x").unwrap(),
            MountSpec::parse_ro("/usr:/data").unwrap(),
            MountSpec::parse_tmpfs("/data/sub").unwrap(),
        ];
        let plan = ViewPlan::new(&input(&m, &[])).unwrap();
        let order: Vec<_> = plan.mounts.iter().map(|m| m.guest.clone()).collect();
        assert_eq!(
            order,
            [
                PathBuf::from("/data"),
                "/data/sub".into(),
                "/data/sub/x".into()
            ]
        );
        assert_eq!(
            plan.mounts[0].what,
            MountWhat::Bind {
                host: "/usr".into(),
                writable: false,
                is_dir: true
            }
        );
    }

    #[test]
    fn cwd_binding() {
        let none: &[PlannedMount] = &[];
        assert!(cwd_needs_bind(
            Path::new("/work/x"),
            Path::new("/work/x"),
            none
        ));
        assert!(!cwd_needs_bind(Path::new("/"), Path::new("/"), none));
        assert!(!cwd_needs_bind(
            Path::new("/usr/share"),
            Path::new("/usr/share"),
            none
        ));
        assert!(!cwd_needs_bind(
            Path::new("/etcetera"),
            Path::new("/data"),
            none
        ));
        assert!(cwd_needs_bind(
            Path::new("/etcetera"),
            Path::new("/etcetera"),
            none
        ));
        assert!(!cwd_needs_bind(Path::new("/tmp"), Path::new("/tmp"), none));
        assert!(cwd_needs_bind(
            Path::new("/tmp/a"),
            Path::new("/tmp/a"),
            none
        ));
        let covered = [PlannedMount {
            label: String::new(),
            guest: "/work".into(),
            what: MountWhat::Tmpfs { size: 1 },
        }];
        assert!(!cwd_needs_bind(
            Path::new("/work/x"),
            Path::new("/work/x"),
            &covered
        ));
    }

    #[test]
    fn home_and_etc_files() {
        let env = [("HOME".into(), "/home/alice".into())];
        let plan = ViewPlan::new(&input(&[], &env)).unwrap();
        assert_eq!(plan.home.as_deref(), Some(Path::new("/home/alice")));
        let passwd = String::from_utf8(plan.etc_files[0].1.clone()).unwrap();
        assert!(
            passwd.contains("sandbox:x:1000:1000:sandbox:/home/alice:/bin/sh\n"),
            "{passwd}"
        );
        let plan = ViewPlan::new(&input(&[], &[])).unwrap();
        assert_eq!(plan.home, None);
        assert!(String::from_utf8_lossy(&plan.etc_files[0].1).contains(":/home/sandbox:"));
        let names: Vec<_> = plan.etc_files.iter().map(|f| f.0.clone()).collect();
        assert!(names.contains(&PathBuf::from("resolv.conf")), "{names:?}");
        assert!(names.contains(&PathBuf::from("machine-id")), "{names:?}");
    }

    #[test]
    fn rootfs_is_checked() {
        let e = ViewPlan::new(&PlanInput {
            rootfs: Some(Path::new("/nope-rootfs-xyz")),
            ..input(&[], &[])
        })
        .unwrap_err();
        assert_eq!(e, "--rootfs /nope-rootfs-xyz: No such file or directory");
        let e = ViewPlan::new(&PlanInput {
            rootfs: Some(Path::new("/etc/hostname")),
            ..input(&[], &[])
        })
        .unwrap_err();
        assert_eq!(e, "--rootfs /etc/hostname: not a directory");
        let plan = ViewPlan::new(&PlanInput {
            rootfs: Some(Path::new("/usr")),
            ..input(&[], &[])
        })
        .unwrap();
        assert_eq!(plan.rootfs.as_deref(), Some(Path::new("/usr")));
        assert!(plan.top_dirs.is_empty() && plan.etc_hidden.is_empty());
        assert_eq!(plan.cwd_bind, None);
    }
}
