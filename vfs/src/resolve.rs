//! Resolution of guest paths, confined to the view.
//!
//! Owns: turning a guest path (absolute, or relative to a directory the
//! guest names) into a host descriptor without ever leaving the view.
//! Does not own: what the path is then used for (the handlers), nor the
//! component walk for magic links (see [`crate::walk`]).
//!
//! The fast path is one `openat2`: absolute paths from the view's root
//! with `RESOLVE_IN_ROOT` (the kernel keeps `..` and absolute symlinks
//! inside the root and crosses the view's mounts), relative paths from
//! the start directory with `RESOLVE_BENEATH`. A relative path that climbs
//! out of its start (EXDEV) is joined to the start's view path (what the
//! kernel prints for it, minus the root's own prefix) and resolved as an
//! absolute path. Scoped resolution refuses magic links (`/proc/N/fd/M`,
//! `/proc/N/cwd`, ...) with EXDEV; those paths take the component walk.
//! `/proc/self` names the supervisor, not the guest, so the prefixes that
//! go through it (`/proc/self`, `/proc/thread-self`, `/dev/fd`,
//! `/dev/stdin`...) are rewritten lexically to `/proc/<tgid>[/task/<tid>]`
//! first, asking the caller for its ids only then.
//!
//! The kernel resolves with the caller's ids and none of its
//! capabilities. A resolution it refuses (EACCES) is walked again
//! component by component, and a directory the caller may not search is
//! searched as the caller's capabilities allow ([`Caller::search_anyway`]:
//! a guest root's CAP_DAC_OVERRIDE on a directory of the guest's). Not
//! for the guest's own `RESOLVE_BENEATH` / `RESOLVE_IN_ROOT` scopes, which
//! the walk does not keep: those refusals stand.

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;

use std::sync::Arc;

use crate::cache::{CachePolicy, DirCache, MAX_DIRS};
use crate::path::{self, Split};
use crate::plain::{Known, LayerDevs, MAX_PLAIN};
use crate::sys;
use crate::walk::{self, Last};

/// openat2 `RESOLVE_*` flags (linux/openat2.h).
pub mod flags {
    pub const NO_XDEV: u64 = 0x01;
    pub const NO_MAGICLINKS: u64 = 0x02;
    pub const NO_SYMLINKS: u64 = 0x04;
    pub const BENEATH: u64 = 0x08;
    pub const IN_ROOT: u64 = 0x10;
    pub const CACHED: u64 = 0x20;
    /// Every flag this kernel ABI defines.
    pub const VALID: u64 = NO_XDEV | NO_MAGICLINKS | NO_SYMLINKS | BENEATH | IN_ROOT | CACHED;
}
use flags::*;

/// How many times a scoped lookup is retried when the kernel reports a
/// concurrent rename or mount (EAGAIN). The kernel checks for one only
/// where a path walks `..`, but a rename *anywhere* on the host counts:
/// under a busy build (or another sandbox renaming in a loop) four tries
/// were seen to run out, and the guest's call would fail with an EAGAIN
/// its kernel never gives. Each try is one lookup (microseconds).
const EAGAIN_RETRIES: usize = 64;

/// The caller of a resolution, for the prefixes that name it and for
/// the directories it may search by a capability.
pub trait Caller {
    /// The caller's (tgid, tid) as the view's pid namespace numbers them.
    fn proc_ids(&self) -> Result<(i32, i32), Errno>;

    /// Runs `step`, a lookup of one name in directory `dir` that the
    /// kernel refused the caller's ids (EACCES: no search permission),
    /// again with the caller's own capability to search `dir`, where the
    /// caller's user namespace grants it one on `dir`. `None`: none
    /// applies and `step` did not run; the refusal stands. The default:
    /// none ever does.
    fn search_anyway(
        &self,
        dir: BorrowedFd<'_>,
        step: &mut dyn FnMut() -> Result<(), Errno>,
    ) -> Option<Result<(), Errno>> {
        let _ = (dir, step);
        None
    }
}

/// Where a resolution starts.
#[derive(Clone, Copy)]
pub struct At<'a> {
    /// The directory a relative path starts from (the guest's cwd or
    /// dirfd). `None`: the view's root.
    pub dir: Option<BorrowedFd<'a>>,
    pub caller: &'a dyn Caller,
}

/// A directory descriptor that is borrowed, owned, or shared with the
/// cache of resolved directories.
#[derive(Debug)]
pub enum Dir<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
    Cached(Arc<OwnedFd>),
}

