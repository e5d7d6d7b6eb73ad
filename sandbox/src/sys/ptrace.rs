//! The ptrace requests a checkpoint needs (`crate::checkpoint`): seize,
//! interrupt and wait for a stop, general and extended (XSAVE) registers,
//! the signal mask, the rseq registration, stepping one injected call
//! through its entry and exit stops, detach; and `get_robust_list` of
//! another process. x86-64 only.
//!
//! Owns the `unsafe` of those calls; not what is saved or injected.

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// The general registers, as `PTRACE_GETREGS` gives them.
pub type Regs = libc::user_regs_struct;

/// `struct ptrace_rseq_configuration` (linux/ptrace.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RseqConfig {
    pub pointer: u64,
    pub size: u32,
    pub signature: u32,
    pub flags: u32,
    pub pad: u32,
}

const PTRACE_SEIZE: libc::c_uint = 0x4206;
const PTRACE_INTERRUPT: libc::c_uint = 0x4207;
const PTRACE_GETSIGMASK: libc::c_uint = 0x420a;
const PTRACE_SETSIGMASK: libc::c_uint = 0x420b;
const PTRACE_GET_RSEQ_CONFIGURATION: libc::c_uint = 0x420f;
const NT_X86_XSTATE: usize = 0x202;
/// Larger than any XSAVE area the kernel reports today (AMX is 11 KiB).
const XSTATE_MAX: usize = 16 * 1024;

fn check(r: libc::c_long) -> Result<libc::c_long, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r)
    }
}

/// Attaches to `pid` without stopping it.
pub fn seize(pid: Pid) -> Result<(), Errno> {
    // SAFETY: PTRACE_SEIZE takes no pointers (addr 0, data 0: no options).
    check(unsafe { libc::ptrace(PTRACE_SEIZE, pid.as_raw(), 0usize, 0usize) }).map(drop)
}

/// Attaches to `pid` without stopping it, such that it is killed if this
/// process exits before detaching (`PTRACE_O_EXITKILL`): a stub held
/// half-restored never runs without its tracer.
pub fn seize_exitkill(pid: Pid) -> Result<(), Errno> {
    let options = libc::PTRACE_O_EXITKILL as usize;
    // SAFETY: PTRACE_SEIZE takes no pointers (addr 0, data: option bits).
    check(unsafe { libc::ptrace(PTRACE_SEIZE, pid.as_raw(), 0usize, options) }).map(drop)
}

/// Asks a seized `pid` to stop.
pub fn interrupt(pid: Pid) -> Result<(), Errno> {
    // SAFETY: PTRACE_INTERRUPT takes no pointers.
    check(unsafe { libc::ptrace(PTRACE_INTERRUPT, pid.as_raw(), 0usize, 0usize) }).map(drop)
}

/// Resumes `pid` until its next syscall entry or exit stop.
pub fn syscall_step(pid: Pid) -> Result<(), Errno> {
    // SAFETY: PTRACE_SYSCALL with signal 0 takes no pointers.
    check(unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid.as_raw(), 0usize, 0usize) }).map(drop)
}

/// Lets `pid` go.
pub fn detach(pid: Pid) -> Result<(), Errno> {
    // SAFETY: PTRACE_DETACH with signal 0 takes no pointers.
    check(unsafe { libc::ptrace(libc::PTRACE_DETACH, pid.as_raw(), 0usize, 0usize) }).map(drop)
}

