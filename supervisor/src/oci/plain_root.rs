//! The anchor's view of the container's files when the container's ids
//! are shifted (`ids.mounts_keep_ids`, as root): the sandbox's root is an
//! idmapped copy of the bundle's rootfs that maps host ids 0–65535 onto
//! the container's range, so host root has no id on it and a file it
//! would create there is refused (EOVERFLOW). Engines act on the
//! container's files as host root from the anchor's mount namespace
//! (Podman's `cp`, both ways), as they do with runc's container, whose
//! root is the tree itself. So the anchor, once it has joined the
//! sandbox's mount namespace, makes a copy of it of its own (owned by the
//! host's user namespace) and stacks the bundle's rootfs as it is on the
//! host on `/` (made private: a clone is a peer of the engine's mount),
//! with the sandbox's /proc on that (what `podman top` reads): whoever
//! joins the anchor's mount namespace lands on the tree (`setns`
//! follows the mounts stacked on the namespace's root), writes
//! as host root land as host root's, which the container sees as its
//! root's. The sandbox's own namespace, and the guest, are unchanged.
//!
//! Owns that stacking; not the joining (`anchor.rs`).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use nix::fcntl::OFlag;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::stat::Mode;
use nix::unistd::{chdir, chroot, fchdir};
use sandbox::config::SandboxConfig;
use sandbox::sys::fd::open_at;
use sandbox::sys::mount_tree::{attach, clone_mount_of};

/// A detached copy of the bundle's rootfs as it is on the host, made in
/// the host's mount namespace, when the sandbox's root is an idmapped
/// copy of it written in place; `None` otherwise (or if it cannot be
/// made: the anchor then stays in the sandbox's namespace, as before).
pub fn copy_of_tree(config: &SandboxConfig) -> Option<OwnedFd> {
    if !(config.ids.mounts_keep_ids && config.fs.rootfs_in_place) {
        return None;
    }
    let tree = config.fs.rootfs.as_deref()?;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let dir = open_at(None, tree, flags, Mode::empty()).ok()?;
    clone_mount_of(dir.as_fd()).ok()
}

/// Called in the sandbox's mount namespace: a private copy of it, with
/// `tree` stacked on `/` and the sandbox's /proc on that; the anchor's
/// root and working directory become the tree's.
pub fn stack(tree: OwnedFd) -> Result<(), String> {
    let err = |what: &str, e: nix::Error| format!("{what}: {}", e.desc());
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| err("a mount namespace for the anchor", e))?;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let open_dir = |path: &str| {
        open_at(None, Path::new(path), flags, Mode::empty())
            .map_err(|e| err(&format!("opening {path}"), e))
    };
    let proc = open_dir("/proc")?;
    let root = open_dir("/")?;
    attach(tree.as_fd(), root.as_fd()).map_err(|e| err("stacking the rootfs on /", e))?;
    fchdir(tree.as_raw_fd()).map_err(|e| err("entering the rootfs", e))?;
    chroot(".").map_err(|e| err("chroot to the rootfs", e))?;
    // The copy is a peer of the engine's mount on the host (a clone
    // keeps its source's peer group): made private before anything is
    // mounted on it, or the /proc below would propagate onto the
    // engine's rootfs on the host, whose unmount (containerd's, without
    // MNT_DETACH) then fails with EBUSY once the container has ended.
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| err("making the rootfs copy private", e))?;
    // The sandbox's /proc with what covers it (its masked paths: their
    // mounts are locked here, so only the whole tree of them may be
    // bound), named as the working directory: it is out of the new root.
    fchdir(proc.as_raw_fd()).map_err(|e| err("entering the sandbox's /proc", e))?;
    let bound = mount(
        Some("."),
        "/proc",
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    );
    bound.map_err(|e| err("binding the sandbox's /proc", e))?;
    chdir("/").map_err(|e| err("chdir /", e))
}
