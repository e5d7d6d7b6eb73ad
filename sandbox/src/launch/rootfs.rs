//! `--rootfs DIR`: the user's tree as the lower layer of the guest's `/`
//! or, for the OCI runtime with a writable bundle root, as `/` itself.
//! Runs in init, inside the layer (`view.rs` steps 3-4 done), and leaves
//! an overlay (or the tree) mounted on `/newroot` that the rest of
//! `view::build` fills like the host view's root: /proc, /dev, /sys,
//! mounts, masks.
//!
//! Owns: binding the tree where overlayfs can name it without the host's
//! path (`/lower` in the layer, so the guest's mount table shows
//! `lowerdir=/lower`), the upper layer's skeleton, and the overlay; or
//! the tree bound in place with its mount points and the sandbox's /etc
//! files bound over the tree's ([`bind_in_place`]).
//! Does not own: what the view contains (`plan.rs`) or the /etc text
//! (`etc.rs`).
//!
//! The tree is never written: writes land in the upper layer, which is in
//! the `--disk` tmpfs and vanishes with the run. The tree may come from a
//! stranger (an unpacked image), so nothing the supervisor writes while
//! building the view goes through it: the mount points /proc, /dev, /sys
//! and /tmp and the directory /etc are real directories of the upper
//! layer, created before the overlay exists, which hide whatever the tree
//! has at those names (a symlink to a host path, say); the files of /etc
//! are written there too; everything else is created through
//! `RESOLVE_IN_ROOT` lookups (`bind.rs`).

use std::fs;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use nix::mount::{mount, MsFlags};

use super::bind::{bind, locked_flags, open_source, proc_fd};
use super::plan::ViewPlan;
use super::view::{check, guest_mode, make_dir, prepare_etc, Result, NEW_ROOT, UPPER, WORK};

/// Where the tree is bound in the layer, for overlayfs to name it.
const LOWER: &str = "/lower";

/// Directories of the upper layer made before the overlay, with their
/// modes: the view's mount points and its /tmp.
const SKELETON: &[(&str, u32)] = &[
    ("proc", 0o555),
    ("dev", 0o755),
    ("sys", 0o555),
    ("tmp", 0o1777),
];

/// Mounts the tree `src` (an O_PATH descriptor of the `--rootfs`
/// directory) on `/newroot`: in place when the plan says so, else as the
/// lower layer of an overlay; `shifted`: a detached copy of the tree with
/// the guest's ids (`idmapped.rs`) to use as `/` or as that layer, where
/// the kernel takes it (with [`ViewPlan::mounts_keep_ids`], always).
pub fn mount_root(
    plan: &ViewPlan,
    src: BorrowedFd<'_>,
    shifted: Option<BorrowedFd<'_>>,
) -> Result<()> {
    match plan.rootfs_in_place {
        true => bind_in_place(plan, src, shifted),
        false => mount_overlay(plan, src, shifted),
    }
}

/// Binds the tree at [`LOWER`]: the shifted copy when there is one and
/// it attaches, else the tree itself. Whether the copy was used.
fn bind_lower(src: BorrowedFd<'_>, shifted: Option<BorrowedFd<'_>>) -> Result<bool> {
    if let Some(copy) = shifted {
        let attached = open_source(Path::new(LOWER), true)
            .map_err(|e| e.desc().to_string())
            .and_then(|target| {
                crate::sys::mount_tree::attach(copy, target.as_fd())
                    .map_err(|e| e.desc().to_string())
            });
        if attached.is_ok() {
            return Ok(true);
        }
    }
    // Not recursive: mounts under the tree on the host stay out.
    check(
        mount(
            Some(proc_fd(src).as_str()),
            LOWER,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        ),
        || "binding the root file system".into(),
    )?;
    Ok(false)
}

