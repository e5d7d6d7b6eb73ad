//! Work done in a forked child of a single-threaded command, its error
//! sent back on a pipe: entering another mount namespace (`sys_cpu.rs`),
//! or a D-Bus client whose executor starts threads (`systemd.rs`), so
//! that the command itself stays single-threaded (`create` forks the
//! container's anchor afterwards).
//!
//! Owns the fork, the pipe and the wait. Does not own any work done there.

use std::fs::File;
use std::io::{Read, Write};

use nix::fcntl::OFlag;
use nix::sys::wait::{waitpid, WaitStatus};

use sandbox::sys::process::{fork_single_threaded, Forked};

/// Runs `work` in a forked child (which enters another mount
/// namespace); its error comes back on a pipe.
pub fn in_child(work: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let (from_child, to_parent) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {}", e.desc()))?;
    match fork_single_threaded().map_err(|e| format!("fork: {}", e.desc()))? {
        Forked::Child => {
            drop(from_child);
            let code = match work() {
                Ok(()) => 0,
                Err(e) => {
                    let _ = File::from(to_parent).write_all(e.as_bytes());
                    1
                }
            };
            sandbox::sys::process::exit_now(code)
        }
        Forked::Parent(child) => {
            drop(to_parent);
            let mut message = String::new();
            let _ = File::from(from_child)
                .take(4096)
                .read_to_string(&mut message);
            match waitpid(child, None) {
                Ok(WaitStatus::Exited(_, 0)) => Ok(()),
                _ if !message.is_empty() => Err(message),
                other => Err(format!("the writer ended: {other:?}")),
            }
        }
    }
}
