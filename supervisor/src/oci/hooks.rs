//! The bundle's hooks (createRuntime and prestart at `create`, poststart
//! at `start`, poststop at `delete`): each runs as the runtime-spec says,
//! with the container's state JSON on stdin, its own args and env, and
//! its timeout. Docker's prestart hook (network setup) needs this even
//! with `--network none`.
//!
//! Owns running one list of hooks; not when they run.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

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
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", timeout.as_secs()));
            }
            None => thread::sleep(Duration::from_millis(5)),
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
