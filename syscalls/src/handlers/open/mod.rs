//! open, openat, openat2 (creat passes the filter: it always writes).
//!
//! Owns: the kernel's flag checks (`build_open_how` for the legacy calls,
//! which mask unknown flags; `build_open_flags` for all, which rejects bad
//! combinations — done before the path is read, as the kernel does),
//! reading `struct open_how`, the umask, and the answer: the supervisor's
//! own descriptor (always `O_CLOEXEC`) installed in the guest with the
//! guest's `O_CLOEXEC` as the install flag. Resolution, including the
//! guest's `RESOLVE_*` flags, is [`vfs::Resolver::open`]'s; the synthetic
//! /proc files that may replace the result are [`procfs`]'s.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::stat::fstat;
use vfs::resolve::flags as resolve;

use super::{live, read_path, start, Caller, Context, Res};
use crate::guest::{Guest, Reply, CAP_FOWNER};
use procfs::Named;

const O_ACCMODE: u64 = libc::O_ACCMODE as u64;
const O_CREAT: u64 = libc::O_CREAT as u64;
const O_TRUNC: u64 = libc::O_TRUNC as u64;
const O_DIRECTORY: u64 = libc::O_DIRECTORY as u64;
const O_CLOEXEC: u64 = libc::O_CLOEXEC as u64;
const O_PATH: u64 = libc::O_PATH as u64;
/// `__O_TMPFILE` (O_TMPFILE without its O_DIRECTORY).
const O_TMPFILE_BIT: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;

/// The kernel's VALID_OPEN_FLAGS for x86_64.
const VALID_OPEN_FLAGS: u64 = (libc::O_ACCMODE
    | libc::O_CREAT
    | libc::O_EXCL
    | libc::O_NOCTTY
    | libc::O_TRUNC
    | libc::O_APPEND
    | libc::O_NONBLOCK
    | libc::O_SYNC
    | libc::O_DSYNC
    | libc::O_ASYNC
    | libc::O_DIRECT
    | libc::O_LARGEFILE
    | libc::O_DIRECTORY
    | libc::O_NOFOLLOW
    | libc::O_NOATIME
    | libc::O_CLOEXEC
    | libc::O_PATH
    | libc::O_TMPFILE) as u64;

/// Flags O_PATH may come with.
const O_PATH_FLAGS: u64 =
    (libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_PATH | libc::O_CLOEXEC) as u64;

/// Sizes of `struct open_how`: the first version, and the largest a
/// caller may pass (the rest must be zero).
const OPEN_HOW_SIZE_VER0: u64 = 24;
const PAGE_SIZE: u64 = 4096;

/// The flags a served read may carry and still skip the open of the file
/// it found (a synthetic text of the sandbox's own figures): an open of a
/// readable procfs file with these alone cannot fail.
const UNOPENED_FLAGS: i32 =
    libc::O_NONBLOCK | libc::O_LARGEFILE | libc::O_NOCTTY | libc::O_NOFOLLOW;

fn will_create(flags: u64) -> bool {
    flags & (O_CREAT | O_TMPFILE_BIT) != 0
}

/// The kernel's `build_open_how`: what open/openat/creat make of their
/// `int flags, umode_t mode`.
fn legacy_how(flags: u32, mode: u32) -> (u64, u64) {
    let mut f = flags as u64 & VALID_OPEN_FLAGS;
    if f & O_PATH != 0 {
        f &= O_PATH_FLAGS;
    }
    let m = if will_create(f) {
        (mode & 0o7777) as u64
    } else {
        0
    };
    (f, m)
}

/// The checks of the kernel's `build_open_flags`.
fn check_how(flags: u64, mode: u64, res: u64) -> Result<(), Errno> {
    let f = flags & !O_CLOEXEC;
    if f & !VALID_OPEN_FLAGS != 0 || res & !resolve::VALID != 0 {
        return Err(Errno::EINVAL);
    }
    if res & resolve::BENEATH != 0 && res & resolve::IN_ROOT != 0 {
        return Err(Errno::EINVAL);
    }
    if will_create(f) {
        if mode & !0o7777 != 0 {
            return Err(Errno::EINVAL);
        }
    } else if mode != 0 {
        return Err(Errno::EINVAL);
    }
    if f & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
        return Err(Errno::EINVAL);
    }
    if f & O_TMPFILE_BIT != 0 && (f & O_DIRECTORY == 0 || f & O_ACCMODE == 0) {
        return Err(Errno::EINVAL);
    }
    if f & O_PATH != 0 && f & !O_PATH_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    // RESOLVE_CACHED never tries a create, truncate or tmpfile.
    if res & resolve::CACHED != 0 && f & (O_TRUNC | O_CREAT | O_TMPFILE_BIT) != 0 {
        return Err(Errno::EAGAIN);
    }
    Ok(())
}

