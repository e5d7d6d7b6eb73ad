//! The view's /dev: a small read-only tmpfs holding the host's harmless
//! devices (null, zero, full, random, urandom, tty), each bound in
//! read-only, a private devpts, shm from the layer (or an empty shm
//! directory for the engine's, `dev_shm.rs`), and the usual symlinks.
//!
//! Owns: those mounts. Does not own: which devices (`plan.rs`),
//! `--mask`'s binds of /dev/null (`bind.rs`, read-only binds as well), or
//! an OCI engine's /dev/shm (`dev_shm.rs`).
//!
//! Why each device is bound read-only: the bind shares the host's inode,
//! and a guest whose uid is the host's owner of it (root's sandbox maps
//! its root to the host's root, without any capability) could otherwise
//! `chmod`, `chown`, `touch` or set an ACL on the host's `/dev/urandom`
//! (the owner needs no capability for that), for every process on the
//! host. A read-only mount refuses each with EROFS; reading and writing a
//! device are not changes to the mount, so the devices work as before.
//! The host's /dev is bound read-only once, in the layer, and each device
//! bound from there inherits the flag: one remount in all, not one a
//! device.

use std::fs;
use std::path::Path;

use nix::mount::{mount, MsFlags};
use nix::unistd::symlinkat;

use super::bind::bind_read_only_source;
use super::view::{check, make_dir, Result, SHM};

/// Where the host's /dev is bound read-only in the layer (out of the
/// guest's reach, and detached with the layer at the final pivot).
const HOST_DEV: &str = "/hostdev";

/// Builds /dev at `dev` with `nodes` of the host's /dev (under
/// `old_root`); /dev/shm is the layer's when `layer_shm`, else an empty
/// directory that `dev_shm.rs` mounts on.
pub(super) fn build_dev(
    dev: &Path,
    nodes: &[&str],
    old_root: &Path,
    layer_shm: bool,
) -> Result<()> {
    make_dir(dev, 0o755)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
    let r = mount(
        Some("tmpfs"),
        dev,
        Some("tmpfs"),
        flags,
        Some("size=64k,nr_inodes=256,mode=0755"),
    );
    check(r, || "mounting /dev".into())?;
    if !nodes.is_empty() {
        bind_host_dev_read_only(&old_root.join("dev"))?;
    }
    for name in nodes {
        let target = dev.join(name);
        fs::write(&target, b"").map_err(|e| format!("creating /dev/{name}: {e}"))?;
        let host = Path::new(HOST_DEV).join(name);
        let r = mount(
            Some(&host),
            &target,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        );
        check(r, || format!("binding /dev/{name}"))?;
    }
    mount_pts_and_shm(dev, flags, layer_shm)?;
    for (name, target) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        check(symlinkat(target, None, &dev.join(name)), || {
            format!("creating /dev/{name}")
        })?;
    }
    let ro = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags;
    check(
        mount(None::<&str>, dev, None::<&str>, ro, None::<&str>),
        || "making /dev read-only".into(),
    )
}

/// Binds the host's /dev (`host`) at [`HOST_DEV`], read-only. The bind
/// takes the submounts along (/dev/pts, /dev/shm...): the kernel refuses
/// to bind a mount without the mounts a more privileged namespace put on
/// it.
fn bind_host_dev_read_only(host: &Path) -> Result<()> {
    make_dir(Path::new(HOST_DEV), 0o755)?;
    bind_read_only_source(host, Path::new(HOST_DEV), true, true, "the host's /dev")
}

/// A private devpts at `dev/pts` and the layer's shm at `dev/shm` (when
/// `layer_shm`; the directory alone otherwise).
fn mount_pts_and_shm(dev: &Path, flags: MsFlags, layer_shm: bool) -> Result<()> {
    let pts = dev.join("pts");
    make_dir(&pts, 0o755)?;
    let r = mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        flags,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    );
    check(r, || "mounting /dev/pts".into())?;
    let shm = dev.join("shm");
    make_dir(&shm, 0o1777)?;
    if !layer_shm {
        return Ok(());
    }
    let r = mount(
        Some(SHM),
        &shm,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    );
    check(r, || "binding /dev/shm".into())
}
