//! Host calls that name no file: CPU affinity, sysinfo, clock
//! resolutions, `times`, scheduling priorities, and `syncfs`.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

use super::{check, check_long};

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
