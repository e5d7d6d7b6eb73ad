//! Idmapped mounts of the host directories a shifted guest is given
//! (`--ro`, `--rw`, the current directory): each appears inside owned by
//! the guest's root where the host owner is the directory's owner, and
//! what the guest's root creates there is owned on the host by that
//! owner, not by a mapped id.
//!
//! How: before the clone, the supervisor (root: an idmapped mount needs
//! CAP_SYS_ADMIN over the file system's user namespace, the host's) takes
//! a detached copy of each source (`open_tree`), makes a user namespace
//! whose maps send the directory's owner and group to the guest root's
//! host ids (one line each: `OWNER START 1`), and sets that as the copy's
//! idmap together with nosuid, nodev and, for `--ro`, read-only
//! (`mount_setattr`). Init attaches the copies in the view
//! (`move_mount`). Host ids other than the owner's have no id on the
//! mount: they show as the overflow id and nothing can be made theirs.
//! For `--ro` and `--rw`, a file system without idmapped mounts (or a
//! kernel before 5.12) is a one-line error naming the limitation; the
//! current directory, shared without being asked for, is then bound as
//! it is.
//!
//! With `--rootfs` there are no top directories of the host; otherwise
//! `/usr` and `/etc` (and `/bin`, `/lib`... where they are directories)
//! get the same treatment, best effort ([`IdmappedSources::tops`]). A
//! `--rootfs` tree under an overlay is an image: its ids are the guest's
//! own, so its copy maps host id N to the guest's host id for N (the
//! sandbox's own map, `0 START COUNT`): a file the tree's root owns shows
//! as the guest root's, one of uid 100 as guest 100, as in a container
//! whose image is idmapped ([`IdmappedSources::rootfs`], best effort).
//!
//! The OCI runtime as root ([`prepare`]'s `keep_ids`, the sandbox's
//! `mounts_keep_ids`) gives every host source that sandbox map instead:
//! the bundle's rootfs (written in place, so its copy is writable) and
//! each bind of config.json show host id N as container id N, so that
//! the image's files (host 0's) are the container root's and what the
//! container's root writes lands as host 0, as under runc without a user
//! namespace. There the tree and every directory must take the idmap: a
//! refusal is a one-line error naming the source and the limitation,
//! never a plain bind (whose files would show as the overflow id). A
//! single file that the kernel cannot idmap (the engine's /etc/hosts or
//! resolv.conf in a tmpfs before Linux 6.3) is bound as it is: readable,
//! shown as the overflow id's. A rootfs that is an engine's overlayfs
//! mount, which the kernel does not idmap, becomes an overlay of
//! idmapped copies of its layers (`engine_overlay.rs`).
//!
//! Owns making the copies. Not attaching them (`bind.rs`), nor the
//! sandbox's own maps (`userns.rs`).

use std::collections::HashMap;
use std::fs;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::stat::fstat;
use nix::unistd::Pid;
use vfs::IdMap;

use super::bind::open_source;
use super::dev_shm::DevShm;
use super::engine_overlay::EngineOverlay;
use super::plan::{MountWhat, TopKind, ViewPlan};
use crate::sys::holder::{Holder, Leaving};
use crate::sys::mount_tree::{clone_mount_of, set_idmap};

/// The detached idmapped copies, in the plan's order.
#[derive(Default)]
pub struct IdmappedSources {
    pub cwd: Option<OwnedFd>,
    /// One per planned mount (`None` for a tmpfs).
    pub mounts: Vec<Option<OwnedFd>>,
    /// The host's top directories shown read-only or as an overlay's
    /// lower layer (`/usr`, `/etc`), by name, where the file system takes
    /// an idmap: their owner (root) shows as the guest's root, so that
    /// `ls -l /usr/bin` reads as on the host and the guest's root may
    /// change `/etc` (in its layer, by copy-up). Best effort: a directory
    /// without one is shown as before (its root-owned files as the
    /// overflow id).
    pub tops: Vec<(String, OwnedFd)>,
    /// The `--rootfs` tree (under an overlay, not in place), its ids
    /// shifted onto the guest's range, read-only (the overlay's lower
    /// layer). Best effort: without it the tree is bound as it is.
    pub rootfs: Option<OwnedFd>,
    /// The OCI engine's /dev/shm (`dev_shm.rs`), its ids shifted as the
    /// guest's are, where the kernel idmaps its file system (a tmpfs from
    /// Linux 6.3); `None`: bound as it is (docs/oci.md, "/dev/shm").
    pub dev_shm: Option<OwnedFd>,
    /// The children that held the id maps' user namespaces, on their way
    /// out: reaped by [`IdmappedSources::reap_holders`] or when these
    /// sources are dropped, once the launch no longer waits on them.
    holders: Vec<Leaving>,
}