/// open and openat (open with `AT_FDCWD`).
pub fn openat(ctx: &Context, g: &dyn Guest, dirfd: i32, path: u64, flags: u32, mode: u32) -> Res {
    let (flags, mode) = legacy_how(flags, mode);
    check_how(flags, mode, 0)?;
    // The filter traps O_RDWR for the guest's Landlock domain alone:
    // while the root's entries are those granted, every file but a name
    // made in the root itself lies beneath a grant, and the kernel opens
    // it (a create is resolved first, `decide`).
    if read_write(flags) && flags & O_CREAT == 0 && continues_at_once(ctx) {
        return Ok(Reply::Continue);
    }
    open_common(ctx, g, dirfd, path, flags, mode, 0)
}

/// openat2(dirfd, path, how, size).
pub fn openat2(ctx: &Context, g: &dyn Guest, dirfd: i32, path: u64, how: u64, size: u64) -> Res {
    if size < OPEN_HOW_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    if size > PAGE_SIZE {
        return Err(Errno::E2BIG);
    }
    let mut buf = [0u8; PAGE_SIZE as usize];
    let buf = &mut buf[..size as usize];
    g.read_mem(how, buf)?;
    if buf[OPEN_HOW_SIZE_VER0 as usize..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let field = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&buf[i * 8..i * 8 + 8]);
        u64::from_ne_bytes(x)
    };
    let (flags, mode, res) = (field(0), field(1), field(2));
    check_how(flags, mode, res)?;
    // RESOLVE_CACHED only asks to fail rather than wait for I/O; the
    // supervisor's own lookup may wait, which the flag permits too.
    open_common(ctx, g, dirfd, path, flags, mode, res & !resolve::CACHED)
}

fn open_common(
    ctx: &Context,
    g: &dyn Guest,
    dirfd: i32,
    addr: u64,
    flags: u64,
    mode: u64,
    res: u64,
) -> Res {
    let path = read_path(g, addr)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let bytes = path.to_bytes();
    if bytes == b"/dev/tty" {
        // /dev/tty means the caller's own controlling terminal (the
        // sandbox's pty, or none: ENXIO), which only the kernel, opening
        // it as the caller, can give. Opened here it would be the
        // supervisor's terminal. The view's /dev/tty is that device node
        // and nothing else, so the kernel may open it.
        return Ok(Reply::Continue);
    }
    // Only an absolute path's plain read can have been remembered.
    let rememberable = vfs::path::is_abs(bytes) && plain_read(flags, res);
    let known = match ctx.continue_plain_opens && rememberable {
        true => ctx.fs.known(bytes),
        false => vfs::Known::Unknown,
    };
    // A name made, removed or replaced at the root since the paths were
    // remembered may be beneath no grant of the guest's Landlock domain
    // (a file the guest unlinked and made again, both unseen): forget
    // them all (`procfs/fence.rs`).
    let known = match (known, &ctx.fence) {
        (vfs::Known::Plain, Some(fence)) if fence.root_changed(&ctx.fs) => {
            ctx.fs.changed();
            vfs::Known::Unknown
        }
        (known, _) => known,
    };
    if known == vfs::Known::Plain {
        // Resolved before to an object that is no served file, and no
        // name has been replaced since (vfs's plain.rs): what resolving
        // it again would answer.
        return Ok(Reply::Continue);
    }
    // RESOLVE_IN_ROOT scopes even an absolute path to the dirfd.
    let dir = if res & resolve::IN_ROOT != 0 && vfs::path::is_abs(bytes) {
        Some(super::dir_itself(g, dirfd)?)
    } else {
        start(g, dirfd, bytes)?
    };
    let mode = if will_create(flags) {
        mode & !(g.umask()? as u64)
    } else {
        0
    };
    if will_create(flags) || flags & O_TRUNC != 0 {
        live(g)?;
    }
    let at = vfs::At {
        dir: dir.as_ref().map(AsFd::as_fd),
        caller: &Caller(g),
    };
    let resolved = if ctx.continue_plain_opens {
        match decide(ctx, &at, &path, flags, res, known)? {
            // The VFS has resolved it and the object is what the kernel
            // would open (or create) for the guest: the kernel does it
            // (CONTINUE). A guest that changes the path in between gets
            // another object of its own view, with its own credentials:
            // nothing it could not ask for.
            Decision::Kernel => return Ok(Reply::Continue),
            Decision::Serve(resolved) => resolved,
        }
    } else {
        None
    };
    let cloexec = flags & O_CLOEXEC != 0;
    let flags = (flags & !O_CLOEXEC) as i32;
    let fd = match resolved {
        // The read's object, found by the decision: opened again through
        // its descriptor, not resolved twice. A regular file never makes
        // an open wait.
        Some(found) if is_regular(&found.probe.st) => {
            // A text of the sandbox's own figures needs no open of the
            // file found when the open could not fail on it: readable by
            // all, and no flag but those procfs takes from anyone
            // (`O_NOATIME` is the owner's alone, `O_DIRECT` EINVAL there).
            let unopened = found
                .synthetic
                .filter(|_| readable_by_all(&found.probe.st) && flags & !UNOPENED_FLAGS == 0)
                .and_then(|kind| procfs::synthetic_unopened(&ctx.proc(), kind, flags));
            if let Some(served) = unopened {
                return served.map(|fd| Reply::InstallFd { fd, cloexec });
            }
            let fd = reopen_served(g, found.probe.fd.as_fd(), flags)?;
            return match found.synthetic {
                Some(kind) => procfs::synthetic_file(&ctx.proc(), fd, kind, flags),
                None => Ok(fd),
            }
            .map(|fd| Reply::InstallFd { fd, cloexec });
        }
        _ => open_without_blocking(g, |f| ctx.fs.open(&at, &path, f, mode as u32, res), flags)?,
    };
    // Under a memory or cpu limit, /proc/meminfo and /proc/cpuinfo are
    // the guest's own (recognised by what was opened, not by the path).
    let fd = if ctx.synthetic.is_empty() {
        fd
    } else {
        procfs::substitute(&ctx.proc(), fd, flags)?
    };
    Ok(Reply::InstallFd { fd, cloexec })
}

