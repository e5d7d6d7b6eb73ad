//! The bundle's hooks (createRuntime and prestart at `create`, poststart
//! at `start`, poststop at `delete`): each runs as the runtime-spec says,
//! with the container's state JSON on stdin, its own args and env, and
//! its timeout. Docker's prestart hook (network setup) needs this even
//! with `--network none`. The wait for a hook ends when it exits (its
//! pidfd polled), not at a polling tick: Docker's hook is on every
//! `create`'s path.
//!
//! Owns running one list of hooks; not when they run.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::config::Hook;

/// Longest a hook without a timeout may run.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `hooks` in order; the first failure is the error.
pub fn run_all(kind: &str, hooks: &[Hook], state: &serde_json::Value) -> Result<(), String> {
    for hook in hooks {
        run_one(hook, state).map_err(|e| format!("{kind} hook {}: {e}", hook.path().display()))?;
    }
    Ok(())
}

/// Waits until the hook behind `exited` (its pidfd) exits or `deadline`
/// passes; without a pidfd (a kernel before 5.3), 5 ms.
fn wait_for_exit(exited: Option<&OwnedFd>, deadline: Instant) {
    let Some(pidfd) = exited else {
        thread::sleep(Duration::from_millis(5));
        return;
    };
    let left = deadline
        .saturating_duration_since(Instant::now())
        .as_millis();
    let ms = u16::try_from(left).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    // EINTR or a timeout: the caller looks again.
    let _ = poll(&mut fds, PollTimeout::from(ms));
}

fn run_one(hook: &Hook, state: &serde_json::Value) -> Result<(), String> {
    let args = hook.args().clone().unwrap_or_default();
    let mut cmd = Command::new(hook.path());
    if let Some((arg0, rest)) = args.split_first() {
        cmd.arg0(arg0).args(rest);
    }
    cmd.env_clear();
    for (k, v) in sandbox::launch::env_pairs(&hook.env().clone().unwrap_or_default()) {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its stdin is not an error.
        let _ = stdin.write_all(state.to_string().as_bytes());
    }
    let timeout = hook
        .timeout()
        .filter(|t| *t > 0)
        .map(|t| Duration::from_secs(t as u64))
        .unwrap_or(DEFAULT_TIMEOUT);
    let deadline = Instant::now() + timeout;
    // Readable when the hook exits: the wait ends then, not at the next tick.
    let exited = sandbox::sys::pidfd::open(child.id() as i32, false).ok();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", timeout.as_secs()));
            }
            None => wait_for_exit(exited.as_ref(), deadline),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.by_ref().take(4096).read_to_string(&mut stderr);
    }
    Err(format!("{status}: {}", stderr.trim()))
}
