//! Thin, exact wrappers over the host calls the VFS and the handlers make.
//!
//! Owns: every `unsafe` block of this crate and of the file handlers in
//! `syscalls` (which call these instead of libc). Each wrapper takes
//! borrowed descriptors and `&CStr` names, passes the flags it is given
//! unchanged, and returns `Errno` on failure. Does not own: any policy —
//! which flags to pass, what a path means — that is the caller's job.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

/// The kernel's `O_LARGEFILE` on x86_64, which the kernel sets on every
/// open a 64-bit caller makes and musl passes itself; libc's constant for
/// it there is 0 (a 64-bit glibc never asks). A mask of the flags an open
/// may carry names this one.
pub const O_LARGEFILE: i32 = 0o100000;

/// `AT_FDCWD` for the few calls that name an absolute supervisor path.
const CWD: RawFd = libc::AT_FDCWD;

fn check(r: libc::c_int) -> Result<libc::c_int, Errno> {
    Errno::result(r)
}

fn check_long(r: libc::c_long) -> Result<libc::c_long, Errno> {
    Errno::result(r)
}

fn owned(fd: libc::c_long) -> Result<OwnedFd, Errno> {
    let fd = check_long(fd)?;
    // SAFETY: the kernel just returned this descriptor to us; nobody else
    // owns it, and it fits an int because descriptors do.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `struct open_how` (linux/openat2.h), version 0: 24 bytes.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, {flags, mode, resolve})`.
pub fn openat2(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: u64,
    mode: u64,
    resolve: u64,
) -> Result<OwnedFd, Errno> {
    let how = OpenHow {
        flags,
        mode,
        resolve,
    };
    // SAFETY: `path` is NUL-terminated, `how` is a valid open_how that
    // outlives the call, and its size is passed exactly.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(r)
}

/// Plain `openat(dir, path, flags, mode)`: follows every symlink the
/// kernel meets. Only for names the caller has checked (magic links in
/// procfs, `..`).
pub fn openat(dir: BorrowedFd<'_>, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: `path` is NUL-terminated and lives across the call.
    let r = unsafe { libc::openat(dir.as_raw_fd(), path.as_ptr(), flags, mode) };
    owned(r as libc::c_long)
}

/// Opens the object behind `fd` (an `O_PATH` descriptor, say) afresh with
/// `flags`, through `/proc/self/fd/N`: the same inode, with the open's
/// own permission checks, and nothing resolved again. `O_NOFOLLOW` is
/// dropped (it would refuse the magic link itself); ours is close-on-exec.
pub fn reopen(fd: BorrowedFd<'_>, flags: i32) -> Result<OwnedFd, Errno> {
    let p = ProcFd::new(fd);
    let flags = (flags & !libc::O_NOFOLLOW) | libc::O_CLOEXEC;
    // SAFETY: the path is NUL-terminated and lives across the call.
    let r = unsafe { libc::open(p.as_cstr().as_ptr(), flags) };
    owned(r as libc::c_long)
}

/// `fstat(fd)` (works on `O_PATH` descriptors, symlinks included).
/// Inlined: copied out of a call of its own, the status costs a `memcpy`
/// (the counted bench `resolver::parent first`).
#[inline]
pub fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `st` is writable memory of the right size for the kernel.
    check(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// The id of the mount `fd`'s file was opened through (`statx`'s
/// `stx_mnt_id`): two descriptors of one inode through different mounts
/// (a host file and the view's bind of its directory) differ here.
pub fn mount_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    let mut stx = MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: the empty name is NUL-terminated and static; `stx` is
    // writable memory of the right size for the kernel.
    check(unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            stx.as_mut_ptr(),
        )
    })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    let stx = unsafe { stx.assume_init() };
    match stx.stx_mask & libc::STATX_MNT_ID {
        0 => Err(Errno::ENOSYS),
        _ => Ok(stx.stx_mnt_id),
    }
}