impl AsFd for Dir<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Dir::Borrowed(b) => *b,
            Dir::Owned(o) => o.as_fd(),
            Dir::Cached(o) => o.as_fd(),
        }
    }
}

/// The directory holding a path's final component, and that component as
/// the guest wrote it (trailing slashes kept; `.`, `..`, or `/` for the
/// root), for the `*at` calls that do not follow a final symlink.
#[derive(Debug)]
pub struct Parent<'a, 'p> {
    pub dir: Dir<'a>,
    pub name: &'p CStr,
}

impl Parent<'_, '_> {
    /// Whether the final component ends with a slash.
    pub fn trailing_slash(&self) -> bool {
        self.name.to_bytes().last() == Some(&b'/')
    }

    /// Whether the directory came from the cache of resolved directories
    /// (see [`Resolver::removing`]).
    pub fn is_cached(&self) -> bool {
        matches!(self.dir, Dir::Cached(_))
    }
}

/// Resolves guest paths against the view's root.
#[derive(Debug)]
pub struct Resolver {
    root: OwnedFd,
    root_id: (u64, u64),
    /// How the kernel prints the root for this process ("/" in the
    /// sandbox, whose view root is its mount namespace's root).
    root_printed: Vec<u8>,
    /// Directories resolved before, for the parent lookups of the calls
    /// that act on a name (see [`Resolver::parent`]).
    cache: DirCache,
    /// Absolute paths known to name a plain object (`plain.rs`).
    pub(crate) plain: crate::cache::PathCache<Known>,
    pub(crate) layer_devs: LayerDevs,
}

impl Resolver {
    /// `root`: an `O_PATH` descriptor of the view's root directory.
    /// Caches directories of the sandbox's own layers (tmpfs, overlayfs).
    pub fn new(root: OwnedFd) -> Resolver {
        Resolver::with_cache(root, CachePolicy::Layers)
    }

    /// [`Resolver::new`] with another caching policy.
    pub fn with_cache(root: OwnedFd, policy: CachePolicy) -> Resolver {
        let root_id = sys::fstat(root.as_fd()).map_or((0, 0), |st| (st.st_dev, st.st_ino));
        let mut buf = [0u8; 4096];
        let root_printed = match sys::fd_path(root.as_fd(), &mut buf) {
            Ok(n) if n < buf.len() && n > 0 => buf[..n].to_vec(),
            _ => b"/".to_vec(),
        };
        Resolver {
            root,
            root_id,
            root_printed,
            cache: DirCache::new(policy, MAX_DIRS),
            plain: crate::cache::PathCache::new(policy, MAX_PLAIN),
            layer_devs: LayerDevs::default(),
        }
    }

