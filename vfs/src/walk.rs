//! The slow path of resolution: a component-by-component walk that the
//! supervisor does itself, for paths that cross a procfs magic link
//! (`/proc/N/fd/M`, `/proc/N/cwd`, `/proc/N/root`, `/proc/N/exe`, ...),
//! which scoped `openat2` refuses, and for a resolution the kernel refused
//! the caller's ids (EACCES), to search directories by a capability.
//!
//! Owns: the walk. Every step names one component to the kernel with the
//! current directory as dirfd and without following (`fstatat` with
//! `AT_SYMLINK_NOFOLLOW`, `openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`); symlinks are read and expanded here, absolute
//! ones from the view's root; `..` never climbs above the view's root.
//! Magic links are followed by the kernel itself (a plain `openat` of the
//! one component, in procfs only): they lead to files the guest's own
//! processes hold open, which is what the guest would reach natively. In
//! procfs' root, `self` and `thread-self` are expanded to the caller's ids
//! in the view's pid namespace (for the supervisor they name nothing).
//!
//! A step the kernel refuses for want of search permission on the current
//! directory (EACCES) is made again as the caller's capabilities allow
//! ([`searched`], [`Caller::search_anyway`]): each step names one
//! component, so the permission it needs is the search of that one
//! directory, which the caller then vouches for. Magic links are not: the
//! kernel's checks there are of the process the link belongs to; nor is
//! a final open for more than `O_PATH` (`resolve.rs`), whose refusal may
//! be the object's own permissions.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;

use crate::resolve::{flags::*, Caller, Resolver};
use crate::sys;

/// Symlinks followed before ELOOP (the kernel's MAXSYMLINKS).
const MAX_LINKS: u32 = 40;
/// The inode number of procfs' root.
const PROC_ROOT_INO: u64 = 1;

/// How a walked path ends.
#[derive(Debug)]
pub enum Last {
    /// The path names the directory `dir` itself (`/`, `.`, `..`, a
    /// followed link to a directory...).
    Dot,
    /// A final component in `dir`, with its trailing slash if it had one.
    /// Not a symlink when the walk followed the last component (or the
    /// name did not exist when looked at).
    Name(CString),
    /// A final magic link in procfs directory `dir`, to be followed by the
    /// kernel (plain `openat`).
    Magic(CString),
}

/// The result of a walk: the last directory reached and what follows it.
#[derive(Debug)]
pub struct Walked {
    pub dir: OwnedFd,
    pub last: Last,
}

enum Link {
    /// Expand this target in place of the link.
    Target(Vec<u8>),
    /// A magic link: let the kernel follow it.
    Magic,
}

/// Walk `path` from `start` (absolute paths from the view's root).
/// `follow`: follow a final symlink. `resolve`: the guest's RESOLVE_*
/// restrictions (NO_SYMLINKS, NO_MAGICLINKS, NO_XDEV are honoured).
pub fn walk(
    r: &Resolver,
    caller: &dyn Caller,
    start: BorrowedFd<'_>,
    path: &[u8],
    follow: bool,
    resolve: u64,
) -> Result<Walked, Errno> {
    let mut cur = start.try_clone_to_owned().map_err(io_errno)?;
    let mut rest: Vec<u8> = path.to_vec();
    let mut pos = 0usize;
    let mut links = 0u32;
    loop {
        if rest.get(pos) == Some(&b'/') {
            cur = r.root().try_clone_to_owned().map_err(io_errno)?;
            while rest.get(pos) == Some(&b'/') {
                pos += 1;
            }
        }
        if pos >= rest.len() {
            return Ok(Walked {
                dir: cur,
                last: Last::Dot,
            });
        }
        let end = rest[pos..]
            .iter()
            .position(|&c| c == b'/')
            .map_or(rest.len(), |n| pos + n);
        let mut next = end;
        while rest.get(next) == Some(&b'/') {
            next += 1;
        }
        let is_last = next >= rest.len();
        let slash = is_last && end < rest.len();
        let comp = rest[pos..end].to_vec();
        pos = next;
        match &comp[..] {
            b"." => {
                if is_last {
                    return Ok(Walked {
                        dir: cur,
                        last: Last::Dot,
                    });
                }
                continue;
            }
            b".." => {
                cur = dotdot(r, caller, cur, resolve)?;
                if is_last {
                    return Ok(Walked {
                        dir: cur,
                        last: Last::Dot,
                    });
                }
                continue;
            }
            _ => {}
        }
        let name = CString::new(comp.clone()).map_err(|_| Errno::EINVAL)?;
        let final_name = || name_with_slash(&comp, slash);
        if is_last && !follow && !slash {
            return Ok(Walked {
                dir: cur,
                last: Last::Name(final_name()?),
            });
        }
        let st = match searched(caller, cur.as_fd(), || {
            sys::fstatat(cur.as_fd(), &name, libc::AT_SYMLINK_NOFOLLOW)
        }) {
            Err(Errno::ENOENT) if is_last => {
                return Ok(Walked {
                    dir: cur,
                    last: Last::Name(final_name()?),
                })
            }
            r => r?,
        };
        let kind = st.st_mode & libc::S_IFMT;
        if kind == libc::S_IFLNK {
            if resolve & NO_SYMLINKS != 0 {
                return Err(Errno::ELOOP);
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::ELOOP);
            }
            match read_link(caller, cur.as_fd(), &name)? {
                Link::Target(mut target) => {
                    if target.is_empty() {
                        return Err(Errno::ENOENT);
                    }
                    if pos < rest.len() || slash {
                        target.push(b'/');
                    }
                    target.extend_from_slice(&rest[pos..]);
                    rest = target;
                    pos = 0;
                }
                Link::Magic => {
                    if resolve & NO_MAGICLINKS != 0 {
                        return Err(Errno::ELOOP);
                    }
                    if is_last {
                        return Ok(Walked {
                            dir: cur,
                            last: Last::Magic(final_name()?),
                        });
                    }
                    cur = sys::openat(cur.as_fd(), &name, libc::O_PATH | libc::O_CLOEXEC, 0)?;
                }
            }
            continue;
        }
        if is_last {
            if slash && kind != libc::S_IFDIR {
                return Err(Errno::ENOTDIR);
            }
            return Ok(Walked {
                dir: cur,
                last: Last::Name(final_name()?),
            });
        }
        if kind != libc::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
        let scope = BENEATH | NO_SYMLINKS | (resolve & NO_XDEV);
        cur = searched(caller, cur.as_fd(), || {
            sys::openat2(cur.as_fd(), &name, flags, 0, scope)
        })?;
    }
}

