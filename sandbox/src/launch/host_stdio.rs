//! The guest's stdin, stdout and stderr when they are host devices: each
//! reopened through a read-only mount, so that the guest may read and
//! write the device but never change the host's node.
//!
//! Why: a descriptor the guest inherits is the host's inode on the host's
//! mount. Root's sandbox without a range of subordinate ids
//! (`subids.rs`) maps its root to the host's root, the owner of the
//! host's /dev/null and of root's terminal, and an owner needs no
//! capability to `fchmod`, `fchown`, `futimens` or set an ACL on what it
//! owns (`fchown`, `futimens`, `fsetxattr` pass the filter; `chmod
//! /proc/self/fd/0` reaches the same node through a path): `supervisor
//! run ... < /dev/null` let a root guest take write permission from the
//! host's /dev/null for every user, and a guest writing to root's
//! terminal could open it to every user. The same node reached through a
//! read-only mount answers each with EROFS, as the devices bound into the
//! view's /dev do (`dev_view.rs`).
//!
//! How, in the invoker's mount namespace (`launch`, before init is
//! cloned; the pool client and the OCI runtime's `exec`, on the
//! descriptors they send): `open_tree(OPEN_TREE_CLONE)` of the descriptor
//! makes a mount of its one file that belongs to no namespace (nothing of
//! the host's mount table changes), `mount_setattr` makes that copy
//! read-only, and the file is opened again through it with the
//! descriptor's access mode and status flags (and `O_NOCTTY`). The copy
//! lives as long as the new descriptor; `/proc/self/fd/N` names it `/`.
//! Init then puts the view's own /dev node (a read-only bind of the
//! host's) in place of a memory device it inherited, which names it
//! `/dev/null` as before; the pool's and `exec`'s processes cannot (an
//! open before their exec is not served: they are not yet dumpable).
//! So `launch` copies no memory device the view holds
//! ([`launch_stdio`]): init replaces it, or fails. Nor does the pool's
//! client ([`shielded_unless_view_device`]): the pool's sandbox, outside
//! the view and holding its root, opens the view's node in its place
//! ([`view_node_for`]), or fails the request. `exec` still copies.
//!
//! Only devices that reopen as the same device are reopened: the memory
//! devices (null, zero, full, random, urandom...) and terminals (a tty,
//! the console, a pseudo-terminal's slave; not ptmx, which would make a
//! new terminal). A pipe, a socket or an anonymous file is the guest's
//! own; a regular file or FIFO the invoker redirected to is shared on
//! purpose, as a `--rw` mount is (docs/launch-and-view.md, "What the guest
//! shares with the host").
//!
//! The copy needs CAP_SYS_ADMIN over the invoker's mount namespace: as
//! another user a terminal stays as it was (that guest is the invoker's
//! own user, and owns nothing of the host's that the invoker does not).
//!
//! An anonymous pipe in stdio is widened instead ([`open_pipe_to_guest`]):
//! root's guest runs as ids of a range of its own, not as the host's root
//! who owns the pipe (mode 0600), so its reopen of it by `/dev/stdin`,
//! `/dev/stdout`, `/dev/stderr` or `/proc/self/fd/N` (`cat /dev/stdin`,
//! `echo x > /dev/stderr`), which the owner's succeeds natively, would
//! fail with EACCES. A root invoker's pipe gets group and other read and
//! write: only a process that can already follow a holder's
//! `/proc/<pid>/fd` links can reopen an anonymous pipe, and one holding
//! it can read or write it anyway. Not restored after the run: another
//! run may share the pipe. A regular file or FIFO stays as it is: the
//! supervisor serves a reopen of a regular file within the access the
//! guest was handed (the syscalls crate's `handed.rs`).

use std::fs::OpenOptions;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::stat::{fstat, major, minor, Mode, SFlag};

use crate::sys::fd::{open_at, open_in_root};
use crate::sys::mount_tree::{clone_mount_of, make_read_only};

/// The memory devices (major 1) a view's /dev may hold, by minor number:
/// what a host's memory device in stdio may be reopened as in the view.
const VIEW_DEVICES: &[(u64, &str)] = &[
    (3, "null"),
    (5, "zero"),
    (7, "full"),
    (8, "random"),
    (9, "urandom"),
];

