//! open, openat, openat2 (creat passes the filter: it always writes).
//!
//! Owns the handlers: the flag checks first (`how.rs`, before the path is
//! read, as the kernel does), reading `struct open_how`, the umask, who
//! opens (`decide.rs`: the kernel, or the supervisor for what it serves),
//! and the answer: the supervisor's own descriptor (always `O_CLOEXEC`,
//! opened by `serve.rs`) installed in the guest with the guest's
//! `O_CLOEXEC` as the install flag; a clean path under /proc goes
//! procfs's direct route first (`direct.rs`); a file of the guest's stdio
//! reached outside the view is reopened within its handed access
//! (`handed.rs`). Resolution, including the guest's
//! `RESOLVE_*` flags, is [`vfs::Resolver::open`]'s; the synthetic /proc
//! files that may replace the result are [`procfs`]'s.

mod decide;
mod direct;
mod handed;
mod how;
mod serve;

use std::os::fd::AsFd;

use nix::errno::Errno;
use vfs::resolve::flags as resolve;

use super::{live, read_path, start, Caller, Context, Res};
use crate::guest::{Guest, Reply};
use decide::{continues_at_once, decide, Decision};
use how::{
    check_how, legacy_how, plain_read, read_write, will_create, OPEN_HOW_SIZE_VER0, O_CLOEXEC,
    O_CREAT, O_TRUNC, PAGE_SIZE,
};
use serve::{is_regular, open_without_blocking, readable_by_all, reopen_served};

/// The flags a served read may carry and still skip the open of the file
/// it found (a synthetic text of the sandbox's own figures): an open of a
/// readable procfs file with these alone cannot fail. The same flags let
/// a read take procfs's direct route (`direct.rs`).
pub(super) const UNOPENED_FLAGS: i32 =
    libc::O_NONBLOCK | vfs::sys::O_LARGEFILE | libc::O_NOCTTY | libc::O_NOFOLLOW;

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
    // A clean path under /proc: procfs's direct route, when it takes it
    // (only a fenced guest's: the general route CONTINUEs a process's
    // files otherwise).
    if ctx.fence.is_some() && rememberable && ctx.continue_plain_opens {
        if let Some(answer) = direct::open(ctx, g, &path, flags) {
            return answer;
        }
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
        caller: &Caller::new(ctx, g),
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
            Decision::Handed(file) => {
                let fd = handed::open(g, file, (flags & !O_CLOEXEC) as i32)?;
                let cloexec = flags & O_CLOEXEC != 0;
                return Ok(Reply::InstallFd { fd, cloexec });
            }
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
