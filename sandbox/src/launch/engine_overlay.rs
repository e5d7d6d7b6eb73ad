//! The OCI runtime's own overlayfs over an engine's layers: a container
//! whose rootfs is an overlayfs mount (Docker's overlay2, Podman's and
//! containerd's overlay drivers) gets, as its root, a new overlay of
//! idmapped copies of that mount's layers, since the kernel idmaps an
//! overlay's layers (Linux 5.19) but not an overlayfs mount itself.
//!
//! How: the engine's mount is found in /proc/self/mountinfo (the line
//! whose mount point is the rootfs; its super options name the layers,
//! octal-escaped, lower layers separated by ':'). Each lower layer gets a
//! detached read-only copy, and the directory holding the upper and work
//! directories a writable one (overlayfs wants both on one mount), each
//! with the sandbox's map as its idmap. The kernel before 6.15 takes a
//! layer only from a mount of the caller's mount namespace, so a thread
//! of ours enters a private mount namespace of its own, attaches the
//! copies on a tmpfs there, makes the overlay (`fsopen`, the engine's
//! other options, `index=off`) as a detached mount and leaves: the
//! overlay keeps private clones of its layers, nothing is attached in the
//! host's namespace. Writes land in the engine's upper directory, as the
//! engine's own mount would put them, so `docker cp`, `docker diff` and
//! `podman cp` keep working.
//!
//! Two overlays may share an upper directory only when the first was
//! made with `index=off` (else EBUSY): Docker and containerd set it, and
//! the kernel default is off. The work directory is never shared: ours
//! is the upper directory's name with [`OWN_WORKDIR`] appended, beside it
//! (on its file system, as overlayfs requires), made afresh before each
//! mount and
//! removed by `delete` ([`remove_workdir`]), since a mount cleans out its
//! work directory's `work` (under the engine's live mount) and a
//! `volatile` mount (Podman's `--rm`) leaves `work/incompat/volatile`
//! there, which makes the kernel refuse every later mount of that work
//! directory (EINVAL: "overlay with incompat feature 'volatile' cannot
//! be mounted"). [`EngineOverlay::refusal`] says when the engine's mount
//! has the index on, and
//! [`EngineOverlay::try_remake`] makes the overlay once in a child
//! process, so that `create` learns of anything else the running kernel
//! refuses before it chooses the container's ids.
//!
//! Owns reading the engine's mount and making the new overlay; not the
//! id map (`idmapped.rs`) nor attaching the root (`rootfs.rs`).

use std::ffi::CString;
use std::fs;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{pipe, write};

use super::bind::open_source;
use crate::mountinfo::{octal, unescape};
use crate::sys::caps;
use crate::sys::mount_tree::{attach, clone_mount_of, set_idmap};
use crate::sys::new_mount::mount_new;
use crate::sys::process::{clone_process, exit_now, Forked};
use crate::sys::thread_ids::{set_fsgid, set_fsuid};

/// What the name of the runtime's own work directory for an overlay of
/// an engine's layers appends to the upper directory's name, beside it
/// (`diff.supervisor-work` beside Docker's and Podman's `diff`): one per
/// upper directory, even where several share a parent.
pub const OWN_WORKDIR: &str = ".supervisor-work";

/// Removes a work directory of ours ([`EngineOverlay::own_workdir`]);
/// one that is already gone (the engine removed its layer) is no error.
pub fn remove_workdir(path: &Path) -> std::io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The layers and options of an engine's overlayfs mount.
#[derive(Debug, PartialEq, Eq)]
pub struct EngineOverlay {
    pub lowers: Vec<PathBuf>,
    /// Upper and work directories (none for a read-only overlay).
    pub upper: Option<(PathBuf, PathBuf)>,
    /// The other super options, as `key` or `key=value`.
    pub options: Vec<String>,
}

