//! The fence: what the guest's Landlock domain lets the kernel open for
//! reading, and so which read opens the handlers may CONTINUE.
//!
//! Where the kernel has Landlock, init puts the guest in a domain that
//! handles `LANDLOCK_ACCESS_FS_READ_FILE` and grants it beneath every
//! top-level entry of the view's root but `/proc`, and beneath
//! `/proc/sys` and `/proc/sysvipc` ([`granted`]). The root of every mount
//! beneath a granted entry, and the directories just below a root with
//! few entries, get rules of their own, which grant nothing the entry's
//! does not but end the kernel's rule walk there (`walk_ends.rs`). A
//! native open of any
//! other file of the kernel's procfs for reading then fails with EACCES,
//! whatever the guest raced: the path the VFS resolved and the one the
//! kernel opens may differ, but the kernel checks the file it opens.
//! What the sandbox means to give there, the supervisor opens itself and
//! installs (ADDFD), which Landlock does not restrict.
//!
//! Owns: the choice of the grants (shared by init, which makes the rules,
//! and the handlers), and [`Fence::admits`]: whether an object the VFS
//! resolved lies beneath a grant, so that a read open CONTINUEd to it
//! succeeds ([`Fence::leaves_read_write`] the same for an `O_RDWR` open,
//! which the domain checks as a read too). Does not own: the Landlock calls
//! (`sandbox/src/sys/landlock.rs`), nor what is served instead
//! (the syscalls crate's `handlers/open/`, `served.rs`).
//!
//! `/proc/sys` and `/proc/sysvipc` stay native because their files
//! answer for the opener's namespaces (net, ipc, user), which a file the
//! supervisor opened would take from the host's; their host-only facts
//! are covered at start-up (`covers.rs`). Directories need `READ_DIR`,
//! which the domain does not handle.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use vfs::Resolver;

use super::tasks::Named;

mod walk_ends;

/// The top-level name left out of the grants: the kernel's procfs.
const PROC: &[u8] = b"proc";
/// Parts of procfs granted all the same (see the module doc).
const NATIVE_IN_PROC: [&CStr; 2] = [c"proc/sys", c"proc/sysvipc"];