/// The name in /dev of the memory device `rdev`, if a view may hold it.
fn view_device(rdev: u64) -> Option<&'static str> {
    match major(rdev) {
        1 => VIEW_DEVICES
            .iter()
            .find(|(m, _)| *m == minor(rdev))
            .map(|(_, name)| *name),
        _ => None,
    }
}

/// Which of a character device's numbers reopen as the same device.
fn reopens_as_itself(rdev: u64) -> bool {
    match (major(rdev), minor(rdev)) {
        // mem: null, zero, full, random, urandom, kmsg...
        (1, _) => true,
        // tty0..N and serial lines; /dev/tty and /dev/console (5:2 is ptmx).
        (4, _) | (5, 0) | (5, 1) => true,
        // Unix98 pseudo-terminal slaves.
        (136..=143, _) => true,
        _ => false,
    }
}

/// A character device's number and `fd`'s status flags; `None` for
/// anything else (or an `O_PATH` descriptor, or a closed one).
fn device(fd: RawFd) -> Option<(u64, OFlag)> {
    let st = fstat(fd).ok()?;
    let chr = is_chr(st.st_mode);
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).ok()?);
    (chr && !flags.contains(OFlag::O_PATH)).then_some((st.st_rdev, flags))
}

/// Opens `path` as `flags` say `fd` was (access mode, append,
/// non-blocking), never as a controlling terminal.
fn reopen(path: &str, flags: OFlag) -> Option<OwnedFd> {
    let access = flags & OFlag::O_ACCMODE;
    let status = flags & OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let file = OpenOptions::new()
        .read(access != OFlag::O_WRONLY)
        .write(access != OFlag::O_RDONLY)
        .append(flags.contains(OFlag::O_APPEND))
        .custom_flags(status.bits())
        .open(path)
        .ok()?;
    Some(file.into())
}

/// `fd` reopened read-only-mounted, when it is a host device of
/// [`reopens_as_itself`] and the invoker may clone its mount; `None`
/// otherwise (keep `fd`).
pub fn shielded(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    open_pipe_to_guest(fd);
    let (rdev, flags) = device(fd.as_raw_fd())?;
    if !reopens_as_itself(rdev) {
        return None;
    }
    let copy = clone_mount_of(fd).ok()?;
    make_read_only(copy.as_fd()).ok()?;
    reopen(&format!("/proc/self/fd/{}", copy.as_raw_fd()), flags)
}

/// [`shielded`] of our own stdin, stdout and stderr.
pub fn shielded_stdio() -> [Option<OwnedFd>; 3] {
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()].map(shielded)
}

/// For `launch`: [`shielded`] of our own stdin, stdout and stderr, except
/// a memory device the view's /dev holds (`nodes`, `dev_view.rs`): init
/// puts the view's node in its place ([`take_view_devices`]) before the
/// guest exists, so its copy would be made and dropped for nothing. And
/// not for free: the copy's close and the reopened file's last release
/// each end a detached mount, a `synchronize_rcu_expedited` in the
/// kernel's `namespace_unlock` (about 0.05–0.1 ms alone; with 16 sandboxes
/// starting at once they queue on the kernel's one expedited grace
/// period: `perf record -e sched:sched_switch -g`, PERFORMANCE.md
/// 2026-12-04 15:40). Returns the reopened descriptors and which of
/// stdin, stdout, stderr init must replace.
pub fn launch_stdio(nodes: &[&str]) -> ([Option<OwnedFd>; 3], [bool; 3]) {
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let fds = [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()];
    let in_view = fds.map(|fd| {
        device(fd.as_raw_fd())
            .and_then(|(rdev, _)| view_device(rdev))
            .is_some_and(|name| nodes.contains(&name))
    });
    let mut reopened = [None, None, None];
    for (i, fd) in fds.into_iter().enumerate() {
        if !in_view[i] {
            reopened[i] = shielded(fd);
        }
    }
    (reopened, in_view)
}

/// For the pool's client: [`shielded`], except a memory device a view's
/// /dev may hold, which is sent as it is: the pool's sandbox puts its
/// view's node in its place ([`view_node_for`]) before its guest gets it,
/// and the copy (and its two expedited RCU grace periods, one in the
/// client and one in the guest's last step before its exec) is saved.
pub fn shielded_unless_view_device(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    match device(fd.as_raw_fd()).and_then(|(rdev, _)| view_device(rdev)) {
        Some(_) => None,
        None => shielded(fd),
    }
}

