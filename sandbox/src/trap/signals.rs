//! What `/proc/<tid>` says of a guest thread that a waiting handler must
//! know: whether a signal it catches is pending (so a blocking accept or
//! recv answers EINTR, as the kernel's interruptible waits do), and
//! whether a descriptor is close-on-exec.
//!
//! Owns: parsing `status` (SigPnd, ShdPnd, SigBlk, SigCgt) and `fdinfo`.
//! Does not own: the waiting (the handlers' `wait` module).

use std::fs;

use nix::errno::Errno;

/// Whether `tid` has a pending signal that it neither blocks nor leaves
/// to its default action. (A fatal one kills the thread, which the
/// waiter sees as the notification going invalid; ignored ones are
/// never queued.)
pub fn catchable_pending(tid: i32) -> bool {
    let Ok(text) = fs::read_to_string(format!("/proc/{tid}/status")) else {
        return false;
    };
    let mask = |field: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let pending = mask("SigPnd:") | mask("ShdPnd:");
    pending & !mask("SigBlk:") & mask("SigCgt:") != 0
}

/// Whether the guest's descriptor `fd` is close-on-exec (EBADF if none).
pub fn fd_cloexec(tid: i32, fd: i32) -> Result<bool, Errno> {
    let text = fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")).map_err(|_| Errno::EBADF)?;
    let flags = text
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .ok_or(Errno::EIO)?;
    Ok(flags & libc::O_CLOEXEC as u32 != 0)
}
