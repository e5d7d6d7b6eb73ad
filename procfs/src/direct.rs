//! The direct route of a served /proc read: a plain read open whose path
//! is absolute and clean under `/proc` (`/proc/2/stat`, `/proc/uptime`,
//! and `/proc/self/status` once the caller's pid is put in, as the VFS
//! puts it in) is opened beneath the view's procfs root with no symlink
//! followed and no mount crossed (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
//! | RESOLVE_NO_XDEV`). The kernel's name of the file opened is then the
//! path itself, so it needs no `readlink`; and a file of a process (the
//! fence's, which the supervisor opens for the guest) is opened for
//! reading at once, where the general route opens it `O_PATH` and opens
//! it again through `/proc/self/fd` (two lookups of a magic link, each
//! with its ptrace check, and a close: about 9 µs of a 40 µs open on
//! these VMs).
//!
//! Why the name is right: every component is a name (no `.`, `..` or
//! empty one), the walk follows no symlink and stays on the mount of the
//! view's procfs root, whose own name is `/proc`, so the file is that
//! component of that directory, as the kernel prints it. A path that
//! does not qualify, and any error but the kernel's refusal of a read of
//! a regular file (EACCES, answered here: see `refused`), go the general
//! way (`None`), which answers as before; the covers, masked directories and read-only
//! parts of the view's /proc are mounts, so their files never come this
//! way, nor /proc/sys and /proc/sysvipc, which the guest opens itself.
//! The files this route opens for reading are those the general route
//! opens so too (a process's regular files, which the fence keeps from
//! the guest); a file of procfs's root is opened `O_PATH` only, for the
//! sandbox's own texts, which need no open of it.
//!
//! Owns: which paths qualify, the view's procfs root kept for them, and
//! the open. Does not own: what is served (`served.rs`), the fence
//! (`fence.rs`), the answer to the guest (the open handler).

use std::fmt::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

use nix::errno::Errno;
use vfs::resolve::flags::{BENEATH, IN_ROOT, NO_MAGICLINKS, NO_SYMLINKS, NO_XDEV};
use vfs::Resolver;

use super::served::{served_unopened, Synthetic};

/// The longest name the route gives (what `tasks::fd_name` reads).
const NAME_ROOM: usize = 63;

/// The inode number of procfs's root.
const PROC_ROOT_INO: u64 = 1;

/// The flags a read on this route may carry besides `O_RDONLY` (the open
/// handler's: none that an open by the supervisor would answer
/// differently from the guest's).
const PASSED_FLAGS: i32 = libc::O_NONBLOCK | vfs::sys::O_LARGEFILE | libc::O_NOCTTY;

/// A file of the view's procfs opened on the direct route.
pub struct Direct {
    pub fd: OwnedFd,
    pub st: libc::stat,
    /// Its name as the kernel prints it (`/proc/2/stat`).
    pub name: String,
    /// Opened for reading, or `O_PATH` (a global file served with a
    /// text of the sandbox's own, which needs no open of it).
    pub readable: bool,
}

/// The view's procfs root, `O_PATH`, once it was seen to be the procfs
/// mount's root named `/proc`; `None` when it is not (the route is then
/// never taken).
#[derive(Debug, Default)]
pub(super) struct ProcRoot(OnceLock<Option<OwnedFd>>);

impl ProcRoot {
    fn get(&self, fs: &Resolver, proc_dev: Option<u64>) -> Option<BorrowedFd<'_>> {
        let root = self.0.get_or_init(|| {
            let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
            let fd = vfs::sys::openat2(fs.root(), c"/proc", flags, 0, IN_ROOT).ok()?;
            let st = vfs::sys::fstat(fd.as_fd()).ok()?;
            let mut buf = [0u8; 16];
            let n = super::own_fds::name_of(fd.as_fd(), &mut buf).ok()?;
            let is_root = Some(st.st_dev) == proc_dev && st.st_ino == PROC_ROOT_INO;
            (is_root && buf.get(..n) == Some(&b"/proc"[..])).then_some(fd)
        });
        root.as_ref().map(AsFd::as_fd)
    }
}

/// The path under the view's /proc that the clean absolute `path` names
/// (`2/stat`), with `self`, `thread-self`, `mounts` and `net` first put
/// as the caller's (`ids`: its tgid and tid in the view, as the VFS
/// expands them; not when one is the whole path and the open does not
/// `follow` its last component); `None` when `path` does not qualify.
pub fn direct_rel(path: &[u8], follow: bool, ids: &dyn vfs::Caller) -> Option<String> {
    let rest = std::str::from_utf8(path.strip_prefix(b"/proc/")?).ok()?;
    let mut parts = rest.split('/');
    let first = parts.next()?;
    if rest.len() > NAME_ROOM || !rest.split('/').all(is_name) {
        return None;
    }
    let mut rel = String::with_capacity(rest.len() + 16);
    match first {
        "sys" | "sysvipc" => return None,
        // The link itself, not followed: the general route's ELOOP.
        "self" | "thread-self" | "mounts" | "net" if !follow && first == rest => return None,
        "self" | "thread-self" | "mounts" | "net" => {
            let (tgid, tid) = ids.proc_ids().ok()?;
            let _ = match first {
                "self" => write!(rel, "{tgid}"),
                "thread-self" => write!(rel, "{tgid}/task/{tid}"),
                own => write!(rel, "{tgid}/{own}"),
            };
        }
        name => rel.push_str(name),
    }
    for part in parts {
        rel.push('/');
        rel.push_str(part);
    }
    ("/proc/".len() + rel.len() <= NAME_ROOM).then_some(rel)
}