impl EngineOverlay {
    /// The engine's overlay whose mount point is `rootfs`; `Ok(None)`
    /// when `rootfs` is on another file system.
    pub fn of(rootfs: &Path) -> Result<Option<EngineOverlay>, String> {
        let fs = nix::sys::statfs::statfs(rootfs).map_err(|e| e.desc().to_string())?;
        if fs.filesystem_type() != nix::sys::statfs::OVERLAYFS_SUPER_MAGIC {
            return Ok(None);
        }
        let path = fs::canonicalize(rootfs).map_err(|e| e.to_string())?;
        let info = fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let line = info
            .lines()
            .rev()
            .find(|l| mount_point(l).is_some_and(|p| p == path.as_os_str().as_bytes()))
            .ok_or("an overlayfs directory that is not the overlay's mount point")?;
        parse_line(line).map(Some)
    }

    /// The work directory our overlay of these layers uses (beside the
    /// upper directory, [`OWN_WORKDIR`] appended to its name); `None`
    /// for a read-only overlay.
    pub fn own_workdir(&self) -> Option<PathBuf> {
        self.upper.as_ref().map(|(upper, _)| beside(upper))
    }

    /// Why a second overlay of these layers would be refused or wrong,
    /// if it would: the engine's mount has the index on (EBUSY), or
    /// data-only lower layers.
    pub fn refusal(&self) -> Option<String> {
        let index = self.options.iter().find_map(|o| o.strip_prefix("index="));
        let index_on = match index {
            Some(v) => v == "on",
            None => fs::read_to_string("/sys/module/overlay/parameters/index")
                .is_ok_and(|v| v.trim() == "Y"),
        };
        if index_on && self.upper.is_some() {
            return Some("its overlayfs mount has index=on, so a second overlay of its upper directory is refused".into());
        }
        None
    }

    /// A detached overlay of idmapped copies of the layers (idmap: the
    /// user namespace `ns`), nosuid, nodev, and read-only if `read_only`;
    /// made with `creator` (the host uid and gid of the container's
    /// root) as its filesystem ids: overlayfs works in its upper and work
    /// directories with its maker's credentials, and host root has no id
    /// on the idmapped copies (EOVERFLOW: the overlay would fall back to
    /// read-only), where the container root's host ids are host 0 on disk.
    pub fn mount_shifted(
        &self,
        ns: BorrowedFd<'_>,
        read_only: bool,
        creator: (u32, u32),
    ) -> Result<OwnedFd, String> {
        let flags = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;
        let copy = |path: &Path, extra: u64| {
            let src = open_source(path, true)
                .map_err(|e| format!("layer {}: {}", path.display(), e.desc()))?;
            let copy = clone_mount_of(src.as_fd()).map_err(|e| {
                format!("layer {}: copying its mount: {}", path.display(), e.desc())
            })?;
            set_idmap(copy.as_fd(), ns, flags | extra).map_err(|e| {
                format!(
                    "layer {}: its idmapped mount: {} (overlayfs takes idmapped layers from Linux 5.19)",
                    path.display(),
                    e.desc()
                )
            })?;
            Ok::<_, String>(copy)
        };
        let lowers = (self.lowers.iter())
            .map(|l| copy(l, libc::MOUNT_ATTR_RDONLY))
            .collect::<Result<Vec<_>, _>>()?;
        let upper = match &self.upper {
            Some((upper, work)) => {
                let (base, up, _) = common_base(upper, work)
                    .ok_or("the upper and work directories share no parent")?;
                fresh_workdir(&beside(upper))?;
                let ours = beside(&up);
                Some((copy(&base, 0)?, up, ours))
            }
            None => None,
        };
        let mut attrs = flags;
        if read_only {
            attrs |= libc::MOUNT_ATTR_RDONLY;
        }
        let options = self.options.clone();
        // The thread's change of its filesystem ids makes the whole
        // process non-dumpable (the kernel marks the shared mm on any
        // fsuid change): put back what it was, or the processes forked
        // from this one (the socket factory) inherit it, and the
        // supervisor may no longer copy their descriptors (pidfd_getfd:
        // EPERM, every guest socket() ENOBUFS).
        let dumpable = nix::sys::prctl::get_dumpable().unwrap_or(false);
        // A thread of our own: its private mount namespace goes with it.
        let made = std::thread::scope(|s| {
            s.spawn(|| in_private_namespace(&lowers, upper.as_ref(), &options, attrs, creator))
                .join()
                .unwrap_or_else(|_| Err("the overlay's thread panicked".into()))
        });
        if dumpable {
            nix::sys::prctl::set_dumpable(true)
                .map_err(|e| format!("dumpable again: {}", e.desc()))?;
        }
        made
    }

