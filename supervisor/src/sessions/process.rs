//! A session's sandbox as a process of the daemon: spawning `supervisor
//! session-sandbox` in a session directory ([`start`]), waiting for its
//! `ready` file, and stopping it by closing its lifeline ([`Process::stop`]).
//! Sessions made on request and the warm sessions of templates
//! (`templates.rs`) are started the same way, here.
//!
//! Owns the child and its lifeline; not what a session is (`registry.rs`).

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::ending;
use super::host::READY_FILE;
use super::registry::{mkdir_private, one_line, SessionError};

/// How long a new session's sandbox may take to be ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an ended session's sandbox may take to go before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running session sandbox.
pub struct Process {
    pub child: Option<Child>,
    /// Closing it ends the sandbox (`host.rs`).
    pub lifeline: Option<OwnedFd>,
    /// Init's host pid.
    pub init: i32,
}

/// Spawns the sandbox of the session whose directory is `dir` with `run`'s
/// `flags` (`exe`: the `supervisor` binary) and waits until it is ready.
pub fn start(
    exe: &Path,
    dir: &Path,
    flags: &[std::ffi::OsString],
) -> Result<Process, SessionError> {
    let internal = |e: String| SessionError::Internal(e);
    let (life_r, life_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| internal(format!("pipe: {}", e.desc())))?;
    let log = File::create(dir.join("sandbox.log"))
        .map_err(|e| internal(format!("{}: {e}", dir.display())))?;
    // `run` binds its current directory into the view: the session
    // sandbox starts in an empty one, so the daemon's never shows.
    let empty = dir.join("empty");
    mkdir_private(&empty).map_err(internal)?;
    // Its report says which limit ended it, if one does (`ending.rs`).
    ending::forget(dir);
    let child = std::process::Command::new(exe)
        .current_dir(&empty)
        .arg("session-sandbox")
        .arg("--session-dir")
        .arg(dir)
        .arg("--report")
        .arg(ending::report_path(dir))
        .args(flags)
        .args(["--", "sleep", "infinity"])
        .stdin(Stdio::from(life_r))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .map_err(|e| internal(format!("starting {}: {e}", exe.display())))?;
    let mut process = Process {
        child: Some(child),
        lifeline: Some(life_w),
        init: 0,
    };
    match process.wait_ready(dir) {
        Ok(pid) => {
            process.init = pid;
            Ok(process)
        }
        Err(e) => {
            process.stop();
            Err(e)
        }
    }
}

impl Process {
    /// A process record for a session that has none (recovered as ended).
    pub fn none() -> Process {
        Process {
            child: None,
            lifeline: None,
            init: 0,
        }
    }

    /// The sandbox process has exited.
    pub fn exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Closes the lifeline (the sandbox kills itself) and reaps the child,
    /// SIGKILLing it if it lingers.
    pub fn stop(&mut self) {
        self.lifeline = None;
        let Some(mut child) = self.child.take() else {
            return;
        };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Waits for the sandbox's `ready` file: init's host pid.
    fn wait_ready(&mut self, dir: &Path) -> Result<i32, SessionError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(text) = std::fs::read_to_string(dir.join(READY_FILE)) {
                if let Ok(pid) = text.trim().parse() {
                    return Ok(pid);
                }
            }
            let exited = !matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)));
            if exited {
                let log = std::fs::read(dir.join("sandbox.log")).unwrap_or_default();
                return Err(SessionError::StartFailed(format!(
                    "the session's sandbox did not start: {}",
                    one_line(&log, "no message")
                )));
            }
            if Instant::now() >= deadline {
                return Err(SessionError::Internal(
                    "the session's sandbox was not ready in time".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
