//! The ioctl requests the filter's allowlist leaves out, refused with
//! the errno that says what they are: EPERM for the terminal requests
//! that inject input or take a terminal over (TIOCSTI, TIOCLINUX,
//! TIOCSETD, TIOCCONS), as a kernel with `legacy_tiocsti` off answers;
//! ENOTTY, runsc's answer to a request it does not know, for every other
//! (FS_IOC_GETFLAGS, FIEMAP, FICLONE, ...: "not supported here", which
//! `cp`, `lsattr` and Python's shutil take in their stride). Both are
//! counted as denials in the report.
//!
//! Owns only the choice of errno. Does not own the allowlist
//! (`policy/allow.rs`).

use nix::errno::Errno;

use super::Res;
use crate::guest::{Guest, Reply};

/// Terminal requests that inject input or take over a terminal.
const TERMINAL_INJECTION: &[u32] = &[
    libc::TIOCSTI as u32,
    libc::TIOCLINUX as u32,
    libc::TIOCSETD as u32,
    libc::TIOCCONS as u32,
];

/// ioctl(fd, request, ..) of a request off the allowlist: EBADF first
/// for a descriptor the guest lacks or holds as `O_PATH`, as the kernel
/// checks the descriptor first (its flags in the host's procfs).
pub fn ioctl(g: &dyn Guest, fd: i32, request: u32) -> Res {
    let info = (fd >= 0)
        .then(|| std::fs::read_to_string(format!("/proc/{}/fdinfo/{fd}", g.tid())).ok())
        .flatten();
    let flags = info.as_deref().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
    });
    match flags {
        Some(f) if f & libc::O_PATH as u32 == 0 => {}
        _ => return Err(Errno::EBADF),
    }
    if TERMINAL_INJECTION.contains(&request) {
        Ok(Reply::Deny(Errno::EPERM))
    } else {
        Ok(Reply::Deny(Errno::ENOTTY))
    }
}
