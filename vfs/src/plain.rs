//! Paths known to name a plain object: the hot path of a read open.
//!
//! Owns: the resolution a read-only open is judged by ([`Resolver::probe`]:
//! an `O_PATH` descriptor and its `stat`), and the memory of absolute
//! paths whose resolution followed no symlink and ended on one of the
//! sandbox's own layers (the view root's tmpfs, overlays; see
//! [`CachePolicy`]), which the caller found to be no file it serves
//! ([`Resolver::remember_plain`]). A later read open of such a path is
//! answered CONTINUE with no host call ([`Resolver::known_plain`]).
//!
//! Why that is the answer resolving would give: the verdict is only "the
//! object is not served", and the files the sandbox serves are in procfs
//! or its covers, which no layer holds. A path resolved to an existing
//! object changes what it resolves to only when one of its names is
//! removed or replaced: a directory by rmdir or rename, a non-directory
//! by rename or by `unlink`, which passes the filter. Each resolves the
//! same way or fails until a name is put in the removed one's place, and
//! only a symlink (symlink, link of a symlink, rename) can lead elsewhere
//! than to a new file of the layer: every serviced call that makes one
//! starts a new generation ([`Resolver::names_added`],
//! [`Resolver::changed`]). Errors (a removed file, permissions) are the
//! kernel's own after CONTINUE, as they were the resolution's. Mounts,
//! chroot and namespaces are denied to the guest; the host does not
//! change the layers, and bind mounts of host directories are never
//! remembered.
//!
//! Does not own: what is served (the `syscalls` crate), nor relative
//! paths, `/proc/self` and its kin, or openat2's `RESOLVE_*` scopes,
//! which always resolve in full.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::RwLock;

use nix::errno::Errno;

use crate::cache::CachePolicy;
use crate::resolve::{flags::NO_SYMLINKS, At, Resolver};
use crate::{path, sys};

/// Paths remembered at most (no descriptor is held for them).
pub const MAX_PLAIN: usize = 4096;

/// An object resolved for a read open: an `O_PATH` descriptor, its
/// `stat`, and whether it may be remembered as plain (the generation it
/// was resolved in).
pub struct Probe {
    pub fd: OwnedFd,
    pub st: libc::stat,
    ticket: Option<u64>,
}

/// What is known of a path in this generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    /// Nothing.
    Unknown,
    /// It names a plain object: a read open may be CONTINUEd.
    Plain,
    /// It resolves through a symlink: resolve it in full at once.
    Symlinked,
}

/// Which devices hold the sandbox's own layers (asked once per device).
#[derive(Debug, Default)]
pub(crate) struct LayerDevs(RwLock<Vec<(u64, bool)>>);

impl Resolver {
    /// What is known of `path` (as the guest wrote it) in this
    /// generation: [`Known::Plain`] when a read open of it may be
    /// CONTINUEd without resolving it again.
    pub fn known(&self, path: &[u8]) -> Known {
        self.plain.get(path).unwrap_or(Known::Unknown)
    }

    /// Resolves `path` as a read-only open with `flags` would (the final
    /// component followed unless `O_NOFOLLOW`), to an `O_PATH` descriptor.
    /// An absolute path outside `/proc/self` and its kin is resolved
    /// without symlinks first; one that has none and ends on a layer may
    /// be remembered afterwards. `known`: what [`Resolver::known`] said.
    pub fn probe(
        &self,
        at: &At<'_>,
        path: &CStr,
        flags: i32,
        known: Known,
    ) -> Result<Probe, Errno> {
        let flags = (flags & libc::O_NOFOLLOW) | libc::O_PATH;
        let bytes = path.to_bytes();
        let eligible = self.plain.policy != CachePolicy::Off
            && path::is_abs(bytes)
            && path::special_prefix(bytes, true).is_none();
        if eligible && known != Known::Symlinked {
            let generation = self.plain.generation();
            match self.open(at, path, flags, 0, NO_SYMLINKS) {
                Ok(fd) => {
                    let st = sys::fstat(fd.as_fd())?;
                    let layer = st.st_mode & libc::S_IFMT != libc::S_IFLNK
                        && self.on_layer(fd.as_fd(), st.st_dev);
                    let ticket = layer.then_some(generation);
                    return Ok(Probe { fd, st, ticket });
                }
                Err(Errno::ELOOP) => self.plain.insert(bytes, generation, Known::Symlinked),
                Err(e) => return Err(e),
            }
        }
        let fd = self.open(at, path, flags, 0, 0)?;
        let st = sys::fstat(fd.as_fd())?;
        Ok(Probe {
            fd,
            st,
            ticket: None,
        })
    }

