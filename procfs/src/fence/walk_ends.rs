//! The fence's rules that grant nothing new but end the kernel's rule
//! walk early: the root of each mount beneath a granted top-level entry,
//! and the directories just below such a root when it holds few entries.
//!
//! Landlock checks an open by walking from the opened file up, one
//! dentry at a time (a rule lookup and a reference taken and dropped at
//! each, a mount crossing at each mount's root), until a rule grants the
//! access. Every object these rules name already lies beneath a granted
//! entry, whose rule the walk would reach (it crosses mounts): they
//! change no decision, only where the walk stops. For `--ro DIR`'s
//! `files/N`, a rule on DIR ends it at the third step, one on
//! `DIR/files` at the second.
//!
//! Owns: which such objects get a rule, and the bounds on the work that
//! choice costs at start-up. Does not own: the grants themselves
//! (`fence.rs`), the Landlock calls (`sandbox/src/sys/landlock.rs`).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use vfs::resolve::flags::{BENEATH, NO_MAGICLINKS, NO_SYMLINKS};

/// A mount root's listing is read only when it has at most this many
/// entries, all in one `getdents64` of [`LISTING_BYTES`]: a large
/// directory's subdirectories are left to its root's rule.
const MAX_ENTRIES: usize = 32;
/// The buffer of that one `getdents64`: room for [`MAX_ENTRIES`]
/// entries of short names; one it fills is taken for a large directory.
const LISTING_BYTES: usize = 2048;
/// The longest `struct linux_dirent64` record: 19 bytes, a name of 255
/// and its NUL, aligned to 8.
const LONGEST_RECORD: usize = 280;
/// At most this many subdirectory rules in all (each costs init an
/// open, two stats and a rule at start-up: a few µs).
const MAX_SUBDIRS: usize = 32;

/// `O_PATH` descriptors of the roots of the mounts at `mount_points`
/// (absolute, as init's mountinfo names them) that lie beneath one of
/// the granted top-level `entries`, then of the directories just below
/// each such root that has few entries ([`subdirectories`]).
///
/// Never the view's root (a rule there would cover `/proc`), never a
/// top-level entry (granted already), never a mount beneath `/proc` (not
/// among the entries) nor an object of procfs anywhere (its files stay
/// beneath the entry's rule alone), nor the view root's directory or the
/// directory `/proc` is mounted on (a bind of either would put a rule on
/// a directory of every `/proc` path's walk). Each is opened with no
/// symlink followed, so the path reaches the object it names through
/// granted directories only. What cannot be opened so is left out: the
/// entry's rule still covers it, at the longer walk's cost.
pub(super) fn rules(
    root: BorrowedFd<'_>,
    entries: &[Vec<u8>],
    mount_points: &[Vec<u8>],
) -> Vec<OwnedFd> {
    let Some(guard) = Guard::new(root) else {
        return Vec::new();
    };
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut out = Vec::new();
    for point in mount_points {
        let Some(rel) = beneath_entry(point, entries) else {
            continue;
        };
        if seen.contains(&rel) {
            continue;
        }
        seen.push(rel);
        if let Some(opened) = std::ffi::CString::new(rel)
            .ok()
            .and_then(|name| guard.open(root, &name, 0))
        {
            out.push(opened);
        }
    }
    let mut below = Vec::new();
    for (dir, _) in out.iter().filter(|(_, is_dir)| *is_dir) {
        let budget = MAX_SUBDIRS - below.len();
        below.extend(subdirectories(&guard, dir.as_fd(), budget));
    }
    out.into_iter().map(|(fd, _)| fd).chain(below).collect()
}