    /// Makes, in a child process, the overlay [`mount_shifted`] would
    /// make for a container whose ids are `ids`, and drops it: `Err`
    /// says why the kernel or the layers refuse it (an option the
    /// running kernel does not take with idmapped layers, a layer that
    /// cannot be idmapped), so that `create` keeps the host's ids
    /// instead of failing. A child, so that the caller (`create`, which
    /// forks the anchor next) starts no thread and keeps its own mount
    /// namespace and dumpability.
    ///
    /// [`mount_shifted`]: EngineOverlay::mount_shifted
    pub fn try_remake(&self, ids: &vfs::IdMap, read_only: bool) -> Result<(), String> {
        let (Ok(uid), Ok(gid)) = (ids.uid_to_host(0), ids.gid_to_host(0)) else {
            return Err("the id map has no container root".into());
        };
        let (rx, tx) = pipe().map_err(|e| format!("pipe: {}", e.desc()))?;
        match clone_process(CloneFlags::empty()).map_err(|e| format!("fork: {}", e.desc()))? {
            Forked::Child => {
                drop(rx);
                let made = super::idmapped::sandbox_map_namespace(ids)
                    .and_then(|ns| self.mount_shifted(ns.as_fd(), read_only, (uid, gid)));
                let code = match made {
                    Ok(_) => 0,
                    Err(e) => {
                        let _ = write(&tx, e.as_bytes());
                        1
                    }
                };
                exit_now(code)
            }
            Forked::Parent(child) => {
                drop(tx);
                let mut why = String::new();
                let _ = fs::File::from(rx).read_to_string(&mut why);
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, 0)) => Ok(()),
                    _ if !why.is_empty() => Err(why),
                    status => Err(format!("the trial ended with {status:?}")),
                }
            }
        }
    }
}

/// `path` with [`OWN_WORKDIR`] appended to its last component.
fn beside(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(OWN_WORKDIR);
    PathBuf::from(name)
}

/// Makes our work directory empty, owned by host root (the container's
/// root through the idmapped copy), mode 0700: what an earlier mount
/// left there (a trial's, a crashed container's, a `volatile` mount's
/// `work/incompat/volatile`) goes first.
fn fresh_workdir(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    remove_workdir(path).map_err(|e| format!("{}: removing it: {e}", path.display()))?;
    fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Where the layer copies are attached, in the thread's own namespace.
const STAGE: &str = "/tmp";

fn in_private_namespace(
    lowers: &[OwnedFd],
    upper: Option<&(OwnedFd, PathBuf, PathBuf)>,
    options: &[String],
    attrs: u64,
    creator: (u32, u32),
) -> Result<OwnedFd, String> {
    let err = |what: &str, e: nix::Error| format!("{what}: {}", e.desc());
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| err("a mount namespace", e))?;
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| err("making the namespace private", e))?;
    mount(
        Some("tmpfs"),
        STAGE,
        Some("tmpfs"),
        MsFlags::empty(),
        Some("mode=0700"),
    )
    .map_err(|e| err("a tmpfs for the layers", e))?;
    // This thread's filesystem ids only; changing them clears the file
    // capabilities from the effective set, which are put back.
    let (effective, _) = caps::current().map_err(|e| err("reading capabilities", e))?;
    set_fsgid(creator.1).map_err(|e| err("setfsgid", e))?;
    set_fsuid(creator.0).map_err(|e| err("setfsuid", e))?;
    caps::set_effective(effective).map_err(|e| err("restoring capabilities", e))?;
    let made = stage_and_mount(lowers, upper, options, attrs);
    let _ = umount2(STAGE, MntFlags::MNT_DETACH);
    made
}

