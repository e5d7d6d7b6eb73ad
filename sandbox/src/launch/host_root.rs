//! Step 5 of the view (`view.rs`) for the host's view, without
//! `--rootfs`: `/newroot` is a directory of the layer holding the host's
//! top directories (read-only binds, or overlays whose writes go to the
//! layer, or symlinks, as `plan.rs` decided), and /tmp. Runs in init,
//! inside the layer (steps 3-4 done); `view::build` then fills the root
//! like `rootfs.rs`'s: /proc, /dev, /sys, mounts, masks.
//!
//! Owns: those binds and overlays, with the idmapped copies of host
//! directories (`idmapped.rs`) as their sources where the kernel takes
//! them, the parents of user mount points in an overlay's upper
//! layer, and where the patched loader's bind comes (after the top
//! directories, before any user mount). Does not own: what the view contains (`plan.rs`), the /etc
//! files written in the upper layer (`view::prepare_etc`), the mounts at
//! paths the user chose (`bind.rs`).

use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::unistd::{getuid, symlinkat};

use super::bind::{attach_copy, bind, open_source};
use super::idmapped::IdmappedSources;
use super::plan::{TopKind, ViewPlan};
use super::view::{
    check, fd_of_path, guest_mode, make_dir, new_root, prepare_etc, Result, NEW_ROOT, OLD_ROOT,
    UPPER, WORK,
};

/// Step 5 for the host's view: /newroot is a directory of the layer
/// (bound on itself, so it can be pivoted into) holding the host's top
/// directories as read-only binds, overlays or symlinks, and /tmp.
pub(super) fn build(plan: &ViewPlan, idmapped: &IdmappedSources) -> Result<()> {
    check(
        mount(
            Some(NEW_ROOT),
            NEW_ROOT,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        ),
        || "binding the new root".into(),
    )?;
    let root = fd_of_path(NEW_ROOT)?;
    for top in &plan.top_dirs {
        let path = new_root(&top.name);
        match &top.kind {
            TopKind::Symlink(target) => check(symlinkat(target, None, &path), || {
                format!("creating /{}", top.name)
            })?,
            TopKind::ReadOnly => match idmapped.top(&top.name) {
                Some(copy) => attach_copy(
                    root.as_fd(),
                    copy.as_fd(),
                    &Path::new("/").join(&top.name),
                    true,
                )
                .map_err(|e| format!("/{}: {e}", top.name))?,
                None => add_read_only(root.as_fd(), &top.name)?,
            },
            TopKind::Overlay => add_overlay(plan, &top.name, idmapped.top(&top.name))?,
        }
    }
    if let Some(patched) = &plan.ldso {
        super::ldso_patch::bind_copy(root.as_fd(), Path::new(OLD_ROOT), patched);
    }
    make_dir(&new_root("tmp"), 0o1777)
}

/// The host's `/name` as it is, read-only (the mount's own locked flags
/// kept, as for `--ro`).
fn add_read_only(root: BorrowedFd<'_>, name: &str) -> Result<()> {
    let host = Path::new(OLD_ROOT).join(name);
    let src = open_source(&host, true).map_err(|e| format!("opening /{name}: {}", e.desc()))?;
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    bind(root, src.as_fd(), &Path::new("/").join(name), true, flags)
        .map_err(|e| format!("binding /{name}: {e}"))
}

/// Where an idmapped copy of a host directory is attached to serve as
/// an overlay's lower layer: in the layer, outside the new root.
const LOWER: &str = "/lower";

/// An overlay of the host's `/name`, writes going to the layer. `copy`:
/// an idmapped copy of it (`idmapped.rs`) to use as the lower layer,
/// where the kernel takes one (else the host's directory is).
fn add_overlay(plan: &ViewPlan, name: &str, copy: Option<&OwnedFd>) -> Result<()> {
    let plain = Path::new(OLD_ROOT).join(name);
    let lower = match copy.and_then(|c| staged_lower(name, c.as_fd())) {
        Some(staged) => staged,
        None => plain.clone(),
    };
    let upper = Path::new(UPPER).join(name);
    let work = Path::new(WORK).join(name);
    make_dir(&upper, guest_mode(&lower))?;
    make_dir(&work, 0o700)?;
    make_dir(&new_root(name), 0o755)?;
    if name == "etc" {
        prepare_etc(plan, &upper)?;
    }
    if !getuid().is_root() {
        prepare_mount_points(plan, name, &upper)?;
    }
    let opts = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper.display(),
        work.display()
    );
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let target = new_root(name);
    let mounted = mount(
        Some("overlay"),
        &target,
        Some("overlay"),
        flags,
        Some(opts.as_str()),
    );
    if mounted.is_err() && lower != plain {
        // A kernel that takes no idmapped lower layer here: the host's.
        let opts = opts.replacen(
            &format!("lowerdir={}", lower.display()),
            &format!("lowerdir={}", plain.display()),
            1,
        );
        let again = mount(
            Some("overlay"),
            &target,
            Some("overlay"),
            flags,
            Some(opts.as_str()),
        );
        return check(again, || format!("mounting the overlay on /{name}"));
    }
    check(mounted, || format!("mounting the overlay on /{name}"))
}

/// Attaches `copy` at LOWER/name; the path, or `None` where it cannot be.
fn staged_lower(name: &str, copy: BorrowedFd<'_>) -> Option<PathBuf> {
    let dir = Path::new(LOWER).join(name);
    fs::create_dir_all(&dir).ok()?;
    let target = open_source(&dir, true).ok()?;
    crate::sys::mount_tree::attach(copy, target.as_fd()).ok()?;
    Some(dir)
}

/// The parents of user mount points under the overlaid `/name`, made in
/// its upper layer before the overlay is mounted. An unprivileged
/// invoker's sandbox could not create them later: the host owns
/// `/usr/local`, and the kernel checks the host owner. Parents the host
/// has get its mode minus the write bits (as in `prepare_etc`; the merged
/// directory then shows the sandbox user as its owner); missing ones are
/// made 0755. A host symlink or file on the way is left alone: the
/// mount's own resolution decides what happens there.
fn prepare_mount_points(plan: &ViewPlan, name: &str, upper: &Path) -> Result<()> {
    let lower = Path::new(OLD_ROOT).join(name);
    let top = Path::new("/").join(name);
    for m in &plan.mounts {
        let Some(parent) = m.guest.strip_prefix(&top).ok().and_then(Path::parent) else {
            continue;
        };
        let mut rel = PathBuf::new();
        for part in parent.components() {
            rel.push(part);
            match fs::symlink_metadata(lower.join(&rel)) {
                Ok(md) if md.is_dir() => {
                    make_dir(&upper.join(&rel), guest_mode(&lower.join(&rel)))?
                }
                Ok(_) => break,
                Err(_) => make_dir(&upper.join(&rel), 0o755)?,
            }
        }
    }
    Ok(())
}