    /// The view's root.
    pub fn root(&self) -> BorrowedFd<'_> {
        self.root.as_fd()
    }

    pub(crate) fn is_root(&self, st: &libc::stat) -> bool {
        (st.st_dev, st.st_ino) == self.root_id
    }

    /// The device of the view's root (the sandbox's tmpfs layer, or an
    /// OCI container's root file system).
    pub fn root_dev(&self) -> u64 {
        self.root_id.0
    }

    /// Open `path` with the guest's `O_*` flags (already validated) and
    /// creation mode (umask already applied). Adds `O_CLOEXEC`, and
    /// `O_NOCTTY` unless `O_PATH`. `resolve`: the guest's own openat2
    /// `RESOLVE_*` flags (0 for the other calls); with `RESOLVE_BENEATH`
    /// or `RESOLVE_IN_ROOT` the guest's start directory is the scope.
    pub fn open(
        &self,
        at: &At<'_>,
        path: &CStr,
        flags: i32,
        mode: u32,
        resolve: u64,
    ) -> Result<OwnedFd, Errno> {
        let mut f = flags | libc::O_CLOEXEC;
        if f & libc::O_PATH == 0 {
            f |= libc::O_NOCTTY;
        }
        let o = Open {
            flags: f as u32 as u64,
            mode: mode as u64,
            resolve,
        };
        let bytes = path.to_bytes();
        if resolve & (BENEATH | IN_ROOT) != 0 {
            let dir = at.dir.unwrap_or(self.root());
            return retry(resolve, || {
                sys::openat2(dir, path, o.flags, o.mode, resolve)
            });
        }
        if path::is_abs(bytes) {
            return self.open_abs(at, path, &o);
        }
        let dir = at.dir.unwrap_or(self.root());
        match retry(resolve, || {
            sys::openat2(dir, path, o.flags, o.mode, resolve | BENEATH)
        }) {
            Err(Errno::EXDEV) if resolve & NO_XDEV == 0 => self.open_joined(at, dir, bytes, &o),
            // The EXDEV may be the guest's own mount crossing: only a walk
            // from the start directory tells it from leaving the start.
            Err(Errno::EXDEV) => self.open_walk(at, dir, bytes, &o),
            Err(Errno::ENOENT) if path::maybe_special_relative(bytes) && self.in_special(dir) => {
                self.open_joined(at, dir, bytes, &o)
            }
            Err(Errno::EACCES) => self.open_searching(at, dir, path, &o),
            r => r,
        }
    }

    /// A resolution the kernel refused the caller's ids (EACCES) walked
    /// again, each directory the caller may not search searched as its
    /// capabilities allow ([`Caller::search_anyway`]). The refusal stands
    /// unless one was: the walk's answer is then the one the kernel gives
    /// a caller holding them (ENOENT beyond, or the object). Out of line:
    /// the resolutions the kernel allows cost what they did.
    #[cold]
    #[inline(never)]
    fn open_searching(
        &self,
        at: &At<'_>,
        start: BorrowedFd<'_>,
        path: &CStr,
        o: &Open,
    ) -> Result<OwnedFd, Errno> {
        let noted = Noted {
            caller: at.caller,
            granted: Cell::new(false),
        };
        let at = At {
            dir: at.dir,
            caller: &noted,
        };
        let r = self.open_walk(&at, start, path.to_bytes(), o);
        match noted.granted.get() {
            true => r,
            false => Err(Errno::EACCES),
        }
    }

    /// An `O_PATH` descriptor for `path`, following a final symlink or not.
    pub fn lookup(&self, at: &At<'_>, path: &CStr, follow: bool) -> Result<OwnedFd, Errno> {
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        self.open(at, path, libc::O_PATH | nofollow, 0, 0)
    }

    /// Stop keeping resolved directories (the plain paths stay): for a
    /// sandbox whose processes have different ids. A directory kept from
    /// one caller's resolution skips the kernel's search-permission checks
    /// on its ancestors for every later caller, which is right only for
    /// callers with the same ids, and a permission change made through a
    /// descriptor (`fchmod`, `fchown`, `fsetxattr`: they pass the filter)
    /// never starts the cache over: one user could then act in a directory
    /// another has closed to it. A remembered plain path is only ever
    /// answered CONTINUE, which the kernel checks afresh.
    pub fn keep_no_dirs(&mut self) {
        self.cache = DirCache::new(CachePolicy::Off, MAX_DIRS);
    }

    /// The guest changed names or permissions (unlink, rmdir, rename,
    /// chmod, chown): forget the directories resolved so far, and the
    /// paths known to name a plain object.
    pub fn changed(&self) {
        self.cache.invalidate();
        self.plain.invalidate();
    }

    /// The absolute directory path `dir` (as written, trailing slash kept)
    /// from the cache, resolving and caching it on a miss. `None` when it
    /// does not qualify (relative, through /proc/self and the like) or is
    /// known not to be cacheable: the caller resolves it itself. A fresh
    /// resolution that may not be cached is still returned, once.
    ///
    /// Only a path that resolves without following any symlink is cached:
    /// `unlink` passes the filter (the guest removes names the supervisor
    /// never hears of), and removing a name that is not a directory can
    /// change only the resolution of paths through a symlink of that name.
    fn cached_dir(&self, at: &At<'_>, dir: &[u8]) -> Result<Option<Arc<OwnedFd>>, Errno> {
        if self.cache.policy == CachePolicy::Off
            || !path::is_abs(dir)
            || path::special_prefix(dir, true).is_some()
        {
            return Ok(None);
        }
        if let Some(d) = self.cache.get(dir) {
            return Ok(d);
        }
        let generation = self.cache.generation();
        let d = CString::new(dir).map_err(|_| Errno::EINVAL)?;
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let (fd, no_symlink) = match self.open(at, &d, flags, 0, NO_SYMLINKS) {
            Ok(fd) => (fd, true),
            Err(Errno::ELOOP) => (self.open(at, &d, flags, 0, 0)?, false),
            Err(e) => return Err(e),
        };
        let fd = Arc::new(fd);
        let same_fs = sys::fstat(fd.as_fd())?.st_dev == self.root_id.0;
        let fs_type = || sys::fstatfs(fd.as_fd()).ok().map(|s| s.f_type);
        let cached = no_symlink && self.cache.policy.admits(same_fs, fs_type);
        self.cache
            .insert(dir, generation, cached.then(|| Arc::clone(&fd)));
        Ok(Some(fd))
    }

    /// The guest is about to remove the name `name` in `dir` (not a
    /// directory: unlink without AT_REMOVEDIR). Call [`Resolver::changed`]
    /// afterwards unless this says the removal changes no directory path's
    /// resolution: true when `name` is neither a directory nor a symlink
    /// (checked without following it). A guest thread that swaps the name
    /// for a symlink in between can make one cached directory stale; the
    /// cached descriptor still lies in the view (it was resolved there, on
    /// the sandbox's own layers, which only the guest changes), so it only
    /// misleads that guest about its own files.
    pub fn removing_keeps_dirs(&self, dir: BorrowedFd<'_>, name: &CStr) -> bool {
        sys::fstatat(dir, name, libc::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| !matches!(st.st_mode & libc::S_IFMT, libc::S_IFDIR | libc::S_IFLNK))
    }

    /// The directory holding `path`'s final component, and the component.
    /// `path` must not be empty.
    pub fn parent<'a, 'p>(&'a self, at: &At<'a>, path: &'p CStr) -> Result<Parent<'a, 'p>, Errno> {
        let whole = path.to_bytes_with_nul();
        let bytes = path.to_bytes();
        if bytes.is_empty() {
            return Err(Errno::ENOENT);
        }
        let (dir, name_at) = match path::split_last(bytes) {
            Split::Root => (&b"/"[..], bytes.len() - 1),
            Split::Name { dir, name_at } => (dir, name_at),
        };
        let name = CStr::from_bytes_with_nul(&whole[name_at..]).map_err(|_| Errno::EINVAL)?;
        let dir = if dir.is_empty() {
            Dir::Borrowed(at.dir.unwrap_or(self.root()))
        } else if dir.iter().all(|&c| c == b'/') {
            Dir::Borrowed(self.root())
        } else if let Some(d) = self.cached_dir(at, dir)? {
            Dir::Cached(d)
        } else {
            let d = CString::new(dir).map_err(|_| Errno::EINVAL)?;
            Dir::Owned(self.open(at, &d, libc::O_PATH | libc::O_DIRECTORY, 0, 0)?)
        };
        Ok(Parent { dir, name })
    }

    /// The view path of the directory or file behind `fd`: what the kernel
    /// prints for it, without the root's own prefix. ENOENT when it lies
    /// outside the view or was deleted.
    pub fn view_path(&self, fd: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        let n = sys::fd_path(fd, &mut buf)?;
        if n >= buf.len() {
            return Err(Errno::ENAMETOOLONG);
        }
        let printed = &buf[..n];
        if printed.ends_with(b" (deleted)") && sys::fstat(fd)?.st_nlink == 0 {
            return Err(Errno::ENOENT);
        }
        self.strip_root(printed)
            .map(<[u8]>::to_vec)
            .ok_or(Errno::ENOENT)
    }

    /// A path as the kernel prints it for this process (a descriptor's
    /// `readlink`), as a view path: `None` when it is not under the
    /// view's root.
    pub fn strip_root<'b>(&self, printed: &'b [u8]) -> Option<&'b [u8]> {
        let r = &self.root_printed[..];
        if r == b"/" {
            return path::is_abs(printed).then_some(printed);
        }
        if printed == r {
            return Some(b"/");
        }
        match printed.strip_prefix(r) {
            Some(rest) if rest.first() == Some(&b'/') => Some(rest),
            _ => None,
        }
    }

    /// Whether `dir` lies under the view's /proc or /dev.
    fn in_special(&self, dir: BorrowedFd<'_>) -> bool {
        match self.view_path(dir) {
            Ok(p) => {
                let first = path::first_component(&p);
                first == b"proc" || first == b"dev"
            }
            Err(_) => false,
        }
    }

    /// A relative path that left its start: resolve `view_path(dir)/rel`.
    fn open_joined(
        &self,
        at: &At<'_>,
        dir: BorrowedFd<'_>,
        rel: &[u8],
        o: &Open,
    ) -> Result<OwnedFd, Errno> {
        let mut joined = self.view_path(dir)?;
        joined.push(b'/');
        joined.extend_from_slice(rel);
        let joined = CString::new(joined).map_err(|_| Errno::EINVAL)?;
        self.open_abs(at, &joined, o)
    }

    fn open_abs(&self, at: &At<'_>, path: &CStr, o: &Open) -> Result<OwnedFd, Errno> {
        let bytes = path.to_bytes();
        if let Some((special, end)) = path::special_prefix(bytes, o.follows_last()) {
            // Each special prefix is a symlink in the view (/proc/self,
            // /dev/fd, ...): RESOLVE_NO_SYMLINKS refuses to cross it.
            if o.resolve & NO_SYMLINKS != 0 {
                return Err(Errno::ELOOP);
            }
            // A `..` after the prefix may climb back into /proc and name
            // `self` there again, which the kernel would read as the
            // supervisor's: the walk reads each link as the caller's.
            if path::has_dotdot(&bytes[end..]) {
                return self.open_walk(at, self.root(), bytes, o);
            }
            let (tgid, tid) = at.caller.proc_ids()?;
            let mut p = special.expand(tgid, tid).into_bytes();
            p.extend_from_slice(&bytes[end..]);
            let p = CString::new(p).map_err(|_| Errno::EINVAL)?;
            return self.open_in_root(at, &p, o);
        }
        self.open_in_root(at, path, o)
    }

    fn open_in_root(&self, at: &At<'_>, path: &CStr, o: &Open) -> Result<OwnedFd, Errno> {
        let root = self.root();
        match retry(o.resolve, || {
            sys::openat2(root, path, o.flags, o.mode, o.resolve | IN_ROOT)
        }) {
            Err(Errno::EXDEV) if o.resolve & NO_XDEV == 0 => {
                self.open_walk(at, root, path.to_bytes(), o)
            }
            Err(Errno::EACCES) => self.open_searching(at, root, path, o),
            r => r,
        }
    }

    /// Test hook: resolve like [`Resolver::lookup`], but always through
    /// the component walk (relative paths joined to the start's view path).
    #[cfg(test)]
    pub(crate) fn lookup_walk(
        &self,
        at: &At<'_>,
        path: &CStr,
        follow: bool,
    ) -> Result<OwnedFd, Errno> {
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        let o = Open {
            flags: (libc::O_PATH | libc::O_CLOEXEC | nofollow) as u64,
            mode: 0,
            resolve: 0,
        };
        self.open_walk(at, at.dir.unwrap_or(self.root()), path.to_bytes(), &o)
    }

    /// The slow path: walk `path` from `start` (absolute paths from the
    /// root) component by component.
    fn open_walk(
        &self,
        at: &At<'_>,
        start: BorrowedFd<'_>,
        path: &[u8],
        o: &Open,
    ) -> Result<OwnedFd, Errno> {
        let w = walk::walk(self, at.caller, start, path, o.follows_last(), o.resolve)?;
        let scope = BENEATH | NO_SYMLINKS | (o.resolve & NO_XDEV);
        let dir = w.dir.as_fd();
        let last = |name: &CStr| {
            let open = || sys::openat2(dir, name, o.flags, o.mode, scope);
            // An O_PATH open asks only the search of `dir`; another's
            // refusal may be the object's own permissions, which stand.
            match o.flags & libc::O_PATH as u64 != 0 {
                true => walk::searched(at.caller, dir, open),
                false => open(),
            }
        };
        match w.last {
            Last::Dot => last(c"."),
            Last::Name(name) => last(&name),
            Last::Magic(name) => sys::openat(dir, &name, o.flags as i32, o.mode as u32),
        }
    }
}