fn stage_and_mount(
    lowers: &[OwnedFd],
    upper: Option<&(OwnedFd, PathBuf, PathBuf)>,
    options: &[String],
    attrs: u64,
) -> Result<OwnedFd, String> {
    let place = |name: String, copy: &OwnedFd| {
        let dir = Path::new(STAGE).join(&name);
        fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let target = open_source(&dir, true).map_err(|e| e.desc().to_string())?;
        attach(copy.as_fd(), target.as_fd())
            .map_err(|e| format!("attaching a layer: {}", e.desc()))?;
        Ok::<_, String>(dir)
    };
    let mut lower_paths = Vec::new();
    for (i, l) in lowers.iter().enumerate() {
        lower_paths.push(place(format!("{i}"), l)?.display().to_string());
    }
    let mut pairs = vec![("lowerdir".to_string(), lower_paths.join(":"))];
    if let Some((copy, up, wk)) = upper {
        let base = place("u".into(), copy)?;
        pairs.push(("upperdir".into(), base.join(up).display().to_string()));
        pairs.push(("workdir".into(), base.join(wk).display().to_string()));
    }
    pairs.push(("index".into(), "off".into()));
    let mut flags = Vec::new();
    for o in options {
        match o.split_once('=') {
            Some((k, v)) => pairs.push((k.into(), v.into())),
            // `userxattr`, `volatile`, ...: flags, never `key=` (which
            // Linux 6.1's overlayfs refuses, EINVAL).
            None => flags.push(o.clone()),
        }
    }
    let cstr = |s: &str| CString::new(s).map_err(|_| format!("option {s}: a NUL byte"));
    let owned = (pairs.iter())
        .map(|(k, v)| Ok((cstr(k)?, Some(cstr(v)?))))
        .chain(flags.iter().map(|f| Ok((cstr(f)?, None))))
        .collect::<Result<Vec<_>, String>>()?;
    let refs: Vec<_> = owned
        .iter()
        .map(|(k, v)| (k.as_c_str(), v.as_deref()))
        .collect();
    mount_new(c"overlay", &refs, attrs)
        .map_err(|e| format!("mounting an overlay of the idmapped layers: {}", e.desc()))
}

/// The deepest directory holding both `upper` and `work`, and each
/// relative to it.
fn common_base(upper: &Path, work: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let (u, w): (Vec<Component>, Vec<Component>) =
        (upper.components().collect(), work.components().collect());
    let n = u.iter().zip(&w).take_while(|(a, b)| a == b).count();
    if n == 0 || n == u.len() || n == w.len() {
        return None;
    }
    let base: PathBuf = u[..n].iter().collect();
    let rest = |c: &[Component]| c.iter().collect::<PathBuf>();
    Some((base, rest(&u[n..]), rest(&w[n..])))
}

/// The mount point field of a mountinfo line, unescaped.
fn mount_point(line: &str) -> Option<Vec<u8>> {
    line.split(' ').nth(4).map(unescape)
}

/// The layers and options of a mountinfo line of an overlayfs mount.
fn parse_line(line: &str) -> Result<EngineOverlay, String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = (fields.iter())
        .position(|f| *f == "-")
        .ok_or("a mountinfo line without its separator")?;
    if fields.get(3) != Some(&"/") {
        return Err("a bind of part of an overlayfs mount".into());
    }
    let super_options = fields
        .get(sep + 3)
        .ok_or("a mountinfo line without options")?;
    parse_options(super_options)
}

