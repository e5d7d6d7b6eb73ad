//! Building the guest's view: runs in the sandbox's init, inside its new
//! user and mount namespaces, before any privilege is dropped.
//!
//! Owns: the mounts of the view and the two pivots. Does not own: what
//! the view contains (decided in `plan.rs`), or anything after the final
//! pivot (init chdirs and drops privileges).
//!
//! The steps, as bubblewrap does them:
//! 1. Make every mount private, so nothing we do propagates to the host.
//! 2. Open the user's bind sources (and the host cwd, the rootfs) while
//!    the host's paths still mean what the user meant.
//! 3. Mount the layer (a tmpfs of `--disk` size) on /tmp and pivot into
//!    it: the layer becomes `/`, the host's root `/oldroot`.
//! 4. In the layer: `/newroot`, and `/upper`, `/work` (overlay upper and
//!    work dirs) and `/shm`, which the guest can never reach.
//! 5. The new root: a layer directory bound on itself holding read-only
//!    binds of the host's /usr (and /bin, /sbin, /lib, /lib64 where they
//!    are directories; overlays instead under `--writable-system` or a
//!    user mount below), an overlay of /etc (secrets whited out, passwd
//!    and friends written in the upper layer) and /tmp; or, with `--rootfs`, an
//!    overlay of the user's tree (`rootfs.rs`). Then in either: a fresh
//!    /proc (`proc_mount.rs`), a small /dev, a read-only /sys holding only
//!    devices/system/cpu, the host cwd, the user's mounts, $HOME, the
//!    `--remount-ro` paths, masks; last, with a read-only root
//!    (`root.readonly` of a bundle), the `/` mount itself read-only.
//! 6. Pivot into /newroot and detach the old root (layer and host).
//!
//! Step 5's root of the host's view is `host_root.rs`'s, of a `--rootfs`
//! tree `rootfs.rs`'s. The mounts at paths the user chose (step 5's cwd,
//! user mounts, $HOME, read-only paths, masks) are in `bind.rs`.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::stat::{mknod, umask, Mode, SFlag};
use nix::unistd::{chdir, getuid, mkdir, pivot_root};

use super::bind::{
    add_mask, add_user_mount, attach_copy, bind, ensure_in_root, open_mount_source, open_source,
    remount_read_only, share_files_only,
};
use super::dev_shm::{self, DevShm};
use super::dev_view;
use super::host_root;
use super::idmapped::IdmappedSources;
use super::plan::ViewPlan;
use super::proc_mount;
use super::rootfs;
use crate::sys::fd::open_at;
use crate::sys::mount_tree::make_read_only;
use procfs::write_sys_cpu;

/// Where the layer is mounted before the first pivot. Any host directory
/// would do: / is private by then, so the host never sees this mount.
const STAGING: &str = "/tmp";
/// Paths inside the layer, once it is `/`.
pub(super) const OLD_ROOT: &str = "/oldroot";
pub(super) const NEW_ROOT: &str = "/newroot";
pub(super) const UPPER: &str = "/upper";
pub(super) const WORK: &str = "/work";
pub(super) const SHM: &str = "/shm";
/// An empty directory: the second lower layer of a read-only overlay.
const EMPTY: &str = "/empty";

pub(crate) type Result<T> = std::result::Result<T, String>;

