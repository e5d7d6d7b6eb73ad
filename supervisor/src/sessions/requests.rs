//! A session's requests: an exec, a file put or got, each a command run
//! in the session's sandbox over its exec socket (`exec.rs`), the session
//! kept busy (not idle) meanwhile and woken first if it is hibernated.
//!
//! Owns running one request in a session; not the exec protocol
//! (`exec.rs`) nor the session's lifecycle (`registry.rs`).

use std::time::{Duration, Instant};

use super::ending::{self, SandboxEnd};
use super::exec::{self, Lost, Outcome, Reason, Stream};
use super::files;
use super::host::EXEC_SOCKET;
use super::registry::{lock, one_line, Session, SessionError, OUTPUT_CAP, SANDBOX_EXITED};
use super::spec::{self, ExecSpec};

type Result<T> = std::result::Result<T, SessionError>;

/// How long a command killed outright (SIGKILL, not at its timeout)
/// waits for the session's sandbox to end too: a limit's kill takes the
/// command first (the kernel's OOM killer) and then the whole sandbox.
const LIMIT_GRACE: Duration = Duration::from_secs(1);
/// How long a request whose exec helper went away waits for the
/// sandbox to end, so that the answer can say why it did.
const GONE_GRACE: Duration = Duration::from_secs(5);

impl Session {
    /// Runs `spec` in the session; `sink` gets the output as it is written.
    pub fn exec(&self, spec: &ExecSpec, sink: &mut dyn FnMut(Stream, &[u8])) -> Result<Outcome> {
        let timeout = spec.check().map_err(SessionError::BadRequest)?;
        let env = self.env(&spec::env_strings(&spec.env));
        let cmd = exec::Command {
            args: spec.command.clone(),
            env,
            cwd: spec.cwd.clone().unwrap_or_else(|| self.workdir.clone()),
            stdin: spec.stdin.clone().unwrap_or_default().into_bytes(),
            timeout,
            cap: OUTPUT_CAP,
        };
        let started = Instant::now();
        let out = self.run(&cmd, sink)?;
        let killed = match &out {
            Ok(o) => o.reason == Reason::Signaled && o.signal == Some(9),
            Err(_) => true,
        };
        match killed.then(|| self.sandbox_end()).flatten() {
            Some(end) => Ok(killed_with_sandbox(out, end, started)),
            None => out.map_err(|lost| self.lost_error(lost)),
        }
    }

    /// How the session's sandbox ended, when a limit (or anything but a
    /// request of ours) ended it within [`LIMIT_GRACE`].
    fn sandbox_end(&self) -> Option<SandboxEnd> {
        if self.sandbox_exits_within(LIMIT_GRACE) {
            if let Some(reason) = self.due() {
                self.end(reason);
            }
        }
        let ended = lock(&self.record)
            .ended
            .as_ref()
            .is_some_and(|e| e.reason == SANDBOX_EXITED);
        ended.then(|| ending::read(&self.dir)).flatten()
    }

    /// Writes `data` to `path` (relative to the working directory).
    pub fn put_file(&self, path: &str, data: Vec<u8>) -> Result<()> {
        files::check_path(path).map_err(SessionError::BadRequest)?;
        if data.len() > files::MAX_FILE {
            return Err(SessionError::BadRequest(format!(
                "file larger than {} bytes",
                files::MAX_FILE
            )));
        }
        let cmd = files::put(&self.workdir, path, data, self.env(&[]));
        let out = self.run(&cmd, &mut |_, _| {})?;
        let out = out.map_err(|lost| self.lost_error(lost))?;
        match out.exit_code {
            Some(0) => Ok(()),
            _ => Err(SessionError::BadRequest(format!(
                "{path}: {}",
                one_line(&out.stderr.bytes, "cannot be written")
            ))),
        }
    }

    /// The contents of `path` (relative to the working directory).
    pub fn get_file(&self, path: &str) -> Result<Vec<u8>> {
        files::check_path(path).map_err(SessionError::BadRequest)?;
        let cmd = files::get(&self.workdir, path, self.env(&[]));
        let out = self.run(&cmd, &mut |_, _| {})?;
        let out = out.map_err(|lost| self.lost_error(lost))?;
        match out.exit_code {
            Some(0) if !out.stdout.truncated => Ok(out.stdout.bytes),
            Some(0) => Err(SessionError::BadRequest(format!(
                "{path}: larger than {} bytes",
                files::MAX_FILE
            ))),
            Some(files::NOT_A_FILE) => Err(SessionError::NotFound(format!(
                "{path}: no such file in the session"
            ))),
            _ => Err(SessionError::BadRequest(format!(
                "{path}: {}",
                one_line(&out.stderr.bytes, "cannot be read")
            ))),
        }
    }

    /// Runs one command, keeping the session busy (not idle) meanwhile:
    /// an error if it could not start (the session has ended, or would
    /// not wake), else its end or, if its end never came, why (the
    /// session then ended once its sandbox had gone, so its report says why).
    fn run(
        &self,
        cmd: &exec::Command,
        sink: &mut dyn FnMut(Stream, &[u8]),
    ) -> Result<std::result::Result<Outcome, Lost>> {
        {
            let mut live = lock(&self.live);
            if let Some(e) = self.ended_error() {
                return Err(e);
            }
            if self.is_hibernated() {
                self.wake_locked(&mut live)?;
            }
            live.hibernate_error = None;
            live.running += 1;
            live.last_active = Instant::now();
        }
        let result = exec::run(&self.dir.join(EXEC_SOCKET), self.init(), cmd, sink);
        {
            let mut live = lock(&self.live);
            live.running -= 1;
            live.last_active = Instant::now();
        }
        if result.is_err() {
            self.sandbox_exits_within(GONE_GRACE);
            if let Some(reason) = self.due() {
                self.end(reason);
            }
        }
        Ok(result)
    }

    /// The error for a request whose end never came: the session's end, if it has ended.
    fn lost_error(&self, lost: Lost) -> SessionError {
        self.ended_error()
            .unwrap_or(SessionError::Internal(lost.error))
    }
}

/// The result of a command that the session's sandbox took down with it
/// (`out`: its end, or what it wrote when its end never came): the
/// limit's reason and line, as an execution's result gives them.
fn killed_with_sandbox(
    out: std::result::Result<Outcome, Lost>,
    end: SandboxEnd,
    started: Instant,
) -> Outcome {
    let (stdout, stderr) = match out {
        Ok(o) => (o.stdout, o.stderr),
        Err(lost) => (lost.stdout, lost.stderr),
    };
    let reason = match end.reason.as_str() {
        "memory" => Reason::Memory,
        "pids" => Reason::Pids,
        _ => Reason::SandboxExited,
    };
    let what = end
        .message
        .unwrap_or_else(|| format!("ended ({})", end.reason));
    Outcome {
        exit_code: None,
        signal: Some(9),
        reason,
        message: Some(format!("{what}; the session has ended")),
        stdout,
        stderr,
        wall: started.elapsed(),
    }
}
