//! What a front-end adds to a run beyond its [`SandboxConfig`]: the wait
//! before the guest starts ([`Embedding::ready`], which may also bring a
//! command known only then) and what it hears of the run's end
//! ([`Embedding::event`]). `run` itself adds nothing ([`Standalone`]);
//! the OCI runtime's monitor waits for `start`; the pool's sandbox waits
//! for its client and answers it.
//!
//! Owns that interface and the types it passes. Does not own the order
//! of the run (`run/`) or the timing options (the config's
//! [`crate::config::Schedule`]).

use std::ffi::OsString;
use std::time::Duration;

use crate::launch::Sandbox;
use crate::report::Report;
use crate::trap::trace::Tracer;

/// A front-end's part in a run.
pub trait Embedding {
    /// Called once the trap serves (and the supervisor is confined, if
    /// the config's schedule says so), before the guest may exec (after
    /// it, with `start_early`); returns when the guest may start, and
    /// with which command.
    fn ready(&self, _sandbox: &Sandbox) -> Result<Start, String> {
        Ok(Start::Configured)
    }

    /// What happens to the run. The default prints a failure's line.
    fn event(&self, event: Event<'_>) {
        if let Event::Failed(message) = event {
            eprintln!("supervisor: {message}");
        }
    }
}

/// `supervisor run`: nothing added.
pub struct Standalone;

impl Embedding for Standalone {}

/// How the guest starts.
pub enum Start {
    /// With the config's command.
    Configured,
    /// With a command given only now ([`crate::config::StartMode::Late`]).
    Late(LateCommand),
}

/// A command given at start (the pool's client's), with what comes with it.
pub struct LateCommand {
    pub command: Vec<OsString>,
    /// The guest's complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Which of stdin, stdout, stderr the guest gets its pty as
    /// ([`crate::config::Terminal::AtStart`]); the others are this
    /// process's own 0, 1, 2 (those the output limit captures excepted).
    pub terminal: Option<[bool; 3]>,
    /// A trace asked for now.
    pub tracer: Option<Tracer>,
    /// A timeout asked for now: the shorter of it and the config's holds.
    pub timeout: Option<Duration>,
    /// A report is asked for (init's resource usage: the run waits for
    /// the teardown).
    pub report: bool,
}

/// What a front-end hears of the run.
pub enum Event<'a> {
    /// The run failed before its guest ended: one line.
    Failed(&'a str),
    /// The guest has ended with this code (its lines printed, `--rw`
    /// mounts flushed); the sandbox is not torn down yet.
    GuestEnded(i32),
    /// The run has ended with this code; the report is final (written to
    /// the config's report file right after).
    Finished(&'a Report, i32),
}
