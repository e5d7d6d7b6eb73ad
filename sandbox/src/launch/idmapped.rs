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
//! A file system without idmapped mounts (or a kernel before 5.12) is a
//! one-line error naming the limitation.
//!
//! With `--rootfs` there are no top directories of the host; otherwise
//! `/usr` and `/etc` (and `/bin`, `/lib`... where they are directories)
//! get the same treatment, best effort ([`IdmappedSources::tops`]).
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
use nix::sys::wait::waitpid;
use nix::unistd::{pipe, read, Pid};

use super::bind::open_source;
use super::plan::{MountWhat, TopKind, ViewPlan};
use crate::sys::mount_tree::{clone_mount_of, set_idmap};
use crate::sys::process::{clone_process, exit_now, Forked};

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
}

/// Copies of the plan's host sources for a guest whose root is host
/// uid and gid `guest_root`.
pub fn prepare(plan: &ViewPlan, guest_root: (u32, u32)) -> Result<IdmappedSources, String> {
    let mut namespaces = Namespaces {
        guest_root,
        made: HashMap::new(),
    };
    let cwd = match &plan.cwd_bind {
        Some(dir) => Some(
            namespaces
                .copy(dir, libc::MOUNT_ATTR_RDONLY)
                .map_err(|e| format!("current directory {}: {e}", dir.display()))?,
        ),
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
    Ok(IdmappedSources { cwd, mounts, tops })
}

impl IdmappedSources {
    /// The copy of the host's top directory `name`, if made.
    pub fn top(&self, name: &str) -> Option<&OwnedFd> {
        self.tops.iter().find(|(n, _)| n == name).map(|(_, fd)| fd)
    }
}

struct Namespaces {
    guest_root: (u32, u32),
    /// A user namespace per (owner, group) of a source.
    made: HashMap<(u32, u32), OwnedFd>,
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
            let ns = mapping_namespace(owner, self.guest_root)
                .map_err(|e| format!("making an id map for {}: {e}", host.display()))?;
            self.made.insert(owner, ns);
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

/// A user namespace mapping host `owner` (uid, gid) to `root` (the
/// guest root's host ids): a child made in one, kept until its maps are
/// written and its namespace is open.
fn mapping_namespace(owner: (u32, u32), root: (u32, u32)) -> Result<OwnedFd, String> {
    let (hold_rx, hold_tx) = pipe().map_err(|e| format!("pipe: {}", e.desc()))?;
    let child = match clone_process(CloneFlags::CLONE_NEWUSER) {
        Err(e) => return Err(format!("clone: {}", e.desc())),
        Ok(Forked::Child) => {
            drop(hold_tx);
            // Waits for the parent to close its end (EOF), then leaves
            // without running anything of ours.
            let _ = read(hold_rx.as_raw_fd(), &mut [0u8; 1]);
            exit_now(0)
        }
        Ok(Forked::Parent(pid)) => pid,
    };
    drop(hold_rx);
    let result = write_and_open(child, owner, root);
    drop(hold_tx);
    let _ = waitpid(child, None);
    result
}

fn write_and_open(child: Pid, owner: (u32, u32), root: (u32, u32)) -> Result<OwnedFd, String> {
    let write = |name: &str, text: String| {
        fs::write(format!("/proc/{child}/{name}"), text).map_err(|e| format!("{name}: {e}"))
    };
    write("uid_map", format!("{} {} 1\n", owner.0, root.0))?;
    write("gid_map", format!("{} {} 1\n", owner.1, root.1))?;
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