/// `O_PATH` descriptors of what the guest's domain grants reading
/// beneath: every entry of `root` but `proc` (symlinks left out: the
/// kernel checks the file a path leads to, never the link), then
/// `/proc/sys` and `/proc/sysvipc`; [`granted_ids`] names the same. Then
/// the root of each mount of `mount_points` (the view's, absolute, as
/// init's mountinfo names them) beneath one of those entries, and the
/// directories just below such a root when it holds few entries
/// (`walk_ends.rs`).
///
/// Those last rules change nothing that is granted: Landlock's walk from
/// a file up to the root crosses mounts, so the entry's rule covers every
/// file of a mount beneath it already. They make the check cheaper: the
/// kernel walks from the opened file up, one dentry at a time (a rule
/// lookup and a reference taken and dropped at each, and a mount
/// crossing at each mount's root), until a rule grants the access; for
/// `--ro DIR`'s `files/N` the rule on `DIR/files` ends the walk there,
/// rather than at DIR or at the view's top-level entry.
pub fn granted(root: BorrowedFd<'_>, mount_points: &[Vec<u8>]) -> Result<Vec<OwnedFd>, Errno> {
    let mut out = Vec::new();
    let mut entries = Vec::new();
    for name in top_level_names(root)? {
        let path_flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = match vfs::sys::openat(root, &name, path_flags, 0) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        if !is_symlink(&vfs::sys::fstat(fd.as_fd())?) {
            out.push(fd);
            entries.push(name.into_bytes());
        }
    }
    for path in NATIVE_IN_PROC {
        let path_flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        match vfs::sys::openat(root, path, path_flags, 0) {
            Ok(fd) => out.push(fd),
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    out.extend(walk_ends::rules(root, &entries, mount_points));
    Ok(out)
}

/// The identities (device, inode) of what [`granted`] opens, by a stat
/// of each name: no descriptor is opened or kept.
fn granted_ids(root: BorrowedFd<'_>) -> Result<Vec<(u64, u64)>, Errno> {
    let nofollow = libc::AT_SYMLINK_NOFOLLOW;
    let mut out = Vec::new();
    for name in top_level_names(root)? {
        match vfs::sys::fstatat(root, &name, nofollow) {
            Ok(st) if !is_symlink(&st) => out.push((st.st_dev, st.st_ino)),
            Ok(_) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    for path in NATIVE_IN_PROC {
        match vfs::sys::fstatat(root, path, nofollow) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                out.push((st.st_dev, st.st_ino))
            }
            // What `O_DIRECTORY | O_NOFOLLOW` refuses.
            Ok(st) if is_symlink(&st) => return Err(Errno::ELOOP),
            Ok(_) => return Err(Errno::ENOTDIR),
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The names at the root the grants start from: every entry but `.`,
/// `..` and `proc`.
fn top_level_names(root: BorrowedFd<'_>) -> Result<Vec<std::ffi::CString>, Errno> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let listing = vfs::sys::openat(root, c".", flags, 0)?;
    let mut dir = nix::dir::Dir::from(listing)?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let name = entry?.file_name().to_owned();
        if !matches!(name.to_bytes(), b"." | b".." | PROC) {
            names.push(name);
        }
    }
    Ok(names)
}

fn is_symlink(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The handlers' side of the fence: the device of the view's procfs,
/// the identities of the top-level entries granted, and the root's times.
#[derive(Debug)]
pub struct Fence {
    proc_dev: Option<u64>,
    granted: Vec<(u64, u64)>,
    /// The root's change and modification times when the grants were
    /// listed: while they stay, no name was made, removed or renamed at
    /// the root, and every object but procfs's lies beneath a grant.
    /// (Read by a stat, they are fine-grained for the next change on file
    /// systems with multigrain timestamps, tmpfs since Linux 6.13; on
    /// older kernels a name made in the same clock tick as the view's
    /// last one is missed, and a read there fails EACCES.)
    root_times: RootTimes,
    /// The root's times when [`Fence::root_changed`] last looked.
    seen_root: std::sync::Mutex<RootTimes>,
}

/// The root's `(ctime, mtime)` in seconds and nanoseconds.
type RootTimes = [i64; 4];

fn root_times(st: &libc::stat) -> RootTimes {
    [st.st_ctime, st.st_ctime_nsec, st.st_mtime, st.st_mtime_nsec]
}

impl Fence {
    /// Made once the view is built and before the guest runs, when the
    /// root's entries are those init granted.
    pub fn new(fs: &Resolver) -> Result<Fence, Errno> {
        let root = fs.root();
        let granted = granted_ids(root)?;
        let proc_dev = vfs::sys::fstatat(root, c"proc", libc::AT_SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| st.st_dev);
        let times = root_times(&vfs::sys::fstat(root)?);
        Ok(Fence {
            proc_dev,
            granted,
            root_times: times,
            seen_root: std::sync::Mutex::new(times),
        })
    }

    /// Whether the guest's domain lets the kernel open `object` (which
    /// the VFS resolved; `st` its stat) for reading. False also when that
    /// cannot be told: the open is then served, which is always allowed.
    pub fn admits(&self, fs: &Resolver, object: &Named<'_>, st: &libc::stat) -> bool {
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return true;
        }
        if Some(st.st_dev) == self.proc_dev {
            // The name the synthetic files' check read already, unless
            // it was too long for it.
            let path = match object.name() {
                Some(printed) => fs.strip_root(printed.as_bytes()).map(<[u8]>::to_vec),
                None => fs.view_path(object.fd.as_fd()).ok(),
            };
            return path.is_some_and(|p| native_in_proc(&p));
        }
        // Every mount but procfs was made at start-up beneath a granted
        // entry; what the guest made at the root since is beneath none.
        // (Devices do not tell: an overlay root, `--rootfs` and OCI,
        // reports its files' as its layers'.)
        self.root_as_granted(fs) || self.beneath_granted_entry(fs, object.fd)
    }

    /// Whether the root's entries are still those granted (its times
    /// unchanged since the grants were listed, one stat): every object
    /// but procfs's, and but a name made in the root now, then lies
    /// beneath a grant.
    pub fn root_as_granted(&self, fs: &Resolver) -> bool {
        vfs::sys::fstat(fs.root()).is_ok_and(|st| root_times(&st) == self.root_times)
    }

    /// Whether an open of `object` (which the VFS resolved; `st` its
    /// stat) for reading and writing may be left to the kernel: a
    /// directory (which no such open opens), a file of the kernel's
    /// procfs (whose answer, to a write above all, stays the kernel's:
    /// the supervisor never opens one for writing), or one beneath a
    /// grant. False also when that cannot be told: the open is then
    /// served, as the caller.
    pub fn leaves_read_write(&self, fs: &Resolver, object: &OwnedFd, st: &libc::stat) -> bool {
        st.st_mode & libc::S_IFMT == libc::S_IFDIR
            || Some(st.st_dev) == self.proc_dev
            || self.beneath_granted_entry(fs, object)
    }

    /// Whether a file made in the directory `parent` (`st` its stat)
    /// lies beneath a grant, or on procfs (where the kernel's answer
    /// stays): never in the root itself, which no grant covers.
    pub fn grants_beneath(&self, fs: &Resolver, parent: &OwnedFd, st: &libc::stat) -> bool {
        if Some(st.st_dev) == self.proc_dev {
            return true;
        }
        let root = vfs::sys::fstat(fs.root());
        let is_root = root.is_ok_and(|r| (r.st_dev, r.st_ino) == (st.st_dev, st.st_ino));
        !is_root && (self.root_as_granted(fs) || self.beneath_granted_entry(fs, parent))
    }

    /// Whether a name was made, removed or replaced at the root since the
    /// last call that said so (or since the grants were listed), noting
    /// the root's times as seen: the paths remembered as plain are then
    /// forgotten (a file at the root unlinked and made again, both
    /// unseen, is beneath no grant).
    pub fn root_changed(&self, fs: &Resolver) -> bool {
        let Ok(st) = vfs::sys::fstat(fs.root()) else {
            return true;
        };
        let now = root_times(&st);
        let Ok(mut seen) = self.seen_root.lock() else {
            return true;
        };
        let changed = *seen != now;
        *seen = now;
        changed
    }

    /// Whether the top-level entry `object`'s path passes through is one
    /// of those granted (a name the guest made at the root since is not).
    fn beneath_granted_entry(&self, fs: &Resolver, object: &OwnedFd) -> bool {
        let Ok(path) = fs.view_path(object.as_fd()) else {
            return false;
        };
        let Some(first) = top_level(&path) else {
            return false;
        };
        let Ok(name) = std::ffi::CString::new(first) else {
            return false;
        };
        vfs::sys::fstatat(fs.root(), &name, libc::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| self.granted.contains(&(st.st_dev, st.st_ino)))
    }
}

/// The first component of an absolute view path.
fn top_level(path: &[u8]) -> Option<&[u8]> {
    let rest = path.strip_prefix(b"/")?;
    let first = rest.split(|&b| b == b'/').next()?;
    (!first.is_empty()).then_some(first)
}

/// Whether a view path lies in a part of procfs the domain grants.
fn native_in_proc(path: &[u8]) -> bool {
    NATIVE_IN_PROC.iter().any(|granted| {
        let granted = granted.to_bytes();
        path.strip_prefix(b"/")
            .and_then(|p| p.strip_prefix(granted))
            .is_some_and(|rest| rest.first() == Some(&b'/'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inodes of what [`granted`] opens beneath `root`, sorted.
    fn granted_inodes(root: BorrowedFd<'_>, mount_points: &[Vec<u8>]) -> Vec<u64> {
        let mut ids: Vec<_> = granted(root, mount_points)
            .unwrap()
            .iter()
            .map(|fd| vfs::sys::fstat(fd.as_fd()).unwrap().st_ino)
            .collect();
        ids.sort();
        ids
    }

    /// The inode of `dir`/`path`.
    fn inode(dir: &std::path::Path, path: &str) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(dir.join(path)).unwrap())
    }

    #[test]
    fn top_level_is_the_first_component() {
        assert_eq!(top_level(b"/app/x/y"), Some(&b"app"[..]));
        assert_eq!(top_level(b"/x"), Some(&b"x"[..]));
        assert_eq!(top_level(b"/"), None);
        assert_eq!(top_level(b"relative"), None);
    }

    #[test]
    fn native_parts_of_proc() {
        assert!(native_in_proc(b"/proc/sys/kernel/hostname"));
        assert!(native_in_proc(b"/proc/sysvipc/shm"));
        assert!(!native_in_proc(b"/proc/sysrq-trigger"));
        assert!(!native_in_proc(b"/proc/self/mountinfo"));
        assert!(!native_in_proc(b"/proc/1/status"));
    }

    #[test]
    fn grants_leave_out_proc_and_symlinks() {
        let dir = std::env::temp_dir().join(format!("fence-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/sys")).unwrap();
        std::fs::create_dir_all(dir.join("usr")).unwrap();
        std::fs::write(dir.join("file"), b"").unwrap();
        std::os::unix::fs::symlink("usr", dir.join("bin")).unwrap();
        let root = std::fs::File::open(&dir).unwrap();
        let ids = granted_inodes(root.as_fd(), &[]);
        let ino = |p: &str| inode(&dir, p);
        let mut want = vec![ino("usr"), ino("file"), ino("proc/sys")];
        want.sort();
        assert_eq!(ids, want);
        // The fence's own list names the same objects, without opening them.
        let mut by_stat: Vec<_> = granted_ids(root.as_fd())
            .unwrap()
            .into_iter()
            .map(|(_, ino)| ino)
            .collect();
        by_stat.sort();
        assert_eq!(by_stat, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mount_roots_beneath_granted_entries_only() {
        let dir = std::env::temp_dir().join(format!("fence-mounts-{}", std::process::id()));
        for d in ["proc/sys", "usr/lib", "data/d", "real/x"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("data/file"), b"").unwrap();
        std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("data/up")).unwrap();
        let root = std::fs::File::open(&dir).unwrap();
        let points: Vec<Vec<u8>> = [
            "/",
            "/usr",
            "/usr/lib",
            "/usr/lib",
            "/proc/sys",
            "/data/d",
            "/data/file",
            "/link/x",
            "/data/up/usr",
            "/data/../usr/lib",
            "/data//d",
            "/absent/x",
            "usr/lib",
        ]
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
        let ids = granted_inodes(root.as_fd(), &points);
        let ino = |p: &str| inode(&dir, p);
        // The entries (`link` is a symlink), /proc/sys, then once each:
        // /usr/lib, /data/d and /data/file; not the root, an entry again,
        // a path beneath /proc, through a symlink, with `.`, `..` or an
        // empty component, absent, or relative.
        let mut want = vec![
            ino("usr"),
            ino("data"),
            ino("real"),
            ino("proc/sys"),
            ino("usr/lib"),
            ino("data/d"),
            ino("data/file"),
        ];
        want.sort();
        assert_eq!(ids, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn directories_just_below_a_mount_root_with_few_entries() {
        let dir = std::env::temp_dir().join(format!("fence-below-{}", std::process::id()));
        for d in [
            "proc/sys",
            "data/m/files/deeper",
            "data/m/more",
            "data/big",
            "real",
        ] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("data/m/file"), b"").unwrap();
        std::os::unix::fs::symlink("../../real", dir.join("data/m/link")).unwrap();
        for i in 0..40 {
            std::fs::create_dir_all(dir.join(format!("data/big/d{i}"))).unwrap();
        }
        let root = std::fs::File::open(&dir).unwrap();
        let points: Vec<Vec<u8>> = ["/data/m", "/data/big"]
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect();
        let ids = granted_inodes(root.as_fd(), &points);
        let ino = |p: &str| inode(&dir, p);
        // The entries, /proc/sys, the two mount roots, and the
        // directories just below /data/m (not its file, not through its
        // symlink, not deeper); none below /data/big, which has 40.
        let mut want = vec![
            ino("data"),
            ino("real"),
            ino("proc/sys"),
            ino("data/m"),
            ino("data/big"),
            ino("data/m/files"),
            ino("data/m/more"),
        ];
        want.sort();
        assert_eq!(ids, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