/// For a process outside the view that holds its `root` (the pool's
/// sandbox, with a client's stdin, stdout or stderr): `fd` as the view's
/// own node of the same memory device, opened as `fd` was; `fd` itself
/// when it is no memory device a view's /dev may hold. An error when it
/// is one and the view has no such node: the guest must never get the
/// host's.
pub fn view_node_for(root: BorrowedFd<'_>, fd: OwnedFd) -> Result<OwnedFd, String> {
    open_pipe_to_guest(fd.as_fd());
    let Some((rdev, flags)) = device(fd.as_raw_fd()) else {
        return Ok(fd);
    };
    match view_device(rdev) {
        Some(name) => node_in_view(root, name, rdev, flags),
        None => Ok(fd),
    }
}

/// The view's own node (under `root`) of the memory device `rdev`, called
/// `name` in /dev, opened as `flags` say a descriptor of it was (access
/// mode, append, non-blocking; never as a controlling terminal): resolved
/// in the view, and checked to be that device.
fn node_in_view(
    root: BorrowedFd<'_>,
    name: &str,
    rdev: u64,
    flags: OFlag,
) -> Result<OwnedFd, String> {
    let flags = flags & (OFlag::O_ACCMODE | OFlag::O_NONBLOCK | OFlag::O_APPEND) | OFlag::O_NOCTTY;
    let node = open_in_root(root, &Path::new("dev").join(name), flags)
        .map_err(|e| format!("the sandbox's /dev/{name}: {}", e.desc()))?;
    match fstat(node.as_raw_fd()) {
        Ok(st) if is_chr(st.st_mode) && st.st_rdev == rdev => Ok(node),
        _ => Err(format!("the sandbox's /dev/{name}: not the host's device")),
    }
}

/// In the view: puts the view's own node (a read-only bind, `dev_view.rs`)
/// in place of each of stdin, stdout, stderr that is the same memory
/// device, so that it reads as `/dev/null` in `/proc/self/fd` rather
/// than as the root of a detached copy, or (`required`, see
/// [`launch_stdio`]) than as the host's own node. Any user, no
/// capability needed.
pub fn take_view_devices(required: [bool; 3]) -> Result<(), String> {
    let root = open_at(
        None,
        Path::new("/"),
        OFlag::O_PATH | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
    .map_err(|e| format!("taking the view's devices as stdio: /: {}", e.desc()))?;
    for (i, required) in required.into_iter().enumerate() {
        let fd = i as RawFd;
        match through_view(root.as_fd(), fd) {
            Some(view) => nix::unistd::dup2(view.as_raw_fd(), fd)
                .map(drop)
                .map_err(|e| format!("taking the view's devices as stdio: {}", e.desc()))?,
            None if required => {
                return Err(format!(
                    "taking the view's devices as stdio: descriptor {fd} has no node in the view"
                ))
            }
            None => {}
        }
    }
    Ok(())
}

/// Descriptor `fd` reopened as the view's node (under `root`) of its
/// memory device.
fn through_view(root: BorrowedFd<'_>, fd: RawFd) -> Option<OwnedFd> {
    let (rdev, flags) = device(fd)?;
    node_in_view(root, view_device(rdev)?, rdev, flags).ok()
}

/// pipefs's `f_type`: the file system of anonymous pipes.
const PIPEFS_MAGIC: i64 = 0x5049_5045;

/// Gives group and other read and write on `fd` when it is an anonymous
/// pipe and we are root (module doc): the guest's root, which is not the
/// pipe's owner, may then reopen it as the owner may natively. Anything
/// else, or a failure, leaves it as it is.
pub fn open_pipe_to_guest(fd: BorrowedFd<'_>) {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let Ok(st) = fstat(fd.as_raw_fd()) else {
        return;
    };
    let fifo = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFIFO;
    let wide = st.st_mode & 0o066 == 0o066;
    let on_pipefs =
        || nix::sys::statfs::fstatfs(fd).is_ok_and(|f| f.filesystem_type().0 == PIPEFS_MAGIC);
    if fifo && !wide && on_pipefs() {
        let mode = Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o066);
        let _ = nix::sys::stat::fchmod(fd.as_raw_fd(), mode);
    }
}

fn is_chr(mode: u32) -> bool {
    SFlag::from_bits_truncate(mode) & SFlag::S_IFMT == SFlag::S_IFCHR
}