/// `point` without its leading `/` when it lies strictly beneath one of
/// the granted top-level `entries` and has no empty, `.` or `..`
/// component.
fn beneath_entry<'a>(point: &'a [u8], entries: &[Vec<u8>]) -> Option<&'a [u8]> {
    let rel = point.strip_prefix(b"/")?;
    let mut parts = rel.split(|&b| b == b'/');
    let first = parts.next()?;
    let rest: Vec<&[u8]> = parts.collect();
    let plain = !rest.is_empty() && rest.iter().all(|c| !matches!(*c, b"" | b"." | b".."));
    (plain && entries.iter().any(|e| e == first)).then_some(rel)
}

/// `O_PATH` descriptors of at most `budget` directories just below the
/// directory `dir` (a mount root given a rule), when its listing has at
/// most [`MAX_ENTRIES`] entries; none when it has more, or cannot be
/// read (init holds no capability: a directory it may not list keeps
/// its root's rule alone).
fn subdirectories(guard: &Guard, dir: BorrowedFd<'_>, budget: usize) -> Vec<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let Ok(listing) = vfs::sys::openat(dir, c".", flags, 0) else {
        return Vec::new();
    };
    let mut buf = vec![0u8; LISTING_BYTES];
    let filled = match vfs::sys::getdents64(listing.as_fd(), &mut buf) {
        Ok(n) => n,
        Err(_) => return Vec::new(),
    };
    // The kernel stops filling only where the next record does not fit:
    // with room left for the longest, the listing is whole (a file
    // system that stopped short only gets fewer rules).
    if filled == 0 || filled + LONGEST_RECORD > LISTING_BYTES {
        return Vec::new();
    }
    let entries: Vec<(&[u8], u8)> = vfs::sys::dirents(&buf[..filled])
        .filter(|(n, _)| !matches!(*n, b"." | b".."))
        .collect();
    if entries.len() > MAX_ENTRIES {
        return Vec::new();
    }
    // What the listing says is no directory needs no open (a file
    // system that does not say is asked by the open's O_DIRECTORY).
    entries
        .into_iter()
        .filter(|&(_, kind)| matches!(kind, libc::DT_DIR | libc::DT_UNKNOWN))
        .filter_map(|(name, _)| std::ffi::CString::new(name).ok())
        .filter_map(|name| guard.open(dir, &name, libc::O_DIRECTORY))
        .map(|(fd, _)| fd)
        .take(budget)
        .collect()
}

/// What a rule's object must not be: the view root's directory, the
/// directory `/proc` is mounted on (their identities), or on procfs.
struct Guard {
    root_id: (u64, u64),
    proc_id: Option<(u64, u64)>,
}

impl Guard {
    fn new(root: BorrowedFd<'_>) -> Option<Guard> {
        let root_id = id(root)?;
        let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let proc_id = vfs::sys::openat(root, c"proc", flags, 0)
            .ok()
            .and_then(|fd| id(fd.as_fd()));
        Some(Guard { root_id, proc_id })
    }

    /// The object `name` beneath `dir`, opened `O_PATH` (and `also`:
    /// `O_DIRECTORY` or 0) with no symlink followed and not leaving
    /// `dir`, when it may have a rule; and whether it is a directory.
    fn open(
        &self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::CStr,
        also: i32,
    ) -> Option<(OwnedFd, bool)> {
        let flags = (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC | also) as u64;
        let resolve = NO_SYMLINKS | NO_MAGICLINKS | BENEATH;
        let fd = vfs::sys::openat2(dir, name, flags, 0, resolve).ok()?;
        let not_proc =
            vfs::sys::fstatfs(fd.as_fd()).is_ok_and(|fs| fs.f_type != libc::PROC_SUPER_MAGIC);
        let st = vfs::sys::fstat(fd.as_fd()).ok()?;
        let i = (st.st_dev, st.st_ino);
        let on_proc_walk = i == self.root_id || Some(i) == self.proc_id;
        let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        (not_proc && !on_proc_walk).then_some((fd, is_dir))
    }
}

fn id(fd: BorrowedFd<'_>) -> Option<(u64, u64)> {
    vfs::sys::fstat(fd).ok().map(|st| (st.st_dev, st.st_ino))
}
