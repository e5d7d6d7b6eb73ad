//! Mounts at paths the user chose, inside the view under construction:
//! the `--ro`/`--rw`/`--tmpfs` mounts, the host's current directory, the
//! `--remount-ro` paths and the `--mask` paths.
//!
//! Owns: opening bind sources (before the host's paths go away),
//! creating mount points confined to the new root (`openat2` with
//! `RESOLVE_IN_ROOT`, so a symlink in the view cannot send a mount
//! elsewhere), bind + remount with the flags the kernel locks, and tmpfs
//! mounts. Mounts go through `/proc/self/fd/N` of the host's procfs,
//! reachable at /oldroot/proc while the view is built. Does not own the
//! fixed parts of the view (`view.rs`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{mount, MsFlags};
use nix::sys::stat::{fstat, mkdirat, Mode, SFlag};
use nix::sys::statvfs::{fstatvfs, FsFlags};

use super::plan::{MountWhat, PlannedMount};
use crate::sys::fd::{open_at, open_in_root};
use crate::sys::mount_tree::make_tree_read_only;

/// Our descriptors as paths, through the host's procfs under the layer.
const PROC_FD: &str = "/oldroot/proc/self/fd";

type Result<T> = std::result::Result<T, String>;

pub fn proc_fd(fd: BorrowedFd<'_>) -> String {
    format!("{PROC_FD}/{}", fd.as_raw_fd())
}

pub fn open_source(path: &Path, dir: bool) -> nix::Result<OwnedFd> {
    let flags = if dir {
        OFlag::O_PATH | OFlag::O_DIRECTORY
    } else {
        OFlag::O_PATH
    };
    open_at(None, path, flags, Mode::empty())
}

pub fn open_mount_source(m: &PlannedMount) -> Result<Option<OwnedFd>> {
    match &m.what {
        MountWhat::Bind { host, .. } => open_source(host, false)
            .map(Some)
            .map_err(|e| format!("{}: {}: {}", m.label, host.display(), e.desc())),
        MountWhat::Tmpfs { .. } => Ok(None),
    }
}

pub fn add_user_mount(root: BorrowedFd<'_>, m: &PlannedMount, src: Option<&OwnedFd>) -> Result<()> {
    match (&m.what, src) {
        (
            MountWhat::Bind {
                writable, is_dir, ..
            },
            Some(src),
        ) => {
            let mut flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
            if !writable {
                flags |= MsFlags::MS_RDONLY;
            }
            bind(root, src.as_fd(), &m.guest, *is_dir, flags)
        }
        (MountWhat::Tmpfs { size }, _) => {
            let target =
                ensure_in_root(root, &m.guest, true).map_err(|e| mount_point_error(&m.guest, e))?;
            let opts = format!("size={size},mode=0755");
            mount_tmpfs(
                target.as_fd(),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                &opts,
            )
        }
        (MountWhat::Bind { .. }, None) => Err("no source".into()),
    }
}

pub(super) fn mount_tmpfs(target: BorrowedFd<'_>, flags: MsFlags, opts: &str) -> Result<()> {
    let r = mount(
        Some("tmpfs"),
        proc_fd(target).as_str(),
        Some("tmpfs"),
        flags,
        Some(opts),
    );
    r.map_err(|e| format!("cannot mount: {}", e.desc()))
}

/// `--mask PATH`, as runc masks paths: a directory gets an empty
/// read-only tmpfs over it, anything else a read-only bind of /dev/null
/// (`null`), so it reads as empty and refuses writes (EROFS). The path
/// is resolved in the view (`RESOLVE_IN_ROOT`; a symlink's target is
/// masked); a path that does not exist is not an error.
pub fn add_mask(root: BorrowedFd<'_>, null: BorrowedFd<'_>, guest: &Path) -> Result<()> {
    let target = match open_in_root(root, guest, OFlag::O_PATH) {
        Ok(fd) => fd,
        Err(Errno::ENOENT | Errno::ENOTDIR) => return Ok(()),
        Err(e) => return Err(format!("cannot open: {}", e.desc())),
    };
    let is_dir = fstat(target.as_raw_fd())
        .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR)
        .map_err(|e| format!("cannot stat: {}", e.desc()))?;
    let ro = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    if is_dir {
        mount_tmpfs(target.as_fd(), ro, "size=4k,nr_inodes=1,mode=0555")
    } else {
        // Not nodev: /dev/null must stay usable to read as empty.
        bind(root, null, guest, false, ro.difference(MsFlags::MS_NODEV))
    }
}