/// `fstatat(dir, name, flags)`.
pub fn fstatat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `name` is NUL-terminated; `st` is writable and large enough.
    check(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// `fstatfs(fd)` (works on `O_PATH` descriptors).
pub fn fstatfs(fd: BorrowedFd<'_>) -> Result<libc::statfs, Errno> {
    let mut st = MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `st` is writable memory of the right size.
    check(unsafe { libc::fstatfs(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and, on success, filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

/// The file status flags of the open file behind `fd` (`F_GETFL`).
pub fn status_flags(fd: BorrowedFd<'_>) -> Result<i32, Errno> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })
}

/// `fchmod(fd, mode)`.
pub fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    // SAFETY: plain integer arguments.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
}

/// `readlinkat(dir, name)` into `buf`; returns the length written (the
/// kernel truncates silently to `buf.len()`).
pub fn readlinkat(dir: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `name` is NUL-terminated; `buf` is writable for its length.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    Errno::result(n).map(|n| n as usize)
}

/// `unlinkat(dir, name, flags)`.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// A host call on two (directory, name) pairs and a flags word, such as
/// `renameat2` and `linkat`: called with the descriptors and names given.
type TwoNamesCall<F> = unsafe extern "C" fn(
    libc::c_int,
    *const libc::c_char,
    libc::c_int,
    *const libc::c_char,
    F,
) -> libc::c_int;

/// `call(olddir, old, newdir, new, flags)` for a call of two
/// (directory, name) pairs ([`TwoNamesCall`]).
fn two_names<F>(
    call: TwoNamesCall<F>,
    olddir: RawFd,
    old: &CStr,
    newdir: RawFd,
    new: &CStr,
    flags: F,
) -> Result<(), Errno> {
    // SAFETY: `call` is a libc wrapper of a call that reads the two names
    // (both NUL-terminated) and nothing else of our memory.
    let r = unsafe { call(olddir, old.as_ptr(), newdir, new.as_ptr(), flags) };
    check(r).map(drop)
}

/// `renameat2(olddir, old, newdir, new, flags)`.
pub fn renameat2(
    olddir: BorrowedFd<'_>,
    old: &CStr,
    newdir: BorrowedFd<'_>,
    new: &CStr,
    flags: u32,
) -> Result<(), Errno> {
    two_names(
        libc::renameat2,
        olddir.as_raw_fd(),
        old,
        newdir.as_raw_fd(),
        new,
        flags,
    )
}

/// `linkat(olddir, old, newdir, new, flags)`.
pub fn linkat(
    olddir: BorrowedFd<'_>,
    old: &CStr,
    newdir: BorrowedFd<'_>,
    new: &CStr,
    flags: i32,
) -> Result<(), Errno> {
    two_names(
        libc::linkat,
        olddir.as_raw_fd(),
        old,
        newdir.as_raw_fd(),
        new,
        flags,
    )
}

/// Hard-link the file behind the `O_PATH` descriptor `fd` as `newdir/new`
/// (`linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW)`, which needs no
/// capability on any kernel).
pub fn link_fd(fd: BorrowedFd<'_>, newdir: BorrowedFd<'_>, new: &CStr) -> Result<(), Errno> {
    let p = ProcFd::new(fd);
    two_names(
        libc::linkat,
        CWD,
        p.as_cstr(),
        newdir.as_raw_fd(),
        new,
        libc::AT_SYMLINK_FOLLOW,
    )
}

/// `mknodat(dir, name, mode, dev)`, the raw call: `dev` as the kernel
/// reads it (`unsigned int`, in its encoding), unlike libc's `dev_t`.
pub fn mknodat(dir: BorrowedFd<'_>, name: &CStr, mode: u32, dev: u32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; the rest are integers.
    let r = unsafe { libc::syscall(libc::SYS_mknodat, dir.as_raw_fd(), name.as_ptr(), mode, dev) };
    check_long(r).map(drop)
}

/// `symlinkat(target, dir, name)`.
pub fn symlinkat(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    // SAFETY: both strings are NUL-terminated.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) }).map(drop)
}

/// `fchmodat2(fd, "", mode, AT_EMPTY_PATH | flags)`: chmod the file behind
/// an `O_PATH` descriptor. Falls back to `chmod("/proc/self/fd/N")` on
/// kernels before 6.6 (symlinks then answer EOPNOTSUPP, as 6.6 does).
pub fn chmod_fd(fd: BorrowedFd<'_>, mode: u32, flags: i32) -> Result<(), Errno> {
    const EMPTY: &CStr = c"";
    // SAFETY: the path is a NUL-terminated empty string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fchmodat2,
            fd.as_raw_fd(),
            EMPTY.as_ptr(),
            mode,
            flags | libc::AT_EMPTY_PATH,
        )
    };
    match check_long(r) {
        Err(Errno::ENOSYS) => {
            if fstat(fd)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(Errno::EOPNOTSUPP);
            }
            let p = ProcFd::new(fd);
            // SAFETY: the path is NUL-terminated.
            check(unsafe { libc::chmod(p.as_cstr().as_ptr(), mode) }).map(drop)
        }
        r => r.map(drop),
    }
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`; `u32::MAX` leaves an id.
pub fn chown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> Result<(), Errno> {
    // SAFETY: the path is a NUL-terminated empty string.
    let r = unsafe { libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) };
    check(r).map(drop)
}

/// `inotify_add_watch(inotify, "/proc/self/fd/N", mask)`: watch the file
/// behind the `O_PATH` descriptor `target`.
pub fn inotify_watch_fd(
    inotify: BorrowedFd<'_>,
    target: BorrowedFd<'_>,
    mask: u32,
) -> Result<i32, Errno> {
    let p = ProcFd::new(target);
    // SAFETY: the path is NUL-terminated.
    check(unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), p.as_cstr().as_ptr(), mask) })
}

/// `setxattr("/proc/self/fd/N", name, value, flags)`: set an extended
/// attribute of the file behind an `O_PATH` descriptor (the magic link
/// leads to the file itself, a symlink included, which is not followed).
pub fn setxattr_fd(fd: BorrowedFd<'_>, name: &CStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    let p = ProcFd::new(fd);
    // SAFETY: both strings are NUL-terminated; `value` is readable for
    // its length.
    let r = unsafe {
        libc::setxattr(
            p.as_cstr().as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    };
    check(r).map(drop)
}

/// `setxattr("", NULL, NULL, 0, 0)`: its error tells which the kernel
/// checks first, the name (EFAULT: copied before the lookup, as since
/// Linux 6.13) or the path (ENOENT).
pub fn setxattr_probe() -> Errno {
    // SAFETY: the path is a NUL-terminated empty string; the kernel reads
    // nothing through the null name and value (it fails first).
    let r = unsafe { libc::setxattr(c"".as_ptr(), std::ptr::null(), std::ptr::null(), 0, 0) };
    match check(r) {
        Ok(_) => Errno::UnknownErrno,
        Err(e) => e,
    }
}

/// `fsetxattr(fd, name, value, flags)` on an open file.
pub fn fsetxattr(fd: BorrowedFd<'_>, name: &CStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; `value` is readable for its length.
    let r = unsafe {
        libc::fsetxattr(
            fd.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    };
    check(r).map(drop)
}

/// The supervisor's own name for a descriptor, `/proc/self/fd/N`, built
/// without allocating.
pub struct ProcFd {
    buf: [u8; 32],
    len: usize,
}

impl ProcFd {
    pub fn new(fd: BorrowedFd<'_>) -> ProcFd {
        const PREFIX: &[u8] = b"/proc/self/fd/";
        let mut buf = [0u8; 32];
        buf[..PREFIX.len()].copy_from_slice(PREFIX);
        let mut digits = [0u8; 12];
        let mut n = fd.as_raw_fd().unsigned_abs();
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let d = &digits[i..];
        buf[PREFIX.len()..PREFIX.len() + d.len()].copy_from_slice(d);
        ProcFd {
            buf,
            len: PREFIX.len() + d.len() + 1,
        }
    }

    pub fn as_cstr(&self) -> &CStr {
        // The buffer holds the prefix, the digits and a NUL, nothing else.
        CStr::from_bytes_with_nul(&self.buf[..self.len]).unwrap_or(c"/proc/self/fd/-1")
    }
}

/// `sched_getaffinity(tid, buf.len(), buf)`: the kernel's own checks of
/// the length (EINVAL), and the number of bytes it wrote into `buf`
/// (`min(len, cpumask_size())`). `tid` is a host thread id.
pub fn sched_getaffinity(tid: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    let len = libc::c_uint::try_from(buf.len()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `buf` is writable for `len` bytes, and the kernel writes at
    // most `len` bytes into it.
    let r = unsafe { libc::syscall(libc::SYS_sched_getaffinity, tid, len, buf.as_mut_ptr()) };
    check_long(r).map(|n| n as usize)
}

/// `sysinfo(2)` of the host: memory figures in units of `mem_unit` bytes.
pub fn sysinfo() -> Result<libc::sysinfo, Errno> {
    // SAFETY: all-zero bytes are a valid `struct sysinfo` (integers only).
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a writable `struct sysinfo` that outlives the call.
    check(unsafe { libc::sysinfo(&mut info) })?;
    Ok(info)
}

/// What the kernel prints for the file behind `fd`
/// (`readlink("/proc/self/fd/N")`), into `buf`; returns the length.
pub fn fd_path(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    let p = ProcFd::new(fd);
    // SAFETY: the path is NUL-terminated; `buf` is writable for its length.
    let n = unsafe { libc::readlink(p.as_cstr().as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    Errno::result(n).map(|n| n as usize)
}

/// `getdents64(fd, buf)`: the next directory entries of `fd` (opened
/// for reading, not `O_PATH`) as `struct linux_dirent64` records into
/// `buf`; returns the bytes filled, 0 at the end. [`dirent_names`] walks
/// them.
pub fn getdents64(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `buf` is writable for its length, which is passed exactly;
    // the kernel writes whole records and returns how many bytes.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    check_long(n).map(|n| n as usize)
}

/// The names of the `struct linux_dirent64` records that [`getdents64`]
/// put in `filled` (a record: inode u64, offset i64, length u16, type u8,
/// then the NUL-terminated name), in order; a record that runs past the
/// bytes ends the walk.
pub fn dirent_names(filled: &[u8]) -> impl Iterator<Item = &[u8]> {
    dirents(filled).map(|(name, _)| name)
}

/// The names of [`dirent_names`] with each record's type (`DT_DIR`,
/// `DT_REG`, ..., `DT_UNKNOWN` where the file system does not say).
pub fn dirents(filled: &[u8]) -> impl Iterator<Item = (&[u8], u8)> {
    const TYPE: usize = 18;
    const NAME: usize = 19;
    let mut rest = filled;
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_ne_bytes([*rest.get(16)?, *rest.get(17)?]));
        let record = rest.get(..len).filter(|_| len > NAME)?;
        rest = &rest[len..];
        let name = &record[NAME..];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        Some((name, record[TYPE]))
    })
}

/// `syncfs(fd)`: writes back the file system `fd` is on.
pub fn syncfs(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: syncfs only reads the descriptor number.
    check(unsafe { libc::syncfs(fd.as_raw_fd()) }).map(drop)
}

/// `clock_getres(clock)`: the resolution of one of the host's clocks.
pub fn clock_getres(clock: libc::clockid_t) -> Result<libc::timespec, Errno> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a writable `struct timespec` that outlives the call.
    check(unsafe { libc::clock_getres(clock, &mut ts) })?;
    Ok(ts)
}

/// `times(NULL)`: the host's clock ticks since an arbitrary point (what
/// the kernel's times(2) returns).
pub fn times_ticks() -> Result<i64, Errno> {
    // SAFETY: a NULL buffer asks times(2) for its return value alone.
    let r = unsafe { libc::times(std::ptr::null_mut()) };
    // A tick count near 2^64 reads as -1 (the kernel's answer too).
    Ok(r as i64)
}

/// `sched_get_priority_max(policy)` (`max`) or `sched_get_priority_min`.
pub fn sched_priority_bound(policy: libc::c_int, max: bool) -> Result<i64, Errno> {
    // SAFETY: both calls take an int and touch no memory.
    let r = unsafe {
        if max {
            libc::sched_get_priority_max(policy)
        } else {
            libc::sched_get_priority_min(policy)
        }
    };
    check(r).map(i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn proc_fd_names() {
        let f = std::fs::File::open("/").unwrap();
        let p = ProcFd::new(f.as_fd());
        assert_eq!(
            p.as_cstr().to_bytes(),
            format!("/proc/self/fd/{}", f.as_raw_fd()).as_bytes()
        );
    }

    #[test]
    fn getdents_lists_what_std_lists() {
        let d = std::env::temp_dir().join(format!("vfs-getdents-{}", std::process::id()));
        std::fs::create_dir(&d).unwrap();
        // More names than one small buffer holds, of every length.
        let mut made: Vec<Vec<u8>> = (1..200)
            .map(|i| "n".repeat(i % 60 + 1) + &i.to_string())
            .map(String::into_bytes)
            .collect();
        for name in &made {
            std::fs::write(d.join(std::str::from_utf8(name).unwrap()), b"").unwrap();
        }
        let dir = std::fs::File::open(&d).unwrap();
        let mut listed = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            let n = getdents64(dir.as_fd(), &mut buf).unwrap();
            if n == 0 {
                break;
            }
            listed.extend(dirent_names(&buf[..n]).map(<[u8]>::to_vec));
        }
        listed.retain(|n| n != b"." && n != b"..");
        listed.sort();
        made.sort();
        assert_eq!(listed, made);
        // A record cut short ends the walk.
        assert_eq!(dirent_names(&buf[..10]).count(), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn dirents_say_each_type() {
        let d = std::env::temp_dir().join(format!("vfs-dirents-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("file"), b"").unwrap();
        std::os::unix::fs::symlink("sub", d.join("link")).unwrap();
        let dir = std::fs::File::open(&d).unwrap();
        let mut buf = [0u8; 4096];
        let n = getdents64(dir.as_fd(), &mut buf).unwrap();
        let mut listed: Vec<(Vec<u8>, u8)> = dirents(&buf[..n])
            .filter(|(n, _)| *n != b"." && *n != b"..")
            .map(|(n, t)| (n.to_vec(), t))
            .collect();
        listed.sort();
        let want = [
            (b"file".to_vec(), libc::DT_REG),
            (b"link".to_vec(), libc::DT_LNK),
            (b"sub".to_vec(), libc::DT_DIR),
        ];
        assert_eq!(listed, want);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