/// Copies of the plan's host sources for a guest whose ids are `ids`
/// (host ids of guest 0 onward); `keep_ids`: every source shifted as the
/// guest's ids are, and required ([`prepare_keeping_ids`]).
pub fn prepare(plan: &ViewPlan, ids: &IdMap, keep_ids: bool) -> Result<IdmappedSources, String> {
    if keep_ids {
        return prepare_keeping_ids(plan, ids);
    }
    let root = (ids.uid_to_host(0), ids.gid_to_host(0));
    let (Ok(uid), Ok(gid)) = root else {
        return Err("the id map has no guest root".into());
    };
    let mut namespaces = Namespaces {
        guest_root: (uid, gid),
        made: HashMap::new(),
        leaving: Vec::new(),
    };
    // The current directory is shared without being asked for: best
    // effort, as the top directories (without an idmap its files show
    // as the overflow id, read-only either way), so that a plain
    // `supervisor run` works from any directory.
    let cwd = match &plan.cwd_bind {
        Some(dir) => namespaces.copy(dir, libc::MOUNT_ATTR_RDONLY).ok(),
        None => None,
    };
    let mut mounts = Vec::with_capacity(plan.mounts.len());
    for m in &plan.mounts {
        mounts.push(match &m.what {
            MountWhat::Bind { host, writable, .. } => {
                let ro = if *writable {
                    0
                } else {
                    libc::MOUNT_ATTR_RDONLY
                };
                Some(
                    namespaces
                        .copy(host, ro)
                        .map_err(|e| format!("{}: {e}", m.label))?,
                )
            }
            MountWhat::Tmpfs { .. } => None,
        });
    }
    let mut tops = Vec::new();
    for top in &plan.top_dirs {
        let flags = match top.kind {
            TopKind::ReadOnly => libc::MOUNT_ATTR_RDONLY,
            // An overlay's lower layer is never written.
            TopKind::Overlay => libc::MOUNT_ATTR_RDONLY,
            TopKind::Symlink(_) => continue,
        };
        let host = Path::new("/").join(&top.name);
        if let Ok(copy) = namespaces.copy(&host, flags) {
            tops.push((top.name.clone(), copy));
        }
    }
    let rootfs = match &plan.rootfs {
        Some(tree) if !plan.rootfs_in_place => shifted_copy(tree, ids).ok(),
        _ => None,
    };
    Ok(IdmappedSources {
        cwd,
        mounts,
        tops,
        rootfs,
        dev_shm: None,
        holders: namespaces.leaving,
    })
}

/// A read-only copy of `tree` whose ids are shifted as the guest's are
/// (`ids`' own lines as the idmap).
fn shifted_copy(tree: &Path, ids: &IdMap) -> Result<OwnedFd, String> {
    let ns = sandbox_map_namespace(ids)?;
    shifted_copy_in(tree, &ns, libc::MOUNT_ATTR_RDONLY).map_err(|e| e.desc().to_string())
}

/// The user namespace whose maps are the sandbox's own (`ids`' lines).
pub(super) fn sandbox_map_namespace(ids: &IdMap) -> Result<OwnedFd, String> {
    let lines = |extents: &mut dyn Iterator<Item = vfs::idmap::Extent>| {
        extents.map(|e| e.line()).collect::<String>()
    };
    mapping_namespace(lines(&mut ids.uid_extents()), lines(&mut ids.gid_extents()))
        .map(|(ns, _reaped_here)| ns)
}