/// Builds the view and pivots into it. Errors are one line for the user.
/// `become_root`: with shifted ids, take the guest root's ids once the
/// host sources are open (`Some(keep_groups)`, `users::become_namespace_root`).
pub fn build(plan: &ViewPlan, idmapped: &IdmappedSources, become_root: Option<bool>) -> Result<()> {
    // Modes below are meant exactly; the guest gets the old umask back.
    let umask_before = umask(Mode::empty());
    let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
    check(
        mount(None::<&str>, "/", None::<&str>, private, None::<&str>),
        || "making mounts private".into(),
    )?;
    let cwd_src = match &plan.cwd_bind {
        Some(cwd) => Some(
            open_source(cwd, true)
                .map_err(|e| format!("current directory {}: {}", cwd.display(), e.desc()))?,
        ),
        None => None,
    };
    let mount_srcs = plan
        .mounts
        .iter()
        .map(open_mount_source)
        .collect::<Result<Vec<_>>>()?;

    let shm_src = dev_shm::open_engine_source(&plan.dev_shm)?;
    let rootfs_src = match &plan.rootfs {
        Some(dir) => Some(
            open_source(dir, true)
                .map_err(|e| format!("--rootfs {}: {}", dir.display(), e.desc()))?,
        ),
        None => None,
    };

    // With shifted ids, the rest is made as the guest's root: host root
    // has no id in the namespace, and nothing may be made as it.
    if let Some(keep_groups) = become_root {
        super::users::become_namespace_root(keep_groups)?;
    }
    enter_layer(plan.layer_size)?;
    make_layer_dirs()?;
    match &rootfs_src {
        Some(src) => {
            rootfs::mount_root(plan, src.as_fd(), idmapped.rootfs.as_ref().map(AsFd::as_fd))?
        }
        None => host_root::build(plan, idmapped)?,
    }
    if !getuid().is_root() {
        seal_etc_files(plan)?;
    }
    build_sys(plan)?;
    proc_mount::mount_proc(&new_root("proc"), plan.proc_covers)?;
    let layer_shm = plan.dev_shm == DevShm::Layer;
    dev_view::build_dev(
        &new_root("dev"),
        &plan.dev_nodes,
        Path::new(OLD_ROOT),
        layer_shm,
    )?;

    let root = fd_of_path(NEW_ROOT)?;
    dev_shm::mount(
        root.as_fd(),
        &plan.dev_shm,
        shm_src.as_ref(),
        idmapped.dev_shm.as_ref(),
    )?;
    if let (Some(cwd), Some(src)) = (&plan.cwd_bind, &cwd_src) {
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        match &idmapped.cwd {
            Some(copy) => attach_copy(root.as_fd(), copy.as_fd(), cwd, true),
            None => bind(root.as_fd(), src.as_fd(), cwd, true, flags),
        }
        .map_err(|e| format!("current directory {}: {e}", cwd.display()))?;
        make_dir(Path::new(EMPTY), 0o555)?;
        let empty = fd_of_path(EMPTY)?;
        share_files_only(root.as_fd(), cwd, empty.as_fd());
    }
    for (i, (m, src)) in plan.mounts.iter().zip(&mount_srcs).enumerate() {
        let added = match idmapped.mounts.get(i).and_then(Option::as_ref) {
            Some(copy) => attach_copy(root.as_fd(), copy.as_fd(), &m.guest, m.is_dir()),
            None => add_user_mount(root.as_fd(), m, src.as_ref()),
        };
        added.map_err(|e| format!("{}: {e}", m.label))?;
    }
    if let Some(home) = &plan.home {
        // A HOME we cannot create is not worth failing the run for.
        let _ = ensure_in_root(root.as_fd(), home, true);
    }
    for path in &plan.read_only {
        remount_read_only(root.as_fd(), path)
            .map_err(|e| format!("--remount-ro {}: {e}", path.display()))?;
    }
    if !plan.masks.is_empty() {
        let null = open_source(&Path::new(OLD_ROOT).join("dev/null"), false)
            .map_err(|e| format!("--mask: opening /dev/null: {}", e.desc()))?;
        for path in &plan.masks {
            add_mask(root.as_fd(), null.as_fd(), path)
                .map_err(|e| format!("--mask {}: {e}", path.display()))?;
        }
    }
    if plan.root_read_only {
        // Last, once every mount point on it exists: only the `/` mount,
        // as runc's `readonly` root (/dev, /proc, /dev/shm, tmpfs mounts
        // and the /etc files bound on it stay as they are).
        make_read_only(root.as_fd()).map_err(|e| format!("making / read-only: {}", e.desc()))?;
    }
    if !getuid().is_root() && plan.rootfs.is_none() {
        // Like the host's `/`, the sandbox's is not the user's to fill.
        let r = fs::set_permissions(new_root(""), fs::Permissions::from_mode(0o555));
        r.map_err(|e| format!("sealing /: {e}"))?;
    }
    drop(root);
    enter_new_root()?;
    umask(umask_before);
    Ok(())
}

pub(crate) fn check<T>(r: nix::Result<T>, what: impl FnOnce() -> String) -> Result<T> {
    r.map_err(|e| format!("{}: {}", what(), e.desc()))
}

pub(super) fn new_root(rel: &str) -> PathBuf {
    Path::new(NEW_ROOT).join(rel)
}