/// Waits until the traced `pid` stops, at most `limit`; `Ok(false)` when
/// it did not stop in time, an error when it died.
pub fn wait_stop(pid: Pid, limit: Duration) -> Result<bool, Errno> {
    let deadline = Instant::now() + limit;
    loop {
        match waitpid(pid, Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG))? {
            WaitStatus::StillAlive => {}
            WaitStatus::Exited(..) | WaitStatus::Signaled(..) => return Err(Errno::ESRCH),
            _ => return Ok(true),
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Waits for the next stop of `pid` (an injected call's entry or exit).
pub fn wait_next_stop(pid: Pid) -> Result<(), Errno> {
    match waitpid(pid, Some(WaitPidFlag::__WALL))? {
        WaitStatus::Exited(..) | WaitStatus::Signaled(..) => Err(Errno::ESRCH),
        _ => Ok(()),
    }
}

pub fn get_regs(pid: Pid) -> Result<Regs, Errno> {
    let mut regs = std::mem::MaybeUninit::<Regs>::zeroed();
    // SAFETY: the kernel writes one user_regs_struct to the pointer,
    // which points to one.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGS,
            pid.as_raw(),
            0usize,
            regs.as_mut_ptr(),
        )
    })?;
    // SAFETY: zeroed, then filled by the kernel: every field is an integer.
    Ok(unsafe { regs.assume_init() })
}

pub fn set_regs(pid: Pid, regs: &Regs) -> Result<(), Errno> {
    // SAFETY: the kernel reads one user_regs_struct from the pointer.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGS,
            pid.as_raw(),
            0usize,
            regs as *const Regs,
        )
    })
    .map(drop)
}

/// The XSAVE area (x87, SSE, AVX... state) of `pid`.
pub fn get_xstate(pid: Pid) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; XSTATE_MAX];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: the kernel writes at most iov_len bytes to iov_base, a
    // buffer of that size, and stores the length written in iov_len.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGSET,
            pid.as_raw(),
            NT_X86_XSTATE,
            &mut iov as *mut libc::iovec,
        )
    })?;
    buf.truncate(iov.iov_len);
    Ok(buf)
}

pub fn set_xstate(pid: Pid, state: &[u8]) -> Result<(), Errno> {
    let mut iov = libc::iovec {
        iov_base: state.as_ptr() as *mut libc::c_void,
        iov_len: state.len(),
    };
    // SAFETY: the kernel only reads iov_len bytes from iov_base.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGSET,
            pid.as_raw(),
            NT_X86_XSTATE,
            &mut iov as *mut libc::iovec,
        )
    })
    .map(drop)
}

pub fn get_sigmask(pid: Pid) -> Result<u64, Errno> {
    let mut mask = 0u64;
    // SAFETY: the kernel writes 8 bytes (the size passed) to the u64.
    check(unsafe {
        libc::ptrace(
            PTRACE_GETSIGMASK,
            pid.as_raw(),
            8usize,
            &mut mask as *mut u64,
        )
    })?;
    Ok(mask)
}

pub fn set_sigmask(pid: Pid, mask: u64) -> Result<(), Errno> {
    // SAFETY: the kernel reads 8 bytes (the size passed) from the u64.
    check(unsafe { libc::ptrace(PTRACE_SETSIGMASK, pid.as_raw(), 8usize, &mask as *const u64) })
        .map(drop)
}

/// Where `pid` registered its rseq area (pointer 0: none).
pub fn rseq_config(pid: Pid) -> Result<RseqConfig, Errno> {
    let mut conf = RseqConfig::default();
    // SAFETY: the kernel writes at most `size` bytes (the struct's size,
    // passed as addr) to the struct.
    check(unsafe {
        libc::ptrace(
            PTRACE_GET_RSEQ_CONFIGURATION,
            pid.as_raw(),
            std::mem::size_of::<RseqConfig>(),
            &mut conf as *mut RseqConfig,
        )
    })?;
    Ok(conf)
}

/// The robust futex list head `pid` registered, and its length.
pub fn robust_list(pid: Pid) -> Result<(u64, u64), Errno> {
    let mut head: u64 = 0;
    let mut len: libc::size_t = 0;
    // SAFETY: the kernel writes one pointer-sized value to each pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_robust_list,
            pid.as_raw(),
            &mut head as *mut u64,
            &mut len as *mut libc::size_t,
        )
    };
    check(r)?;
    Ok((head, len as u64))
}
