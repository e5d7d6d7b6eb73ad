//! `supervisor pool --warm PATH`: an idle sandbox looks up, in its own
//! view, the paths its command will likely open, before it says it is
//! ready. Every sandbox's `/etc` (and `/usr` under `--writable-system`)
//! is a fresh overlay whose dentries and inodes the kernel builds on the
//! first lookup of each path; done while the sandbox waits, the command's
//! own lookups (and the supervisor's resolution of its serviced opens)
//! find them built. `python3 -c pass` through the pool: about 0.2–0.4 ms
//! when /usr was an overlay (PERFORMANCE.md, 2026-11-30, branch `pool5`);
//! on the default read-only bind of /usr the host's own dentries serve.
//!
//! Owns the walk; not when it runs (`slot.rs`). It creates only cache
//! state: every path is opened `O_PATH` (no access time, no open of a
//! device or FIFO, no automount), and a directory is listed only where
//! the listing changes no access time the guest could see: with
//! `O_NOATIME` (our own directories, the layer's among them), or,
//! without it, on an overlay (a directory that is not ours there has no
//! upper part; the lower layers are mounted `noatime` by overlayfs).
//! Anything missing or refused is skipped: the command will meet it as
//! the guest.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::sys::statfs::{fstatfs, OVERLAYFS_SUPER_MAGIC};

use sandbox::sys::fd::{open_at, open_in_root};

/// Most entries of listed directories looked up per sandbox: a `--warm`
/// of a huge directory costs a bounded set-up.
const MAX_ENTRIES: usize = 20_000;

/// Looks up every path of `paths` under `root` (the sandbox's view), and
/// the entries of those that are directories; returns how many lookups
/// succeeded.
pub fn warm(root: BorrowedFd<'_>, paths: &[PathBuf]) -> usize {
    let mut budget = MAX_ENTRIES;
    let mut found = 0;
    for path in paths {
        if open_in_root(root, path, OFlag::O_PATH).is_err() {
            continue;
        }
        found += 1;
        if let Some(dir) = listable(root, path) {
            found += warm_entries(dir, &mut budget);
        }
    }
    found
}

/// `path` opened for listing, if it is a directory whose listing updates
/// no access time the guest could see.
fn listable(root: BorrowedFd<'_>, path: &Path) -> Option<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
    match open_in_root(root, path, flags | OFlag::O_NOATIME) {
        Ok(dir) => Some(dir),
        // Not ours: only an overlay's lower-only directory may be listed.
        Err(Errno::EPERM) => {
            let dir = open_in_root(root, path, flags).ok()?;
            let on_overlay = fstatfs(dir.as_fd()).ok()?.filesystem_type() == OVERLAYFS_SUPER_MAGIC;
            on_overlay.then_some(dir)
        }
        Err(_) => None,
    }
}

/// Looks up the entries of `dir` (not following symlinks), while
/// `budget` lasts; how many were found.
fn warm_entries(dir: OwnedFd, budget: &mut usize) -> usize {
    // The listing owns (and closes) a duplicate; `dir` stays ours.
    let Ok(mut listing) = dir
        .try_clone()
        .map_err(|_| Errno::EBADF)
        .and_then(|d| Dir::from_fd(d.into_raw_fd()))
    else {
        return 0;
    };
    let names: Vec<CString> = listing
        .iter()
        .flatten()
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .take(*budget)
        .collect();
    *budget -= names.len();
    drop(listing);
    let at = dir.as_fd();
    names
        .iter()
        .filter(|name| {
            let name = Path::new(OsStr::from_bytes(name.as_bytes()));
            open_at(
                Some(at),
                name,
                OFlag::O_PATH | OFlag::O_NOFOLLOW,
                Mode::empty(),
            )
            .is_ok()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn paths_and_the_entries_of_directories_are_looked_up_without_a_trace() {
        let top = std::env::temp_dir().join(format!("warm-test-{}", std::process::id()));
        fs::create_dir_all(top.join("d")).unwrap();
        for f in ["a", "d/x", "d/y"] {
            fs::write(top.join(f), "").unwrap();
        }
        let before = fs::metadata(top.join("d")).unwrap();
        let root = open_at(None, &top, OFlag::O_PATH, Mode::empty()).unwrap();
        let paths = ["/d", "/a", "/missing", "/../a"].map(PathBuf::from);
        // d, its x and y, a; "/../a" stays inside the root: a again.
        assert_eq!(warm(root.as_fd(), &paths), 5);
        let after = fs::metadata(top.join("d")).unwrap();
        assert_eq!(
            (before.atime(), before.atime_nsec()),
            (after.atime(), after.atime_nsec())
        );
        fs::remove_dir_all(&top).unwrap();
    }
}