/// Whether the kernel may do an open itself, or the supervisor serves it.
enum Decision {
    /// The kernel opens (or creates) it for the guest: CONTINUE.
    Kernel,
    /// The supervisor opens it; for a plain read, with the object found.
    Serve(Option<ServedRead>),
}

/// The object a plain read resolved to, which the sandbox serves: a
/// synthetic file's (its kind), or one the guest's domain fences off.
struct ServedRead {
    probe: vfs::Probe,
    synthetic: Option<procfs::ProcFile>,
}

/// Resolves `path` as the open would, without opening anything for I/O
/// or creating anything: whether the kernel may do the open itself, which
/// is always, unless it is a read of a file the sandbox serves itself (a
/// synthetic /proc file) or of one the guest's Landlock domain keeps the
/// kernel from opening (`procfs/fence.rs`: the kernel's own procfs, names made
/// at the root since the start). Resolution errors are the open's, except
/// a missing final name when the open creates it.
fn decide(
    ctx: &Context,
    at: &vfs::At<'_>,
    path: &std::ffi::CStr,
    flags: u64,
    res: u64,
    known: vfs::Known,
) -> Result<Decision, Errno> {
    if plain_read(flags, res) {
        let probe = ctx.fs.probe(at, path, flags as i32, known)?;
        let named = Named::new(&probe.fd);
        ready_if_network(ctx, &named, &probe.st);
        let synthetic = ctx.synthetic.which_stat(&named, &probe.st);
        if synthetic.is_none() && !fenced(ctx, &named, &probe.st) {
            ctx.fs.remember_plain(path, &probe);
            return Ok(Decision::Kernel);
        }
        return Ok(Decision::Serve(Some(ServedRead { probe, synthetic })));
    }
    let probe = (flags as i32 & (libc::O_NOFOLLOW | libc::O_DIRECTORY)) | libc::O_PATH;
    let object = match ctx.fs.open(at, path, probe, 0, res) {
        Ok(object) => object,
        Err(Errno::ENOENT) if will_create(flags) => {
            return match (&ctx.fence, read_write(flags)) {
                (Some(fence), true) => Ok(create_read_write(ctx, fence, at, path, res)),
                _ => Ok(Decision::Kernel),
            };
        }
        Err(e) => return Err(e),
    };
    if read_write(flags) {
        return open_read_write(ctx, &object);
    }
    // Only reads are served (see procfs::substitute): an open that
    // writes is the guest's own, with its own credentials, or nothing.
    let reads = flags & (O_ACCMODE | O_PATH) == libc::O_RDONLY as u64;
    if !reads {
        return Ok(Decision::Kernel);
    }
    let st = vfs::sys::fstat(object.as_fd())?;
    let named = Named::new(&object);
    ready_if_network(ctx, &named, &st);
    if ctx.synthetic.which_stat(&named, &st).is_some() || fenced(ctx, &named, &st) {
        Ok(Decision::Serve(None))
    } else {
        Ok(Decision::Kernel)
    }
}

