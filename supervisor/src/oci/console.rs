//! The engine's console socket (`--console-socket`): where a container's
//! or an exec'd process's pseudo-terminal master goes, as runc sends it
//! (one message naming the slave, the master attached with SCM_RIGHTS).
//!
//! An exec'd process's terminal is opened here, in the sandbox's own
//! devpts (so the process can name it): through `/proc/<init>/root` of
//! the sandbox's init, the monitor's child (the record keeps its pid).
//!
//! Owns finding the sandbox's devpts for an exec'd process; not the
//! sending (`sandbox::tty::send_master`, which the engine also uses for a
//! container's own terminal, opened by init: `sandbox/src/launch/init.rs`).

use std::fs;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use sandbox::sys::term::open_pty_at;

/// A terminal in the sandbox's devpts.
pub struct Terminal {
    pub master: OwnedFd,
    pub slave: OwnedFd,
    /// The slave's name inside the sandbox (`/dev/pts/N`).
    pub name: String,
}

/// Opens a terminal in the devpts of the sandbox whose init is `init`
/// (the record's), in the container whose anchor is `anchor`.
pub fn open_in_sandbox(anchor: i32, init: i32) -> Result<Terminal, String> {
    if !is_sandbox_init(anchor, init) {
        return Err("the container's sandbox is gone".into());
    }
    let ptmx = PathBuf::from(format!("/proc/{init}/root/dev/pts/ptmx"));
    let (master, slave, n) =
        open_pty_at(&ptmx).map_err(|e| match is_sandbox_init(anchor, init) {
            // Ended since the check: its root went with init.
            false => "the container's sandbox is gone".to_string(),
            true => format!("opening a terminal in the container: {}", e.desc()),
        })?;
    Ok(Terminal {
        master,
        slave,
        name: format!("/dev/pts/{n}"),
    })
}

/// Whether `init` is still the sandbox's init: the child of the
/// anchor's child, the monitor (a pid the kernel reused is not).
pub(super) fn is_sandbox_init(anchor: i32, init: i32) -> bool {
    let monitor = parent_of(init);
    init > 0 && monitor.is_some_and(|m| parent_of(m) == Some(anchor))
}

/// The parent pid of process `pid` (/proc/<pid>/stat field 4).
fn parent_of(pid: i32) -> Option<i32> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    procfs::StatLine::parse(&text)?.number(4)
}