fn name_with_slash(comp: &[u8], slash: bool) -> Result<CString, Errno> {
    let mut v = comp.to_vec();
    if slash {
        v.push(b'/');
    }
    CString::new(v).map_err(|_| Errno::EINVAL)
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

/// `..` from `cur`, never above the view's root.
fn dotdot(r: &Resolver, caller: &dyn Caller, cur: OwnedFd, resolve: u64) -> Result<OwnedFd, Errno> {
    if r.is_root(&sys::fstat(cur.as_fd())?) {
        return Ok(cur);
    }
    let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    searched(caller, cur.as_fd(), || {
        sys::openat2(cur.as_fd(), c"..", flags, 0, resolve & NO_XDEV)
    })
}

/// `step`, one lookup in directory `dir`; where the kernel refuses it the
/// search (EACCES), again as [`Caller::search_anyway`] allows, else that
/// refusal.
pub fn searched<T>(
    caller: &dyn Caller,
    dir: BorrowedFd<'_>,
    mut step: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match step() {
        Err(Errno::EACCES) => {}
        r => return r,
    }
    let mut found = None;
    let again = caller.search_anyway(dir, &mut || {
        found = Some(step()?);
        Ok(())
    });
    match again {
        Some(Ok(())) => found.ok_or(Errno::EACCES),
        Some(Err(e)) => Err(e),
        None => Err(Errno::EACCES),
    }
}

/// Read the symlink `dir/name`: its target, or Magic for a procfs magic
/// link (whose printed target is a path for the supervisor or a
/// `type:[inode]` name, never a relative path).
fn read_link(caller: &dyn Caller, dir: BorrowedFd<'_>, name: &CStr) -> Result<Link, Errno> {
    let in_proc = sys::fstatfs(dir)?.f_type == libc::PROC_SUPER_MAGIC;
    if in_proc && sys::fstat(dir)?.st_ino == PROC_ROOT_INO {
        match name.to_bytes() {
            b"self" => {
                let (tgid, _) = caller.proc_ids()?;
                return Ok(Link::Target(tgid.to_string().into_bytes()));
            }
            b"thread-self" => {
                let (tgid, tid) = caller.proc_ids()?;
                return Ok(Link::Target(format!("{tgid}/task/{tid}").into_bytes()));
            }
            _ => {}
        }
    }
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    let n = searched(caller, dir, || sys::readlinkat(dir, name, &mut buf))?;
    if n >= buf.len() {
        return Err(Errno::ENAMETOOLONG);
    }
    buf.truncate(n);
    if in_proc && (buf.first() == Some(&b'/') || buf.contains(&b':')) {
        return Ok(Link::Magic);
    }
    Ok(Link::Target(buf))
}