/// `--remount-ro PATH`, as runc's `readonlyPaths` (and bwrap's
/// `--remount-ro`): what the view shows at `guest` is bound on itself with
/// its submounts, and the new mounts are made read-only together
/// (`mount_setattr` with `AT_RECURSIVE`: runc's remount leaves submounts
/// writable). Resolved in the view like a mask; a path that does not
/// exist is not an error. Only the sandbox's mount namespace changes.
pub fn remount_read_only(root: BorrowedFd<'_>, guest: &Path) -> Result<()> {
    let target = match open_in_root(root, guest, OFlag::O_PATH) {
        Ok(fd) => fd,
        Err(Errno::ENOENT | Errno::ENOTDIR) => return Ok(()),
        Err(e) => return Err(format!("cannot open: {}", e.desc())),
    };
    let at = proc_fd(target.as_fd());
    let r = mount(
        Some(at.as_str()),
        at.as_str(),
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    );
    r.map_err(|e| format!("cannot mount: {}", e.desc()))?;
    // Reopen: `target` still names the object under the new mount.
    let mounted = open_in_root(root, guest, OFlag::O_PATH)
        .map_err(|e| format!("cannot reopen: {}", e.desc()))?;
    make_tree_read_only(mounted.as_fd()).map_err(|e| format!("cannot remount: {}", e.desc()))
}

fn mount_point_error(guest: &Path, e: Errno) -> String {
    format!(
        "cannot create mount point {}: {}",
        guest.display(),
        e.desc()
    )
}

/// Bind-mounts `src` at `guest` (inside `root`), then remounts it with
/// `flags` plus the flags the source mount has and we may not clear.
pub fn bind(
    root: BorrowedFd<'_>,
    src: BorrowedFd<'_>,
    guest: &Path,
    dir: bool,
    flags: MsFlags,
) -> Result<()> {
    let target = ensure_in_root(root, guest, dir).map_err(|e| mount_point_error(guest, e))?;
    let r = mount(
        Some(proc_fd(src).as_str()),
        proc_fd(target.as_fd()).as_str(),
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    );
    r.map_err(|e| format!("cannot mount: {}", e.desc()))?;
    // Reopen: `target` still names the directory under the new mount.
    let mounted = open_in_root(root, guest, OFlag::O_PATH)
        .map_err(|e| format!("cannot reopen: {}", e.desc()))?;
    let flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | flags | locked_flags(src);
    let r = mount(
        None::<&str>,
        proc_fd(mounted.as_fd()).as_str(),
        None::<&str>,
        flags,
        None::<&str>,
    );
    r.map_err(|e| format!("cannot remount: {}", e.desc()))
}

/// Attaches `copy`, a detached idmapped copy of a source
/// (`idmapped.rs`, its flags already set), at `guest`.
pub fn attach_copy(
    root: BorrowedFd<'_>,
    copy: BorrowedFd<'_>,
    guest: &Path,
    dir: bool,
) -> Result<()> {
    let target = ensure_in_root(root, guest, dir).map_err(|e| mount_point_error(guest, e))?;
    crate::sys::mount_tree::attach(copy, target.as_fd())
        .map_err(|e| format!("cannot attach the idmapped mount: {}", e.desc()))
}

/// Covers the read-only directory bind at `guest` with a read-only
/// overlay of itself, so that the guest sees the same tree but reaches
/// none of its sockets and FIFOs. Overlayfs shows a lower layer's socket
/// as an inode of its own, which no listener is bound to: a connect (or a
/// datagram sent there) answers ECONNREFUSED, as runsc answers for a host
/// socket without `--host-uds`. A FIFO likewise is the overlay inode's own
/// pipe, which no host process holds (a writer waits for a reader of the
/// sandbox's; a non-blocking one gets ENXIO). Without it a guest run from
/// a directory holding a socket of the host's (the invoker's gpg-agent or
/// tmux server beneath the home directory, a service's socket beneath
/// /run) reached that service, and wrote into the host's named pipes
/// (FIFOs ignore a read-only mount).
///
/// `empty`: an empty directory of the layer, the second lower layer that
/// overlayfs wants when it has no upper one. The layers are named through
/// `/proc/self/fd/N`, which needs no escaping of the paths (and names no
/// host path in the mount table). `xino=off`: the layers are on two file
/// systems (the host's, the layer's tmpfs), and without the inode-number
/// remapping a walk costs less (`os.walk` of 472 directories: 6.9 ms on
/// the bind, 8.4 through the overlay, 8.8 with xino; PERFORMANCE.md
/// 2026-12-01 21:40). Where the kernel refuses the overlay (a file system
/// it cannot stack on), the plain bind stays.
pub fn share_files_only(root: BorrowedFd<'_>, guest: &Path, empty: BorrowedFd<'_>) {
    let Ok(bound) = open_in_root(root, guest, OFlag::O_PATH | OFlag::O_DIRECTORY) else {
        return;
    };
    let bound = proc_fd(bound.as_fd());
    let opts = format!("lowerdir={bound}:{},xino=off", proc_fd(empty));
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let _ = mount(
        Some("overlay"),
        bound.as_str(),
        Some("overlay"),
        flags,
        Some(opts.as_str()),
    );
}

