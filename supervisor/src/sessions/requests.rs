//! A session's requests: an exec, a file put or got, each a command run
//! in the session's sandbox over its exec socket (`exec.rs`), the session
//! kept busy (not idle) meanwhile and woken first if it is hibernated.
//!
//! Owns running one request in a session; not the exec protocol
//! (`exec.rs`) nor the session's lifecycle (`registry.rs`).

use std::time::Instant;

use super::exec::{self, Outcome, Stream};
use super::files;
use super::host::EXEC_SOCKET;
use super::registry::{lock, one_line, Session, SessionError, OUTPUT_CAP};
use super::spec::{self, ExecSpec};

type Result<T> = std::result::Result<T, SessionError>;

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
        self.run(&cmd, sink)
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

    /// Runs one command, keeping the session busy (not idle) meanwhile.
    fn run(&self, cmd: &exec::Command, sink: &mut dyn FnMut(Stream, &[u8])) -> Result<Outcome> {
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
        result.map_err(|e| {
            // A sandbox that went away mid-request ends the session.
            if let Some(reason) = self.due() {
                self.end(reason);
            }
            self.ended_error().unwrap_or(SessionError::Internal(e))
        })
    }
}