/// A component the route takes: a name, not `.`, `..` or empty.
fn is_name(part: &str) -> bool {
    !matches!(part, "" | "." | "..")
}

impl Synthetic {
    /// Opens and checks the view's procfs root the route keeps, which the
    /// first direct open would otherwise do on the guest's time (an
    /// `openat2`, an `fstat` and a `readlink`).
    pub(super) fn warm_direct(&self, fs: &Resolver) {
        self.kept.proc_root.get(fs, self.proc_dev());
    }

    /// `rel` ([`direct_rel`]) opened beneath the view's procfs root for a
    /// read with `flags` (`O_RDONLY` and [`PASSED_FLAGS`] only): a regular
    /// file of procfs's own mount; `Err(EACCES)` when the kernel refuses
    /// that read of a regular file of that mount (a process's `environ`
    /// or `mem` that the caller may not trace: see `refused`); or
    /// `None` (the general route then answers, other errors included).
    pub fn open_direct(
        &self,
        fs: &Resolver,
        rel: &str,
        flags: i32,
    ) -> Option<Result<Direct, Errno>> {
        if flags & !PASSED_FLAGS != 0 {
            return None;
        }
        let root = self.kept.proc_root.get(fs, self.proc_dev())?;
        let name = format!("/proc/{rel}");
        let readable = !served_unopened(&name);
        let flags = match readable {
            true => flags | libc::O_CLOEXEC,
            false => libc::O_PATH | libc::O_CLOEXEC,
        };
        let rel = std::ffi::CString::new(rel).ok()?;
        let fd = match vfs::sys::openat2(root, &rel, flags as u64, 0, SCOPE) {
            Ok(fd) => fd,
            Err(Errno::EACCES) if readable => {
                return refused(root, &rel).then_some(Err(Errno::EACCES))
            }
            Err(_) => return None,
        };
        let st = vfs::sys::fstat(fd.as_fd()).ok()?;
        if !is_regular(&st) {
            return None;
        }
        Some(Ok(Direct {
            fd,
            st,
            name,
            readable,
        }))
    }
}

/// How the route resolves beneath the view's procfs root.
const SCOPE: u64 = BENEATH | NO_SYMLINKS | NO_MAGICLINKS | NO_XDEV;

