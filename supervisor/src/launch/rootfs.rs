//! `--rootfs DIR`: the user's tree as the lower layer of the guest's `/`.
//! Runs in init, inside the layer (`view.rs` steps 3-4 done), and leaves
//! an overlay mounted on `/newroot` that the rest of `view::build` fills
//! like the host view's root: /proc, /dev, /sys, mounts, masks.
//!
//! Owns: binding the tree where overlayfs can name it without the host's
//! path (`/lower` in the layer, so the guest's mount table shows
//! `lowerdir=/lower`), the upper layer's skeleton, and the overlay.
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

use std::os::fd::BorrowedFd;
use std::path::Path;

use nix::mount::{mount, MsFlags};

use super::bind::proc_fd;
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

/// Mounts the overlay of the tree `src` (an O_PATH descriptor of the
/// `--rootfs` directory) on `/newroot`.
pub fn mount_root(plan: &ViewPlan, src: BorrowedFd<'_>) -> Result<()> {
    make_dir(Path::new(LOWER), 0o755)?;
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
    check(
        mount(
            Some("overlay"),
            NEW_ROOT,
            Some("overlay"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts.as_str()),
        ),
        || {
            "mounting the overlay on / (is the root file system on a file system overlayfs accepts as a lower layer?)".into()
        },
    )
}