/// A copy of `host` with `ns` as its idmap, nosuid, nodev and `extra`.
fn shifted_copy_in(host: &Path, ns: &OwnedFd, extra: u64) -> nix::Result<OwnedFd> {
    let src = open_source(host, false)?;
    let copy = clone_mount_of(src.as_fd())?;
    let flags = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV | extra;
    set_idmap(copy.as_fd(), ns.as_fd(), flags)?;
    Ok(copy)
}

/// The OCI runtime's copies: the rootfs (writable when written in place)
/// and every bind, each showing host id N as guest id N; any refusal is
/// an error naming the source and the limitation.
fn prepare_keeping_ids(plan: &ViewPlan, ids: &IdMap) -> Result<IdmappedSources, String> {
    let ns =
        sandbox_map_namespace(ids).map_err(|e| format!("making the container's id map: {e}"))?;
    let refused = |e: Errno| matches!(e, Errno::EINVAL | Errno::EOPNOTSUPP | Errno::ENOSYS);
    let error = |what: &str, host: &Path, e: Errno| {
        match refused(e) {
        true => format!(
            "{what} {}: its file system ({}) takes no idmapped mount on this kernel ({}), which the container's id map needs (Linux 5.12; overlayfs 5.19; tmpfs 6.3)",
            host.display(),
            fs_type(host),
            e.desc()
        ),
        false => format!("{what} {}: making its idmapped mount: {}", host.display(), e.desc()),
    }
    };
    let mut mounts = Vec::with_capacity(plan.mounts.len());
    for m in &plan.mounts {
        mounts.push(match &m.what {
            MountWhat::Bind {
                host,
                writable,
                is_dir,
            } => {
                let ro = match writable {
                    true => 0,
                    false => libc::MOUNT_ATTR_RDONLY,
                };
                match shifted_copy_in(host, &ns, ro) {
                    Ok(copy) => Some(copy),
                    // A single file of the engine's (/etc/hosts and
                    // resolv.conf on a tmpfs before 6.3: Podman's run
                    // directory) is bound as it is: readable, its host
                    // owner shown as the overflow id.
                    Err(e) if refused(e) && !is_dir => None,
                    Err(e) => {
                        return Err(error(&format!("mount on {}:", m.guest.display()), host, e))
                    }
                }
            }
            MountWhat::Tmpfs { .. } => None,
        });
    }
    let rootfs = match &plan.rootfs {
        // The overlay's lower layer is never written.
        Some(tree) => {
            let ro = match plan.rootfs_in_place {
                true => 0,
                false => libc::MOUNT_ATTR_RDONLY,
            };
            // An engine's overlayfs mount: an overlay of its layers'
            // copies (`engine_overlay.rs`), as the kernel idmaps no
            // overlayfs mount.
            let overlay = EngineOverlay::of(tree)
                .map_err(|e| format!("root file system {}: {e}", tree.display()))?;
            match overlay {
                Some(overlay) => {
                    let (Ok(uid), Ok(gid)) = (ids.uid_to_host(0), ids.gid_to_host(0)) else {
                        return Err("the id map has no container root".into());
                    };
                    let made = overlay.mount_shifted(ns.as_fd(), ro != 0, (uid, gid));
                    Some(made.map_err(|e| format!("root file system {}: {e}", tree.display()))?)
                }
                None => {
                    let copy = shifted_copy_in(tree, &ns, ro);
                    Some(copy.map_err(|e| error("root file system", tree, e))?)
                }
            }
        }
        None => None,
    };
    // The engine's /dev/shm: shifted where the kernel takes it, else
    // bound as it is, whatever the refusal (a tmpfs before Linux 6.3, a
    // rootless engine's tmpfs): the containers of a pod then write their
    // objects under the same host ids (docs/oci.md, "/dev/shm"), and a
    // source that cannot be opened fails at the bind, naming it.
    let dev_shm = match &plan.dev_shm {
        DevShm::Bind { host, .. } => shifted_copy_in(host, &ns, plan.dev_shm.copy_attrs()).ok(),
        DevShm::Layer | DevShm::Tmpfs { .. } => None,
    };
    Ok(IdmappedSources {
        cwd: None,
        mounts,
        tops: Vec::new(),
        rootfs,
        dev_shm,
        holders: Vec::new(),
    })
}

