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
use crate::guest::Reply;

/// Terminal requests that inject input or take over a terminal.
const TERMINAL_INJECTION: &[u32] = &[
    libc::TIOCSTI as u32,
    libc::TIOCLINUX as u32,
    libc::TIOCSETD as u32,
    libc::TIOCCONS as u32,
];

pub fn ioctl(request: u32) -> Res {
    if TERMINAL_INJECTION.contains(&request) {
        Ok(Reply::Deny(Errno::EPERM))
    } else {
        Ok(Reply::Deny(Errno::ENOTTY))
    }
}