/// Whether an `O_RDWR` open that creates nothing may be CONTINUEd
/// without a lookup: the root's entries are those granted. (Apart, so
/// that the handler's common paths keep their code.)
#[inline(never)]
fn continues_at_once(ctx: &Context) -> bool {
    ctx.continue_plain_opens && root_as_granted(ctx)
}

/// Who opens an existing `object` for reading and writing: the kernel,
/// unless the guest's domain, which checks it as a read, would refuse it
/// (`procfs/fence.rs`); then the supervisor, as the caller.
#[inline(never)]
fn open_read_write(ctx: &Context, object: &OwnedFd) -> Result<Decision, Errno> {
    Ok(match &ctx.fence {
        Some(fence) if !fence.root_as_granted(&ctx.fs) => {
            let st = vfs::sys::fstat(object.as_fd())?;
            match fence.leaves_read_write(&ctx.fs, object, &st) {
                true => Decision::Kernel,
                false => Decision::Serve(None),
            }
        }
        _ => Decision::Kernel,
    })
}

/// Who makes a file that an `O_RDWR | O_CREAT` open names and that does
/// not exist yet: the kernel where the new file lies beneath a grant of
/// the guest's domain (or on procfs: the kernel's answer), the supervisor,
/// as the caller, where it would not (in the root itself, or in a
/// directory made there since the start). A path whose directory cannot
/// be resolved is served too, for the open's own error.
#[inline(never)]
fn create_read_write(
    ctx: &Context,
    fence: &procfs::Fence,
    at: &vfs::At<'_>,
    path: &std::ffi::CStr,
    res: u64,
) -> Decision {
    let Some(parent) = parent_of(path.to_bytes()) else {
        // A trailing slash: the kernel's EISDIR.
        return Decision::Kernel;
    };
    let Ok(parent) = std::ffi::CString::new(parent) else {
        return Decision::Serve(None);
    };
    let dir_flags = libc::O_PATH | libc::O_DIRECTORY;
    let granted = ctx
        .fs
        .open(at, &parent, dir_flags, 0, res)
        .and_then(|dir| Ok(fence.grants_beneath(&ctx.fs, &dir, &vfs::sys::fstat(dir.as_fd())?)));
    match granted {
        Ok(true) => Decision::Kernel,
        Ok(false) | Err(_) => Decision::Serve(None),
    }
}

/// The directory part of an open's path: `/` for a name in the root,
/// `.` for a bare name; `None` when the path ends in a slash.
fn parent_of(path: &[u8]) -> Option<&[u8]> {
    if path.last() == Some(&b'/') {
        return None;
    }
    Some(match path.iter().rposition(|&b| b == b'/') {
        Some(0) => b"/",
        Some(i) => &path[..i],
        None => b".",
    })
}

/// Whether the guest has no fence, or its root's entries are still
/// those the fence granted.
fn root_as_granted(ctx: &Context) -> bool {
    ctx.fence
        .as_ref()
        .is_none_or(|f| f.root_as_granted(&ctx.fs))
}

/// Before a read under a process's `/proc/<pid>/net`, where the kernel
/// shows the guest's network namespace: the namespace readied (its
/// loopback up, `UnixSockets::ready_namespace`). A failure leaves the
/// loopback down, not the open refused.
fn ready_if_network(ctx: &Context, named: &Named<'_>, st: &libc::stat) {
    if ctx.synthetic.in_net_dir(named, st) {
        let _ = super::net::stack(ctx).ready_namespace();
    }
}

/// Whether the guest's Landlock domain keeps the kernel from opening
/// `object` (whose `stat` is `st`) for reading (`procfs/fence.rs`). Such a
/// path, like a synthetic file's, is never remembered as plain.
fn fenced(ctx: &Context, object: &Named<'_>, st: &libc::stat) -> bool {
    ctx.fence
        .as_ref()
        .is_some_and(|f| !f.admits(&ctx.fs, object, st))
}

/// `object`, a file whose read the sandbox serves (a synthetic /proc
/// file, or one the guest's domain fences off), opened again for the read
/// with the guest's `flags`. `O_NOATIME` takes the file's owner or
/// CAP_FOWNER: a /proc file is the host root's, so a guest root under a
/// range of ids (not its owner) is answered as a container's root holding
/// CAP_FOWNER is, when it holds that in its own namespace (the worker
/// raises it for this reopen alone, of an object already resolved for a
/// read; the flag changes nothing on procfs).
fn reopen_served(g: &dyn Guest, object: BorrowedFd<'_>, flags: i32) -> Result<OwnedFd, Errno> {
    match vfs::sys::reopen(object, flags) {
        Err(Errno::EPERM) if flags & libc::O_NOATIME != 0 => {
            let mut opened = None;
            g.with_caller_caps(CAP_FOWNER, &mut || {
                opened = Some(vfs::sys::reopen(object, flags)?);
                Ok(())
            })?;
            opened.ok_or(Errno::EPERM)
        }
        r => r,
    }
}

