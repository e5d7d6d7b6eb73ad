//! The view's /proc: a procfs of the sandbox's own pid namespace, its
//! directories of host hardware masked, and its global host files
//! covered, so that the kernel's own procfs — what a guest reaches when
//! it dodges the VFS's resolution of an open (a symlink swapped, the path
//! rewritten, between our lookup and the kernel's) — shows no host fact
//! the sandbox serves rewritten.
//!
//! Owns: mounting /proc, the empty directories over its host directories,
//! and the covers, as the `procfs` crate plans them: each file of
//! `procfs::proc_covers` (where `procfs::wants_cover`)
//! gets a bind of a file of a tiny read-only tmpfs made in the layer
//! outside the new root (empty, or one empty line for `/proc/cmdline`),
//! which the guest reaches only through the covers; each masked directory
//! a bind of an empty directory of the same tmpfs (one superblock for
//! all, not one tmpfs per directory: a new superblock costs about twice a
//! bind, and its teardown more). Does not own: which
//! files are covered, which directories masked or parts read-only, or
//! recognising a cover and serving the file in its place
//! (`procfs/src/covers.rs`, `served.rs`). The mounts are made here, in
//! the engine, beside every other mount of the view: they need launch's
//! host-call wrappers (`bind.rs`'s read-only bind keeps the locked mount
//! flags) and its order of steps, which the `procfs` crate, below the
//! engine, has neither of.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use procfs::{proc_covers, wants_cover, Limited, MASKED_PROC_DIRS, READ_ONLY_PROC};

use super::bind::bind_read_only_source;
use super::view::{check, make_dir, Result};

/// Where procfs is bound read-only in the layer (out of the guest's
/// reach, detached with the layer), as the source of the read-only parts.
const PROC_RO: &str = "/proc-ro";

/// Where the covers' tmpfs is mounted in the layer (out of the guest's
/// reach, like the overlays' upper and work directories).
const COVERS: &str = "/covers";

/// The empty directory of the covers' tmpfs bound over each masked
/// directory.
const EMPTY_DIR: &str = "/covers/empty";

/// Mounts procfs at `proc`, masks its host directories and covers its
/// global host files.
pub(crate) fn mount_proc(proc: &Path, limits: Limited) -> Result<()> {
    make_dir(proc, 0o555)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    check(
        mount(Some("proc"), proc, Some("proc"), flags, None::<&str>),
        || "mounting /proc".into(),
    )?;
    let covers: Vec<_> = proc_covers(limits).collect();
    let mut texts: Vec<&[u8]> = Vec::new();
    for (_, text) in &covers {
        if !texts.contains(text) {
            texts.push(text);
        }
    }
    let sources = make_cover_files(&texts)?;
    bind_read_only_parts(proc)?;
    mask_proc_dirs(proc)?;
    cover_global_files(proc, &covers, &texts, &sources, limits.fenced)
}

/// Binds each of [`READ_ONLY_PROC`] over itself, read-only: procfs is
/// bound at [`PROC_RO`] and made read-only there (one remount), and each
/// part is bound from that mount, whose flags a bind keeps.
fn bind_read_only_parts(proc: &Path) -> Result<()> {
    make_dir(Path::new(PROC_RO), 0o555)?;
    bind_read_only_source(proc, Path::new(PROC_RO), false, false, "/proc")?;
    for name in READ_ONLY_PROC {
        let r = mount(
            Some(&Path::new(PROC_RO).join(name)),
            &proc.join(name),
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        );
        match r {
            Err(nix::errno::Errno::ENOENT) => {}
            r => check(r, || format!("making /proc/{name} read-only"))?,
        }
    }
    Ok(())
}

/// Binds the covers' empty directory over each masked directory procfs
/// has (read-only, nosuid, nodev, noexec: a bind keeps its source
/// mount's flags).
fn mask_proc_dirs(proc: &Path) -> Result<()> {
    for name in MASKED_PROC_DIRS {
        let dir = proc.join(name);
        if !dir.is_dir() {
            continue;
        }
        let r = mount(
            Some(EMPTY_DIR),
            &dir,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        );
        check(r, || format!("masking {}", dir.display()))?;
    }
    Ok(())
}

/// Binds a cover over each covered file procfs has that others may read
/// (one mount each; a name this kernel lacks, or only the host's root
/// may read, is skipped; when the guest's reads are `fenced`, so is
/// every file a native read cannot reach and whose stat tells no size).
fn cover_global_files(
    proc: &Path,
    covers: &[(&str, &[u8])],
    texts: &[&[u8]],
    sources: &[PathBuf],
    fenced: bool,
) -> Result<()> {
    for &(path, text) in covers {
        let Some(rel) = path.strip_prefix("/proc/") else {
            continue;
        };
        let Some(i) = texts.iter().position(|t| *t == text) else {
            continue;
        };
        let src = sources.get(i).ok_or("covering /proc: no cover file")?;
        let target = proc.join(rel);
        let Ok(meta) = fs::metadata(&target) else {
            continue;
        };
        if !wants_cover(path, meta.permissions().mode(), meta.len(), fenced) {
            continue;
        }
        let r = mount(
            Some(src),
            &target,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        );
        check(r, || format!("covering {path}"))?;
    }
    Ok(())
}

/// A read-only tmpfs at [`COVERS`] holding one file of each text, mode
/// 0444, and [`EMPTY_DIR`], mode 0555; the files' paths, in the order of
/// `texts`.
fn make_cover_files(texts: &[&[u8]]) -> Result<Vec<PathBuf>> {
    make_dir(Path::new(COVERS), 0o555)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let opts = Some("size=4k,nr_inodes=8,mode=0555");
    check(
        mount(Some("tmpfs"), COVERS, Some("tmpfs"), flags, opts),
        || "mounting the covers of /proc".into(),
    )?;
    let what = |e: std::io::Error| format!("covering /proc: {e}");
    let mut paths = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let path = Path::new(COVERS).join(i.to_string());
        fs::write(&path, text).map_err(what)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).map_err(what)?;
        paths.push(path);
    }
    make_dir(Path::new(EMPTY_DIR), 0o555)?;
    let ro = MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags;
    check(
        mount(None::<&str>, COVERS, None::<&str>, ro, None::<&str>),
        || "making the covers of /proc read-only".into(),
    )?;
    Ok(paths)
}