pub(super) fn fd_of_path(path: &str) -> Result<OwnedFd> {
    open_at(
        None,
        Path::new(path),
        OFlag::O_PATH | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
    .map_err(|e| format!("opening {path}: {}", e.desc()))
}

pub(crate) fn make_dir(path: &Path, mode: u32) -> Result<()> {
    match mkdir(path, Mode::from_bits_truncate(mode)) {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(e) => Err(format!("creating {}: {}", path.display(), e.desc())),
    }
}

/// Steps 3: the layer becomes `/`, the host's root `/oldroot`.
fn enter_layer(size: u64) -> Result<()> {
    let opts = format!("size={size},mode=0755");
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    check(
        mount(
            Some("tmpfs"),
            STAGING,
            Some("tmpfs"),
            flags,
            Some(opts.as_str()),
        ),
        || "mounting the layer".into(),
    )?;
    check(chdir(STAGING), || format!("entering {STAGING}"))?;
    make_dir(Path::new("oldroot"), 0o755)?;
    check(pivot_root(".", "oldroot"), || {
        "pivoting into the layer".into()
    })?;
    check(chdir("/"), || "entering the layer".into())
}

/// Step 4: the layer's private directories, and the new root's mount
/// point.
fn make_layer_dirs() -> Result<()> {
    make_dir(Path::new(NEW_ROOT), 0o755)?;
    make_dir(Path::new(UPPER), 0o700)?;
    make_dir(Path::new(WORK), 0o700)?;
    make_dir(Path::new(SHM), 0o1777)
}

/// The mode for the layer's copy of a host directory. The layer is owned
/// by the sandbox user; where the host directory belongs to somebody else
/// (root's /usr for an unprivileged invoker), its copy loses the write
/// bits, so the guest meets the host's permissions rather than a
/// directory it may fill.
/// Symlinks are not followed: a tree's link must not make us look at the
/// host.
pub(super) fn guest_mode(path: &Path) -> u32 {
    match fs::symlink_metadata(path) {
        Ok(m) if !m.is_dir() => 0o755,
        Ok(m) if m.uid() == getuid().as_raw() => m.permissions().mode() & 0o7777,
        Ok(m) => m.permissions().mode() & 0o7777 & !0o222,
        Err(_) => 0o755,
    }
}

/// Whiteouts for the hidden /etc entries and the sandbox's own files, in
/// the upper layer before the overlay is mounted.
pub(super) fn prepare_etc(plan: &ViewPlan, upper: &Path) -> Result<()> {
    let lower = Path::new(OLD_ROOT).join("etc");
    for rel in &plan.etc_hidden {
        for parent in rel
            .ancestors()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            if !parent.as_os_str().is_empty() {
                make_dir(&upper.join(parent), guest_mode(&lower.join(parent)))?;
            }
        }
        // A whiteout: a character device 0:0, which overlayfs shows as absent.
        let r = mknod(&upper.join(rel), SFlag::S_IFCHR, Mode::empty(), 0);
        check(r, || format!("hiding /etc/{}", rel.display()))?;
    }
    for (rel, data) in plan.etc_files.iter().chain(&plan.etc_guest_files) {
        let path = upper.join(rel);
        fs::write(&path, data).map_err(|e| format!("writing /etc/{}: {e}", rel.display()))?;
        let mode = match (
            getuid().is_root(),
            super::static_loader::is_executable_etc_file(rel),
        ) {
            (true, false) => 0o644,
            (false, false) => 0o444,
            (true, true) => 0o755,
            (false, true) => 0o555,
        };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))
            .map_err(|e| format!("writing /etc/{}: {e}", rel.display()))?;
    }
    Ok(())
}

/// The files written for the sandbox (passwd, group, hosts, ...) belong to
/// the sandbox user, the only id an unprivileged invoker can map; a
/// read-only bind over each keeps them as unchangeable as on the host.
fn seal_etc_files(plan: &ViewPlan) -> Result<()> {
    for (rel, _) in &plan.etc_files {
        let path = new_root("etc").join(rel);
        let ro = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        let ro = ro | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        check(
            mount(
                Some(&path),
                &path,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            ),
            || format!("sealing /etc/{}", rel.display()),
        )?;
        check(
            mount(None::<&str>, &path, None::<&str>, ro, None::<&str>),
            || format!("sealing /etc/{}", rel.display()),
        )?;
    }
    Ok(())
}

/// /sys: a small tmpfs holding only devices/system/cpu (the CPUs the
/// guest may use, as glibc and nproc count them), then made read-only.
/// Its own tmpfs, not a directory of the view, so that nothing of a
/// `--rootfs` tree (a symlink at sys/devices, say) takes part in writing it.
/// The mount is read-only, not the file system: the OCI runtime's
/// `update` rewrites the CPUs through a detached copy of the mount
/// (`supervisor/src/oci/sys_cpu.rs`); the guest has no other mount of it.
fn build_sys(plan: &ViewPlan) -> Result<()> {
    let sys = new_root("sys");
    make_dir(&sys, 0o555)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let r = mount(
        Some("tmpfs"),
        &sys,
        Some("tmpfs"),
        flags,
        Some("size=64k,nr_inodes=1024,mode=0555"),
    );
    check(r, || "mounting /sys".into())?;
    let cpu = &plan.sys_cpu;
    if !(cpu.files.is_empty() && cpu.dirs.is_empty()) {
        let dir = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        let fd = open_at(None, &sys, dir, Mode::empty())
            .map_err(|e| format!("opening /sys: {}", e.desc()))?;
        write_sys_cpu(fd.as_fd(), cpu)?;
    }
    let ro = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags;
    check(
        mount(None::<&str>, &sys, None::<&str>, ro, None::<&str>),
        || "making /sys read-only".into(),
    )
}

/// Step 6: `/newroot` becomes `/`; the layer's root and the host's root
/// under it are detached, unreachable from now on.
fn enter_new_root() -> Result<()> {
    check(chdir(NEW_ROOT), || "entering the new root".into())?;
    check(pivot_root(".", "."), || "pivoting into the new root".into())?;
    check(umount2(".", MntFlags::MNT_DETACH), || {
        "detaching the old root".into()
    })?;
    check(chdir("/"), || "entering the new root".into())
}