impl IdmappedSources {
    /// Reaps the children that held the id maps' namespaces (at once
    /// where they have left, as they have by the end of the launch).
    pub fn reap_holders(&mut self) {
        self.holders.clear();
    }

    /// The copy of the host's top directory `name`, if made.
    pub fn top(&self, name: &str) -> Option<&OwnedFd> {
        self.tops.iter().find(|(n, _)| n == name).map(|(_, fd)| fd)
    }
}

struct Namespaces {
    guest_root: (u32, u32),
    /// A user namespace per (owner, group) of a source.
    made: HashMap<(u32, u32), OwnedFd>,
    /// Their holders, reaped with the [`IdmappedSources`].
    leaving: Vec<Leaving>,
}

impl Namespaces {
    /// The idmapped copy of `host`, with `extra` MOUNT_ATTR_* flags.
    fn copy(&mut self, host: &Path, extra: u64) -> Result<OwnedFd, String> {
        let src =
            open_source(host, false).map_err(|e| format!("{}: {}", host.display(), e.desc()))?;
        let st = fstat(src.as_raw_fd()).map_err(|e| format!("{}: {}", host.display(), e.desc()))?;
        let copy = clone_mount_of(src.as_fd())
            .map_err(|e| format!("copying the mount of {}: {}", host.display(), e.desc()))?;
        let owner = (st.st_uid, st.st_gid);
        if !self.made.contains_key(&owner) {
            let (root, line) = (self.guest_root, |o: u32, r: u32| format!("{o} {r} 1\n"));
            let (ns, leaving) = mapping_namespace(line(owner.0, root.0), line(owner.1, root.1))
                .map_err(|e| format!("making an id map for {}: {e}", host.display()))?;
            self.made.insert(owner, ns);
            self.leaving.push(leaving);
        }
        let ns = &self.made[&owner];
        let flags = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV | extra;
        set_idmap(copy.as_fd(), ns.as_fd(), flags).map_err(|e| match e {
            Errno::EINVAL | Errno::EOPNOTSUPP | Errno::ENOSYS => format!(
                "{}: its file system ({}) does not support idmapped mounts, which a shifted id range needs for host directories (use --userns-range none)",
                host.display(),
                fs_type(host)
            ),
            e => format!("idmapping {}: {}", host.display(), e.desc()),
        })?;
        Ok(copy)
    }
}

/// A user namespace whose maps are `uid_map` and `gid_map` (e.g. the
/// host `owner` of a directory onto the guest root's host ids, `OWNER
/// START 1`): a child made in one ([`Holder`]), kept until its maps are
/// written and its namespace is open. The child is reaped when what comes
/// back with the namespace is dropped: its exit overlaps what the caller
/// does next.
fn mapping_namespace(uid_map: String, gid_map: String) -> Result<(OwnedFd, Leaving), String> {
    let holder =
        Holder::spawn(CloneFlags::CLONE_NEWUSER).map_err(|e| format!("clone: {}", e.desc()))?;
    let result = write_and_open(holder.pid(), uid_map, gid_map);
    let leaving = holder.release();
    result.map(|ns| (ns, leaving))
}

fn write_and_open(child: Pid, uid_map: String, gid_map: String) -> Result<OwnedFd, String> {
    let write = |name: &str, text: String| {
        fs::write(format!("/proc/{child}/{name}"), text).map_err(|e| format!("{name}: {e}"))
    };
    write("uid_map", uid_map)?;
    write("gid_map", gid_map)?;
    fs::File::open(format!("/proc/{child}/ns/user"))
        .map(OwnedFd::from)
        .map_err(|e| format!("opening its namespace: {e}"))
}

/// The file system type of `path` as /proc/self/mountinfo names it
/// (best effort: "unknown").
fn fs_type(path: &Path) -> String {
    nix::sys::statfs::statfs(path)
        .map(|s| format!("{:?}", s.filesystem_type()))
        .unwrap_or_else(|_| "unknown".into())
}
