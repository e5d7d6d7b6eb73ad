//! A cache of resolved directories, for the parent lookups of the calls
//! that act on a name (rmdir, rename, link, symlink, chmod...).
//!
//! Owns: a bounded map from an absolute guest directory path (exactly as
//! written, trailing slash included) to an `O_PATH` descriptor of what it
//! resolved to, valid for one generation. Any change the guest makes to
//! names or permissions (unlink, rmdir, rename, chmod, chown: see
//! [`crate::Resolver::changed`]) starts a new generation; creating names
//! never changes what an existing path resolves to, so creations keep it,
//! and so does removing a name that is neither a directory nor a symlink
//! (see `Resolver::removing_keeps_dirs`). `unlink` passes the filter, so
//! only paths that follow no symlink are cached (`Resolver::cached_dir`):
//! no removal of a non-directory changes how those resolve.
//! Only directories on filesystems that change through the guest alone
//! are cached (the view root's tmpfs layer and overlays; not bind mounts
//! of host directories, which the host may change underneath, and never
//! procfs, whose pids come and go).
//!
//! The same bounded, generational map also holds the paths known to name
//! a plain object (see [`crate::plain`]), with a generation of its own.
//!
//! Does not own: resolution itself (the resolver fills the caches, in
//! `Resolver::parent` and `Resolver::probe`).

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use libc::{OVERLAYFS_SUPER_MAGIC, PROC_SUPER_MAGIC};

/// Directory entries kept at most (each holds a descriptor of the
/// supervisor).
pub const MAX_DIRS: usize = 256;

/// Which directories may be cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// No caching.
    Off,
    /// Directories on the view root's own filesystem (the sandbox's tmpfs
    /// layer) and on overlayfs (the sandbox's overlays of host
    /// directories, whose lower layers must not change while mounted).
    /// Not bind mounts of host directories, which the host may change.
    Layers,
    /// Any directory but procfs (tests, whose trees are on a host disk).
    All,
}

impl CachePolicy {
    /// Whether a directory may be cached: `same_fs_as_root`, and the
    /// `f_type` of its filesystem (asked only when needed).
    pub fn admits(self, same_fs_as_root: bool, f_type: impl FnOnce() -> Option<i64>) -> bool {
        match self {
            CachePolicy::Off => false,
            CachePolicy::Layers => same_fs_as_root || f_type() == Some(OVERLAYFS_SUPER_MAGIC),
            CachePolicy::All => f_type().is_some_and(|t| t != PROC_SUPER_MAGIC),
        }
    }
}

#[derive(Debug)]
struct Entry<V> {
    generation: u64,
    value: V,
}

/// A bounded map from a guest path to what was learnt of it, valid for
/// one generation.
#[derive(Debug)]
pub struct PathCache<V> {
    pub policy: CachePolicy,
    max: usize,
    generation: AtomicU64,
    map: RwLock<HashMap<Box<[u8]>, Entry<V>>>,
}

/// Directories: `None` when the directory may not be cached (remembered
/// so that the next lookup goes straight to full resolution).
pub type DirCache = PathCache<Option<Arc<OwnedFd>>>;

impl<V: Clone> PathCache<V> {
    /// An empty cache of at most `max` entries.
    pub fn new(policy: CachePolicy, max: usize) -> PathCache<V> {
        PathCache {
            policy,
            max,
            generation: AtomicU64::new(0),
            map: RwLock::new(HashMap::new()),
        }
    }

    /// The current generation: read before resolving what is inserted.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// What the cache knows of `key` in the current generation, if
    /// anything.
    pub fn get(&self, key: &[u8]) -> Option<V> {
        if self.policy == CachePolicy::Off {
            return None;
        }
        let now = self.generation();
        let map = self.map.read().ok()?;
        map.get(key)
            .filter(|e| e.generation == now)
            .map(|e| e.value.clone())
    }

    /// Remember `value` for `key`, learnt during `generation`.
    pub fn insert(&self, key: &[u8], generation: u64, value: V) {
        let Ok(mut map) = self.map.write() else {
            return;
        };
        if map.len() >= self.max {
            let now = self.generation();
            map.retain(|_, e| e.generation == now);
            if map.len() >= self.max {
                map.clear();
            }
        }
        map.insert(key.into(), Entry { generation, value });
    }

    /// Start a new generation: every entry so far is stale.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies() {
        let ext4 = || Some(0xef53);
        assert!(!CachePolicy::Off.admits(true, ext4));
        assert!(CachePolicy::Layers.admits(true, ext4));
        assert!(!CachePolicy::Layers.admits(false, ext4));
        assert!(CachePolicy::Layers.admits(false, || Some(OVERLAYFS_SUPER_MAGIC)));
        assert!(CachePolicy::All.admits(false, ext4));
        assert!(!CachePolicy::All.admits(true, || Some(PROC_SUPER_MAGIC)));
    }

    #[test]
    fn generations() {
        let c = DirCache::new(CachePolicy::All, MAX_DIRS);
        let fd = Arc::new(OwnedFd::from(std::fs::File::open("/").unwrap()));
        c.insert(b"/a/", c.generation(), Some(fd));
        assert!(matches!(c.get(b"/a/"), Some(Some(_))));
        c.invalidate();
        assert!(c.get(b"/a/").is_none());
        for i in 0..MAX_DIRS + 10 {
            c.insert(format!("/{i}/").as_bytes(), c.generation(), None);
        }
        assert!(c.map.read().unwrap().len() <= MAX_DIRS);
    }
}