/// Whether every user may read the file (mode `r--r--r--` at least).
fn readable_by_all(st: &libc::stat) -> bool {
    st.st_mode & 0o444 == 0o444
}

fn is_regular(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Whether an open asks for reading and writing a file: `O_RDWR`, no
/// `O_PATH` (the filter's `OPEN_READ_WRITE`, which leaves out
/// `O_DIRECTORY` too: such an open opens no file).
fn read_write(flags: u64) -> bool {
    flags & (O_ACCMODE | O_PATH | O_DIRECTORY) == libc::O_RDWR as u64
}

/// Whether an open is a plain read the known plain paths may answer:
/// read-only, creating and truncating nothing, no `O_DIRECTORY` (which
/// the filter passes for open and openat), no `RESOLVE_*` scope.
fn plain_read(flags: u64, res: u64) -> bool {
    const NOT_PLAIN: u64 = O_ACCMODE | O_PATH | O_CREAT | O_TMPFILE_BIT | O_TRUNC | O_DIRECTORY;
    flags & NOT_PLAIN == 0 && res == 0
}

/// Opens with O_NONBLOCK first, so that the common case never ties up the
/// worker: only a FIFO can make an open wait (for its other end). When
/// the target turns out to be one and the guest asked for a blocking
/// open, the worker hands receiving over ([`Guest::may_block`]) and opens
/// again, blocking as the guest would. Otherwise O_NONBLOCK is taken back
/// off the open file unless the guest asked for it.
fn open_without_blocking(
    g: &dyn Guest,
    open: impl Fn(i32) -> Result<OwnedFd, Errno>,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    if flags & (libc::O_NONBLOCK | libc::O_PATH) != 0 {
        return open(flags);
    }
    match open(flags | libc::O_NONBLOCK) {
        Ok(fd) if !is_fifo(&fd) => {
            let status = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?;
            let blocking = OFlag::from_bits_retain(status & !libc::O_NONBLOCK);
            fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(blocking))?;
            Ok(fd)
        }
        // A FIFO, or a write-only FIFO with no reader yet (ENXIO).
        Ok(_) | Err(Errno::ENXIO) => {
            g.may_block();
            open(flags)
        }
        Err(e) => Err(e),
    }
}

fn is_fifo(fd: &OwnedFd) -> bool {
    fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_of_paths() {
        assert_eq!(parent_of(b"/n3"), Some(&b"/"[..]));
        assert_eq!(parent_of(b"/d/f"), Some(&b"/d"[..]));
        assert_eq!(parent_of(b"f"), Some(&b"."[..]));
        assert_eq!(parent_of(b"a/b/c"), Some(&b"a/b"[..]));
        assert_eq!(parent_of(b"/d/"), None);
        assert!(read_write(libc::O_RDWR as u64 | O_CREAT));
        assert!(!read_write(libc::O_RDWR as u64 | O_DIRECTORY));
        assert!(!read_write(libc::O_RDWR as u64 | O_PATH));
        assert!(!read_write(libc::O_WRONLY as u64));
    }

    #[test]
    fn flag_checks() {
        let rd = libc::O_RDONLY as u64;
        assert_eq!(check_how(rd, 0, 0), Ok(()));
        assert_eq!(check_how(rd, 0o644, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(O_CREAT, 0o10000, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(O_CREAT | O_DIRECTORY, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(libc::O_TMPFILE as u64, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(libc::O_TMPFILE as u64 | 2, 0o600, 0), Ok(()));
        assert_eq!(check_how(O_PATH | O_TRUNC, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(1 << 40, 0, 0), Err(Errno::EINVAL));
        assert_eq!(check_how(rd, 0, 0x40), Err(Errno::EINVAL));
        assert_eq!(
            check_how(rd, 0, resolve::BENEATH | resolve::IN_ROOT),
            Err(Errno::EINVAL)
        );
        // Legacy calls mask instead of failing.
        assert_eq!(
            legacy_how(
                0x8000_0000 | libc::O_PATH as u32 | libc::O_TRUNC as u32,
                0o644
            ),
            (O_PATH, 0)
        );
    }
}