/// A caller whose searches by capability are noted.
struct Noted<'c> {
    caller: &'c dyn Caller,
    granted: Cell<bool>,
}

impl Caller for Noted<'_> {
    fn proc_ids(&self) -> Result<(i32, i32), Errno> {
        self.caller.proc_ids()
    }

    fn search_anyway(
        &self,
        dir: BorrowedFd<'_>,
        step: &mut dyn FnMut() -> Result<(), Errno>,
    ) -> Option<Result<(), Errno>> {
        let r = self.caller.search_anyway(dir, step);
        if r.is_some() {
            self.granted.set(true);
        }
        r
    }
}

/// One open request, in openat2's terms.
struct Open {
    flags: u64,
    mode: u64,
    resolve: u64,
}

impl Open {
    /// Whether the final component is followed when it is a symlink.
    fn follows_last(&self) -> bool {
        let f = self.flags as i32;
        let excl = libc::O_CREAT | libc::O_EXCL;
        f & libc::O_NOFOLLOW == 0 && f & excl != excl
    }
}

fn retry(resolve: u64, mut f: impl FnMut() -> Result<OwnedFd, Errno>) -> Result<OwnedFd, Errno> {
    let mut n = 0;
    loop {
        match f() {
            Err(Errno::EAGAIN) if resolve & CACHED == 0 && n < EAGAIN_RETRIES => {
                n += 1;
                // Let the renaming thread finish before the next try.
                std::thread::yield_now();
            }
            r => return r,
        }
    }
}