/// The overlay of the tree, its upper layer in the `--disk` layer.
fn mount_overlay(
    plan: &ViewPlan,
    src: BorrowedFd<'_>,
    shifted: Option<BorrowedFd<'_>>,
) -> Result<()> {
    make_dir(Path::new(LOWER), 0o755)?;
    let used_copy = bind_lower(src, shifted)?;
    let upper = Path::new(UPPER).join("root");
    let work = Path::new(WORK).join("root");
    // The tree's / as the guest sees it: its mode, without the write
    // bits when it is not the invoker's (see `guest_mode`).
    make_dir(&upper, guest_mode(Path::new(LOWER)))?;
    make_dir(&work, 0o700)?;
    for (name, mode) in SKELETON {
        make_dir(&upper.join(name), *mode)?;
    }
    let etc = upper.join("etc");
    make_dir(&etc, guest_mode(&Path::new(LOWER).join("etc")))?;
    prepare_etc(plan, &etc)?;
    let opts = format!(
        "lowerdir={LOWER},upperdir={},workdir={},userxattr",
        upper.display(),
        work.display()
    );
    let overlay = || {
        mount(
            Some("overlay"),
            NEW_ROOT,
            Some("overlay"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts.as_str()),
        )
    };
    let mut mounted = overlay();
    if mounted.is_err() && used_copy && !plan.mounts_keep_ids {
        // A kernel that takes no idmapped lower layer here: the tree
        // as it is.
        let _ = nix::mount::umount2(LOWER, nix::mount::MntFlags::MNT_DETACH);
        bind_lower(src, None)?;
        mounted = overlay();
    }
    check(mounted, || {
        "mounting the overlay on / (is the root file system on a file system overlayfs accepts as a lower layer?)".into()
    })
}

/// The tree itself as `/` (the OCI runtime's writable bundle root, as
/// runc uses it): the guest's writes land in the tree, where the engine
/// looks for them (`docker cp` out, `docker diff`). The mount points
/// /proc, /dev and /sys, and /etc, are made in the tree if missing and
/// must be real directories there (a symlink would carry a mount
/// elsewhere); /tmp is
/// the tree's, made 1777 if missing. The sandbox's /etc files live in
/// the layer and are bound over the tree's (made empty if missing), so
/// the tree's own are never written by us. `shifted`: the tree's idmapped
/// copy (nosuid and nodev already), attached in place of a bind.
fn bind_in_place(
    plan: &ViewPlan,
    src: BorrowedFd<'_>,
    shifted: Option<BorrowedFd<'_>>,
) -> Result<()> {
    match shifted {
        Some(copy) => {
            let target = open_source(Path::new(NEW_ROOT), true)
                .map_err(|e| format!("opening {NEW_ROOT}: {}", e.desc()))?;
            crate::sys::mount_tree::attach(copy, target.as_fd()).map_err(|e| {
                format!(
                    "attaching the root file system's idmapped mount: {}",
                    e.desc()
                )
            })?;
        }
        None => bind_plain(src)?,
    }
    let root = Path::new(NEW_ROOT);
    for (name, mode) in SKELETON.iter().chain(&[("etc", 0o755)]) {
        let path = root.join(name);
        make_dir(&path, *mode)?;
        let real_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if !real_dir && *name != "tmp" {
            return Err(format!("the root file system's /{name} is not a directory"));
        }
    }
    bind_etc_files(plan)
}

/// The tree bound (not recursively: mounts under it on the host stay
/// out) at `/newroot`, nosuid and nodev.
fn bind_plain(src: BorrowedFd<'_>) -> Result<()> {
    let r = mount(
        Some(proc_fd(src).as_str()),
        NEW_ROOT,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    );
    check(r, || "binding the root file system".into())?;
    let flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let flags = flags | locked_flags(src);
    let r = mount(None::<&str>, NEW_ROOT, None::<&str>, flags, None::<&str>);
    check(r, || "remounting the root file system nosuid".into())
}

/// The sandbox's /etc files, written in the layer and bound over the
/// tree's paths (confined to the tree, `bind.rs`).
fn bind_etc_files(plan: &ViewPlan) -> Result<()> {
    let store = Path::new(UPPER).join("etc");
    make_dir(&store, 0o755)?;
    prepare_etc(plan, &store)?;
    let root = open_source(Path::new(NEW_ROOT), true)
        .map_err(|e| format!("opening the new root: {}", e.desc()))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    for (rel, _) in plan.etc_files.iter().chain(&plan.etc_guest_files) {
        let file = open_source(&store.join(rel), false)
            .map_err(|e| format!("opening /etc/{}: {}", rel.display(), e.desc()))?;
        let guest = Path::new("/etc").join(rel);
        bind(root.as_fd(), file.as_fd(), &guest, false, flags)
            .map_err(|e| format!("/etc/{}: {e}", rel.display()))?;
    }
    Ok(())
}