/// Parses an overlay's super options (`rw,lowerdir=...,upperdir=...`).
fn parse_options(text: &str) -> Result<EngineOverlay, String> {
    let path = |v: &str| PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(v)).to_os_string());
    let (mut lowers, mut upper, mut work, mut options) = (None, None, None, Vec::new());
    for item in text.split(',') {
        match item.split_once('=') {
            Some(("lowerdir", v)) => lowers = Some(split_lowers(v)?),
            Some(("upperdir", v)) => upper = Some(path(v)),
            Some(("workdir", v)) => work = Some(path(v)),
            Some(("index", _)) => options.push(item.to_string()),
            Some((k, _)) if k.ends_with('+') => {
                return Err(format!("overlay option {k}: not understood"))
            }
            _ if matches!(item, "rw" | "ro" | "seclabel" | "") => {}
            _ => options.push(String::from_utf8_lossy(&unescape(item)).into_owned()),
        }
    }
    let lowers = lowers.ok_or("an overlay without lowerdir")?;
    let upper = match (upper, work) {
        (Some(u), Some(w)) => Some((u, w)),
        (None, None) => None,
        _ => return Err("an overlay with an upper directory but no work directory".into()),
    };
    Ok(EngineOverlay {
        lowers,
        upper,
        options,
    })
}

/// The lower layers of a `lowerdir` value: separated by ':', each
/// octal-escaped (`\072` is a ':' of a name, on Linux 6.7 and later);
/// on older kernels a name's ':' shows as the user's `\:`, whose
/// backslash is escaped (`\134:`). A data-only layer (`::`) is refused.
fn split_lowers(value: &str) -> Result<Vec<PathBuf>, String> {
    let b = value.as_bytes();
    let (mut out, mut cur, mut i, mut escaped) = (Vec::new(), Vec::new(), 0, false);
    while i < b.len() {
        let (c, decoded) = match octal(&b[i..]) {
            Some(c) => (c, true),
            None => (b[i], false),
        };
        i += if decoded { 4 } else { 1 };
        if escaped {
            cur.push(c);
            escaped = false;
        } else if decoded && c == b'\\' {
            escaped = true;
        } else if !decoded && c == b':' {
            if cur.is_empty() {
                return Err("an overlay with data-only lower layers".into());
            }
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if cur.is_empty() {
        return Err("an overlay with an empty lower layer".into());
    }
    out.push(cur);
    Ok(out
        .into_iter()
        .map(|v| PathBuf::from(std::ffi::OsString::from(std::ffi::OsStr::from_bytes(&v))))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_line() {
        let line = "1234 30 0:77 / /var/lib/docker/overlay2/abc/merged rw,relatime shared:1 - overlay overlay rw,lowerdir=/d/l/A:/d/l/B,upperdir=/d/abc/diff,workdir=/d/abc/work,index=off,nouserxattr";
        assert_eq!(
            mount_point(line).unwrap(),
            b"/var/lib/docker/overlay2/abc/merged"
        );
        let o = parse_line(line).unwrap();
        assert_eq!(o.lowers, [PathBuf::from("/d/l/A"), PathBuf::from("/d/l/B")]);
        assert_eq!(
            o.upper,
            Some((PathBuf::from("/d/abc/diff"), PathBuf::from("/d/abc/work")))
        );
        assert_eq!(o.options, ["index=off", "nouserxattr"]);
        assert_eq!(o.refusal(), None);
        assert_eq!(
            o.own_workdir(),
            Some(PathBuf::from("/d/abc/diff.supervisor-work"))
        );
        assert_eq!(
            common_base(Path::new("/d/abc/diff"), Path::new("/d/abc/work")),
            Some((
                PathBuf::from("/d/abc"),
                PathBuf::from("diff"),
                PathBuf::from("work")
            ))
        );
    }

    #[test]
    fn escaped_names() {
        // 6.7 and later: `\072` is a name's ':'; before: the user's `\:`.
        let new = split_lowers("/a\\072b:/c\\054d\\040e").unwrap();
        assert_eq!(new, [PathBuf::from("/a:b"), PathBuf::from("/c,d e")]);
        let old = split_lowers("/a\\134:b:/c").unwrap();
        assert_eq!(old, [PathBuf::from("/a:b"), PathBuf::from("/c")]);
        assert!(split_lowers("/a::/b").is_err());
        let o = parse_options("rw,lowerdir=/l,upperdir=/u/d,workdir=/u/w,index=on").unwrap();
        assert!(o.refusal().is_some());
        assert!(parse_options("rw,lowerdir=/l,upperdir=/u/d").is_err());
    }
}