/// Binds `src` at the directory `target` of the layer (out of the
/// guest's reach: a source for read-only binds into the view) with its
/// submounts when `recursive`, and makes the new mount read-only, nosuid,
/// nodev (unless `devices`) and noexec, keeping the flags the source's
/// mount has locked. `what` names it in errors.
pub fn bind_read_only_source(
    src: &Path,
    target: &Path,
    recursive: bool,
    devices: bool,
    what: &str,
) -> Result<()> {
    let rec = if recursive {
        MsFlags::MS_REC
    } else {
        MsFlags::empty()
    };
    mount(
        Some(src),
        target,
        None::<&str>,
        MsFlags::MS_BIND | rec,
        None::<&str>,
    )
    .map_err(|e| format!("binding {what}: {}", e.desc()))?;
    let bound = open_source(target, true).map_err(|e| format!("opening {what}: {}", e.desc()))?;
    let mut flags = MsFlags::MS_REMOUNT
        | MsFlags::MS_BIND
        | MsFlags::MS_RDONLY
        | MsFlags::MS_NOSUID
        | MsFlags::MS_NOEXEC
        | locked_flags(bound.as_fd());
    if !devices {
        flags |= MsFlags::MS_NODEV;
    }
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("making {what} read-only: {}", e.desc()))
}

/// Flags of the mount holding `fd` that a remount must keep: the kernel
/// locks them on mounts inherited from a more privileged namespace.
pub fn locked_flags(fd: BorrowedFd<'_>) -> MsFlags {
    let Ok(st) = fstatvfs(fd) else {
        return MsFlags::empty();
    };
    let f = st.flags();
    let mut out = MsFlags::empty();
    for (st_flag, ms_flag) in [
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(st_flag) {
            out |= ms_flag;
        }
    }
    if !f.intersects(FsFlags::ST_NOATIME | FsFlags::ST_RELATIME) {
        out |= MsFlags::MS_STRICTATIME;
    }
    out
}

/// Opens `guest` inside `root` (O_PATH), creating what is missing:
/// directories along the way, and a directory or empty file at the end.
pub fn ensure_in_root(
    root: BorrowedFd<'_>,
    guest: &Path,
    dir: bool,
) -> std::result::Result<OwnedFd, Errno> {
    let rel = guest.strip_prefix("/").unwrap_or(guest);
    let comps: Vec<_> = rel.components().collect();
    let mut parent = open_in_root(root, Path::new("/"), OFlag::O_PATH | OFlag::O_DIRECTORY)?;
    let mut so_far = PathBuf::from("/");
    for (i, c) in comps.iter().enumerate() {
        so_far.push(c);
        let want_dir = dir || i + 1 < comps.len();
        let flags = if want_dir {
            OFlag::O_PATH | OFlag::O_DIRECTORY
        } else {
            OFlag::O_PATH
        };
        let fd = match open_in_root(root, &so_far, flags) {
            Err(Errno::ENOENT) => {
                let name = Path::new(c.as_os_str());
                let made = if want_dir {
                    mkdirat(
                        Some(parent.as_raw_fd()),
                        name,
                        Mode::from_bits_truncate(0o755),
                    )
                } else {
                    let create = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY;
                    open_at(
                        Some(parent.as_fd()),
                        name,
                        create,
                        Mode::from_bits_truncate(0o644),
                    )
                    .map(drop)
                };
                match made {
                    Ok(()) | Err(Errno::EEXIST) => open_in_root(root, &so_far, flags)?,
                    Err(e) => return Err(e),
                }
            }
            r => r?,
        };
        parent = fd;
    }
    Ok(parent)
}
