//! A bound on a child the test drives by hand (spawned, read line by
//! line, signalled): past it the child is killed, so a test blocked
//! reading its output gets the end of file and fails with a message
//! instead of hanging until CI's limit. [`Run`](super::Run) has its own
//! timeout; this is for the `Command::spawn` cases.
//!
//! Owns: the killing thread and its cancellation. Not: what the test
//! then asserts (its read sees the end of the output and fails).

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Cancels the kill when dropped. Drop it before waiting for the child:
/// the pid must still be the child's (unreaped) when the kill may come.
pub struct KillAfter {
    cancel: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// SIGKILLs process `pid` (a child of the test, not yet waited for)
/// unless the guard is dropped within `limit`.
pub fn kill_after(pid: u32, limit: Duration) -> KillAfter {
    let (cancel, cancelled) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
            eprintln!("killing child {pid}: still running after {limit:?} (a hang?)");
            // Our own child, not yet reaped (see KillAfter): the pid is its.
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    });
    KillAfter {
        cancel: Some(cancel),
        thread: Some(thread),
    }
}

/// SIGTERMs `child` (a daemon the test started) and waits for it, killing
/// it if it is still running after `limit`; its exit status.
pub fn terminate(mut child: std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let guard = kill_after(child.id(), limit);
    let status = child.wait().expect("wait for the daemon");
    drop(guard);
    status
}

impl Drop for KillAfter {
    fn drop(&mut self) {
        drop(self.cancel.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
