//! The run's signals: those forwarded to the guest's init are blocked
//! before any thread exists and read by one thread from a signalfd, which
//! passes them on (or turns SIGWINCH into the guest terminal's new size).
//!
//! Owns that thread. Does not own which signals are forwarded
//! (`launch::FORWARDED`) or the terminal relay (`tty.rs`).

use std::sync::{Arc, OnceLock};
use std::thread;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::unistd::Pid;

use super::supervisor_error;
use crate::launch::{LaunchError, FORWARDED};
use crate::tty;

/// Blocks the signals forwarded to the guest (`launch::FORWARDED`) in
/// this thread, before any other exists: every thread inherits the mask,
/// and the signal thread reads them from a signalfd.
pub(super) fn block_forwarded_signals() -> Result<SigSet, LaunchError> {
    let mut set = SigSet::empty();
    FORWARDED.iter().for_each(|s| set.add(*s));
    set.thread_block().map_err(supervisor_error)?;
    Ok(set)
}

/// Passes signals that another process sent us on to the guest's init.
/// Signals from the terminal (Ctrl-C) already reach the guest, which
/// shares our process group, so they are not sent twice. With a terminal
/// relay (`resizer`), the guest has a terminal and session of its own:
/// every signal is passed on, except SIGWINCH, which becomes a new window
/// size of the guest's terminal (the kernel then signals its foreground group).
/// The relay may start after this thread (the pool's learns of its client's
/// terminal late): `resizer` is set then.
pub(super) fn forward_signals(set: SigSet, init: Pid, resizer: Arc<OnceLock<tty::Resizer>>) {
    let Ok(sfd) = SignalFd::new(&set) else { return };
    let _ = thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            match sfd.read_signal() {
                Ok(Some(info)) => match (Signal::try_from(info.ssi_signo as i32), resizer.get()) {
                    (Ok(Signal::SIGWINCH), Some(r)) => r.resize(),
                    (Ok(sig), Some(_)) => {
                        let _ = kill(init, sig);
                    }
                    (Ok(sig), None) if info.ssi_code <= 0 => {
                        let _ = kill(init, sig);
                    }
                    _ => {}
                },
                Ok(_) => {}
                Err(_) => return,
            }
        });
}