fn is_regular(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Whether a read of `rel` that the kernel refused (EACCES) is the
/// refusal of a regular file of procfs's own mount: it resolves (`O_PATH`,
/// which checks no permission on the file itself) to one. The general
/// route would find that same file and, the fence keeping it from the
/// guest, open it again for the read as the same caller, to be refused
/// the same way (procfs checks a read's permission at the open: the
/// file's mode, and for `environ`, `mem`, `auxv` and the like whether
/// the opener may trace the process); so that answer is given here,
/// without the general route's second resolution and open. A directory
/// (which the general route leaves to the guest's own open) or a name
/// whose walk was refused is not.
fn refused(root: BorrowedFd<'_>, rel: &std::ffi::CStr) -> bool {
    let flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    vfs::sys::openat2(root, rel, flags, 0, SCOPE)
        .and_then(|fd| vfs::sys::fstat(fd.as_fd()))
        .is_ok_and(|st| is_regular(&st))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ids;

    impl vfs::Caller for Ids {
        fn proc_ids(&self) -> Result<(i32, i32), Errno> {
            Ok((7, 9))
        }
    }

    struct NoIds;

    impl vfs::Caller for NoIds {
        fn proc_ids(&self) -> Result<(i32, i32), Errno> {
            Err(Errno::ESRCH)
        }
    }

    #[test]
    fn clean_paths_under_proc_qualify() {
        let rel = |p: &str| direct_rel(p.as_bytes(), true, &Ids);
        assert_eq!(rel("/proc/2/stat").as_deref(), Some("2/stat"));
        assert_eq!(rel("/proc/uptime").as_deref(), Some("uptime"));
        assert_eq!(rel("/proc/self/status").as_deref(), Some("7/status"));
        assert_eq!(
            rel("/proc/thread-self/stat").as_deref(),
            Some("7/task/9/stat")
        );
        assert_eq!(rel("/proc/mounts").as_deref(), Some("7/mounts"));
        assert_eq!(rel("/proc/net/tcp").as_deref(), Some("7/net/tcp"));
        assert_eq!(
            rel("/proc/2/task/2/status").as_deref(),
            Some("2/task/2/status")
        );
        for bad in [
            "/proc/",
            "/proc",
            "/proc//2/stat",
            "/proc/2//stat",
            "/proc/2/stat/",
            "/proc/./2/stat",
            "/proc/2/../1/stat",
            "/proc/sys/kernel/pid_max",
            "/proc/sysvipc/shm",
            "//proc/2/stat",
            "/tmp/proc/2/stat",
            "proc/2/stat",
        ] {
            assert_eq!(rel(bad), None, "{bad}");
        }
        // Longer than the name a descriptor's readlink is read into.
        let long = format!("/proc/2/{}", "x".repeat(NAME_ROOM - "/proc/2/".len()));
        assert_eq!(
            rel(&long).map(|r| r.len()),
            Some(NAME_ROOM - "/proc/".len())
        );
        assert_eq!(rel(&format!("{long}x")), None);
        let own = format!("/proc/self/{}", "x".repeat(NAME_ROOM - "/proc/7/".len()));
        assert_eq!(rel(&own).map(|r| r.len()), Some(NAME_ROOM - "/proc/".len()));
        assert_eq!(rel(&format!("{own}x")), None);
        assert_eq!(direct_rel(b"/proc/self/stat", true, &NoIds), None);
        assert_eq!(direct_rel(b"/proc/2/\xffstat", true, &Ids), None);
        assert_eq!(
            direct_rel(b"/proc/2/stat", true, &NoIds).as_deref(),
            Some("2/stat")
        );
        // O_NOFOLLOW of the link itself; its files are followed through it.
        for link in [
            "/proc/self",
            "/proc/thread-self",
            "/proc/mounts",
            "/proc/net",
        ] {
            assert_eq!(direct_rel(link.as_bytes(), false, &Ids), None, "{link}");
        }
        let own = direct_rel(b"/proc/self/stat", false, &Ids);
        assert_eq!(own.as_deref(), Some("7/stat"));
    }

    fn status_flags(fd: &OwnedFd) -> i32 {
        let raw = std::os::fd::AsRawFd::as_raw_fd(fd);
        nix::fcntl::fcntl(raw, nix::fcntl::FcntlArg::F_GETFL).unwrap()
    }

    #[test]
    fn opens_regular_files_of_procfs_named_as_the_kernel_names_them() {
        let fs = Resolver::new(std::fs::File::open("/").unwrap().into());
        let syn = Synthetic::always(&fs);
        let me = std::process::id();
        let rel = format!("{me}/stat");
        let open = |rel: &str, flags| syn.open_direct(&fs, rel, flags).map(Result::unwrap);
        let stat = open(&rel, libc::O_RDONLY).unwrap();
        assert!(stat.readable);
        assert_eq!(stat.name, format!("/proc/{me}/stat"));
        let printed = crate::tasks::fd_name(&stat.fd);
        assert_eq!(printed.as_deref(), Some(stat.name.as_str()));
        let text = crate::sealed::read_all(stat.fd).unwrap();
        assert!(text.starts_with(&format!("{me} (")), "{text}");
        // A text of the sandbox's own: O_PATH, the open's flags its own.
        let up = open("uptime", libc::O_NONBLOCK).unwrap();
        assert!(!up.readable);
        assert_eq!(
            crate::tasks::fd_name(&up.fd).as_deref(),
            Some("/proc/uptime")
        );
        assert_eq!(status_flags(&up.fd) & libc::O_PATH, libc::O_PATH);
        // The guest's flags on a file opened for reading.
        let rel = format!("{me}/status");
        let status = open(&rel, libc::O_NONBLOCK).unwrap();
        let flags = status_flags(&status.fd);
        assert_eq!(
            flags & (libc::O_ACCMODE | libc::O_NONBLOCK),
            libc::O_NONBLOCK
        );
        // Links, magic links, directories, missing names, other flags:
        // the general route's.
        for rel in [
            format!("{me}/exe"),
            format!("{me}/fd/0"),
            format!("{me}/root/etc/hostname"),
            format!("{me}"),
            format!("{me}/task"),
            format!("{me}/no-such-file"),
            "self/stat".to_owned(),
        ] {
            assert!(
                syn.open_direct(&fs, &rel, libc::O_RDONLY).is_none(),
                "{rel}"
            );
        }
        let rel = format!("{me}/stat");
        assert!(syn.open_direct(&fs, &rel, libc::O_NOATIME).is_none());
        assert!(syn.open_direct(&fs, &rel, libc::O_RDWR).is_none());
    }

    #[test]
    fn a_refused_read_of_a_regular_file_is_answered() {
        let fs = Resolver::new(std::fs::File::open("/").unwrap().into());
        let syn = Synthetic::always(&fs);
        let root = syn.kept.proc_root.get(&fs, syn.proc_dev()).unwrap();
        // A regular file of procfs: its refusal is the route's answer.
        let me = std::process::id();
        assert!(refused(
            root,
            &std::ffi::CString::new(format!("{me}/environ")).unwrap()
        ));
        // A directory, a missing name, a symlink: the general route's.
        for rel in [
            format!("{me}"),
            format!("{me}/nothing"),
            format!("{me}/exe"),
        ] {
            assert!(
                !refused(root, &std::ffi::CString::new(rel.clone()).unwrap()),
                "{rel}"
            );
        }
    }
}
