//! `pidfd_open`, `pidfd_getfd`, `pidfd_send_signal` (and its signal 0) and the
//! `PIDFD_GET_INFO` ioctl, which libc and nix do not wrap.
//!
//! Owns only these raw syscalls. Each `unsafe` block is a syscall
//! with integer arguments whose returned descriptor we take ownership of.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

/// `PIDFD_THREAD` (Linux 6.9): the pidfd refers to one thread.
const PIDFD_THREAD: libc::c_long = libc::O_EXCL as libc::c_long;

/// A pidfd for `pid`; with `thread`, for that thread (Linux 6.9+, else EINVAL).
pub fn open(pid: i32, thread: bool) -> Result<OwnedFd, Errno> {
    let flags = if thread { PIDFD_THREAD } else { 0 };
    // SAFETY: plain integer arguments; on success the kernel returns a new
    // descriptor that nothing else owns.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, flags) };
    let fd = Errno::result(r)? as i32;
    // SAFETY: `fd` is a fresh descriptor returned by the kernel just now.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A copy of descriptor `fd` of the process behind `pidfd`: the same open
/// file description (offset, status flags). Ours is close-on-exec.
pub fn getfd(pidfd: BorrowedFd<'_>, fd: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: plain integer arguments on a live pidfd; on success the
    // kernel returns a new descriptor that nothing else owns.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_getfd,
            pidfd.as_raw_fd() as libc::c_long,
            fd as libc::c_long,
            0,
        )
    };
    let new = Errno::result(r)? as i32;
    // SAFETY: `new` is a fresh descriptor returned by the kernel just now.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Sends `sig` to the process behind `pidfd`: unlike `kill`, it can never
/// reach another process that reused the pid.
pub fn send_signal(pidfd: BorrowedFd<'_>, sig: nix::sys::signal::Signal) -> Result<(), Errno> {
    send_raw(pidfd, sig as libc::c_long)
}

/// Whether the task behind `pidfd` still runs: a signal 0 checks that it
/// exists (and that we may signal it) and sends nothing.
pub fn alive(pidfd: BorrowedFd<'_>) -> bool {
    send_raw(pidfd, 0).is_ok()
}

fn send_raw(pidfd: BorrowedFd<'_>, sig: libc::c_long) -> Result<(), Errno> {
    // SAFETY: integer arguments on a live pidfd; the siginfo pointer is
    // null, so the kernel reads no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd() as libc::c_long,
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    Errno::result(r).map(drop)
}

/// `PIDFD_GET_INFO`: `_IOWR(0xFF, 11, struct pidfd_info)` (Linux 6.13).
pub const PIDFD_GET_INFO: u64 = (3 << 30) | ((PIDFD_INFO_SIZE as u64) << 16) | (0xFF << 8) | 11;
/// `PIDFD_INFO_CREDS`: ask for the ids.
const PIDFD_INFO_CREDS: u64 = 2;
/// `PIDFD_INFO_SIZE_VER0`: the first version of `struct pidfd_info`.
const PIDFD_INFO_SIZE: usize = 64;

/// `struct pidfd_info` (its first version).
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    exit_code: i32,
}

/// `PIDFD_INFO_PID`: the ids, which the kernel always gives.
const PIDFD_INFO_PID: u64 = 1;

/// The (fsuid, fsgid) of the live task behind `pidfd`, as this process's
/// user namespace sees them; ESRCH once it has ended (Linux 6.13+; older
/// kernels: ENOTTY or EINVAL).
pub fn fs_ids(pidfd: BorrowedFd<'_>) -> Result<(u32, u32), Errno> {
    let info = info(pidfd, PIDFD_INFO_CREDS)?;
    Ok((info.fsuid, info.fsgid))
}

/// The (pid, tgid) of the live task behind `pidfd` (its tid and its
/// process's id, for a pidfd of a thread) in this process's pid
/// namespace; ESRCH once it has ended (Linux 6.13+; older kernels:
/// ENOTTY or EINVAL).
pub fn pid_tgid(pidfd: BorrowedFd<'_>) -> Result<(u32, u32), Errno> {
    let info = info(pidfd, PIDFD_INFO_PID)?;
    Ok((info.pid, info.tgid))
}

/// `PIDFD_GET_INFO` asking for `want`; ENOTTY when the answer lacks it.
fn info(pidfd: BorrowedFd<'_>, want: u64) -> Result<PidfdInfo, Errno> {
    let mut info = PidfdInfo {
        mask: want,
        ..PidfdInfo::default()
    };
    // SAFETY: `info` is a live, writable struct of the size encoded in
    // the request number; the kernel writes at most that many bytes.
    let r = unsafe {
        libc::ioctl(
            pidfd.as_raw_fd(),
            PIDFD_GET_INFO as libc::Ioctl,
            &mut info as *mut PidfdInfo,
        )
    };
    Errno::result(r)?;
    if info.mask & want != want {
        return Err(Errno::ENOTTY);
    }
    Ok(info)
}
