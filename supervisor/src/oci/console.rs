//! The engine's console socket (`--console-socket`): where a container's
//! or an exec'd process's pseudo-terminal master goes, as runc sends it
//! (one message naming the slave, the master attached with SCM_RIGHTS).
//!
//! An exec'd process's terminal is opened here, in the sandbox's own
//! devpts (so the process can name it): through `/proc/<init>/root` of
//! the sandbox's init, the monitor's child in another mount namespace.
//!
//! Owns connecting and sending, and finding the sandbox's devpts; not a
//! container's own terminal (opened by init: `launch/init.rs`).

use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::sys::fd::send_with_fd;
use crate::sys::term::open_pty_at;

/// A terminal in the sandbox's devpts.
pub struct Terminal {
    pub master: OwnedFd,
    pub slave: OwnedFd,
    /// The slave's name inside the sandbox (`/dev/pts/N`).
    pub name: String,
}

/// Opens a terminal in the devpts of the sandbox run by `monitor`.
pub fn open_in_sandbox(monitor: i32) -> Result<Terminal, String> {
    let init = sandbox_init(monitor).ok_or("the container's sandbox is gone")?;
    let ptmx = PathBuf::from(format!("/proc/{init}/root/dev/pts/ptmx"));
    let (master, slave, n) = open_pty_at(&ptmx)
        .map_err(|e| format!("opening a terminal in the container: {}", e.desc()))?;
    Ok(Terminal {
        master,
        slave,
        name: format!("/dev/pts/{n}"),
    })
}

/// The sandbox's init: the monitor's child in a mount namespace other
/// than the monitor's (a child the monitor made, so not the guest's choosing).
fn sandbox_init(monitor: i32) -> Option<u32> {
    let own_ns = fs::read_link(format!("/proc/{monitor}/ns/mnt")).ok()?;
    let tasks = fs::read_dir(format!("/proc/{monitor}/task")).ok()?;
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|child| fs::read_link(format!("/proc/{child}/ns/mnt")).is_ok_and(|ns| ns != own_ns))
}

/// Sends `master` (whose slave is `name`) to the console socket at `path`.
pub fn send_master(path: &Path, name: &[u8], master: BorrowedFd<'_>) -> Result<(), String> {
    let sock = UnixStream::connect(path)
        .map_err(|e| format!("--console-socket {}: {e}", path.display()))?;
    send_with_fd(sock.as_fd(), name, Some(master))
        .map_err(|e| format!("--console-socket {}: {}", path.display(), e.desc()))
}