    /// The caller found `probe`, resolved for `path`, to be no file it
    /// serves: remember the path as plain if it may be.
    pub fn remember_plain(&self, path: &CStr, probe: &Probe) {
        if let Some(generation) = probe.ticket {
            self.plain.insert(path.to_bytes(), generation, Known::Plain);
        }
    }

    /// The guest made a name that may stand where one it removed unseen
    /// stood (a symlink, a hard link): forget the plain paths.
    pub fn names_added(&self) {
        self.plain.invalidate();
    }

    /// Whether `dev` (of `fd`) holds one of the sandbox's own layers.
    fn on_layer(&self, fd: std::os::fd::BorrowedFd<'_>, dev: u64) -> bool {
        let known = self.layer_devs.0.read().ok().and_then(|devs| {
            devs.iter()
                .find_map(|&(d, layer)| (d == dev).then_some(layer))
        });
        if let Some(layer) = known {
            return layer;
        }
        let fs_type = || sys::fstatfs(fd).ok().map(|s| s.f_type);
        let layer = self.plain.policy.admits(dev == self.root_dev(), fs_type);
        if let Ok(mut devs) = self.layer_devs.0.write() {
            devs.push((dev, layer));
        }
        layer
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::Caller;

    struct Me;
    impl Caller for Me {
        fn proc_ids(&self) -> Result<(i32, i32), Errno> {
            Ok((std::process::id() as i32, nix::unistd::gettid().as_raw()))
        }
    }

    fn resolver(root: &std::path::Path, policy: CachePolicy) -> Resolver {
        let root = fs::File::open(root).unwrap();
        Resolver::with_cache(OwnedFd::from(root), policy)
    }

    /// Probes `path` and remembers it if it may be; whether it is known.
    fn learn(r: &Resolver, path: &CStr, flags: i32) -> bool {
        let at = At {
            dir: None,
            caller: &Me,
        };
        let probe = r.probe(&at, path, flags, r.known(path.to_bytes())).unwrap();
        r.remember_plain(path, &probe);
        r.known(path.to_bytes()) == Known::Plain
    }

    #[test]
    fn remembered_until_a_name_may_have_been_replaced() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("a")).unwrap();
        fs::write(t.path().join("a/f"), b"1").unwrap();
        symlink("a", t.path().join("l")).unwrap();
        symlink("f", t.path().join("a/s")).unwrap();
        let r = resolver(t.path(), CachePolicy::All);
        assert_eq!(r.known(b"/a/f"), Known::Unknown);
        type Forget = fn(&Resolver);
        let forgetting: [(Forget, &str); 2] = [
            (Resolver::names_added, "a symlink or link was made"),
            (Resolver::changed, "a rename, rmdir, chmod..."),
        ];
        for (forget, what) in forgetting {
            assert!(learn(&r, c"/a/f", 0));
            forget(&r);
            assert_eq!(r.known(b"/a/f"), Known::Unknown, "{what}");
        }
        // A ticket of an older generation is not honoured.
        let at = At {
            dir: None,
            caller: &Me,
        };
        let old = r.probe(&at, c"/a/f", 0, Known::Unknown).unwrap();
        r.names_added();
        r.remember_plain(c"/a/f", &old);
        assert_eq!(r.known(b"/a/f"), Known::Unknown);
        // Through a symlink, or a final symlink itself: never remembered.
        assert!(!learn(&r, c"/l/f", 0));
        assert_eq!(r.known(b"/l/f"), Known::Symlinked);
        assert!(!learn(&r, c"/a/s", 0));
        assert!(!learn(&r, c"/a/s", libc::O_NOFOLLOW));
        // Without a cache, nothing is.
        assert!(!learn(&resolver(t.path(), CachePolicy::Off), c"/a/f", 0));
        // Errors are the resolution's.
        assert_eq!(
            r.probe(&at, c"/a/missing", 0, Known::Unknown).err(),
            Some(Errno::ENOENT)
        );
        assert_eq!(
            r.probe(&at, c"/a/f/x", 0, Known::Unknown).err(),
            Some(Errno::ENOTDIR)
        );
        assert_eq!(
            r.probe(&at, c"/a/s", libc::O_NOFOLLOW, Known::Unknown)
                .map(|p| p.st.st_mode & libc::S_IFMT)
                .ok(),
            Some(libc::S_IFLNK)
        );
    }

    #[test]
    fn layers_only() {
        // Layers: the root's own filesystem; procfs never.
        let r = resolver(std::path::Path::new("/"), CachePolicy::Layers);
        assert!(!learn(&r, c"/proc/self/status", 0));
        assert!(!learn(&r, c"/proc/meminfo", 0));
    }
}
