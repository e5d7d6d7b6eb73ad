//! The process that runs one session's sandbox: `supervisor
//! session-sandbox --session-dir DIR [run's flags] -- sleep infinity`,
//! spawned by the daemon (hidden from help). It runs the sandbox as
//! `supervisor run` would with those flags, and once the trap serves
//! ([`Embedding::ready`]) it serves the session's exec socket
//! (`DIR/exec.sock`, the OCI runtime's relay: `oci/exec_socket.rs`) and
//! writes init's host pid to `DIR/ready`. The guest's main process only
//! keeps the sandbox alive; every command of the session is a new process
//! asked for over the exec socket, so it runs under the same filter, view
//! and limits.
//!
//! Its stdin is the daemon's *lifeline*, a pipe the daemon holds the
//! write end of: when it reads end of file (the daemon exited or was
//! killed) it kills the sandbox, so no session outlives its daemon.
//!
//! Owns that process; not the daemon's side (`registry.rs`).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::signal::{kill, Signal};
use nix::unistd::dup2;

use crate::cli::RunArgs;
use sandbox::config::{GuestClocks, SandboxConfig};
use sandbox::embedding::{Embedding, Event, Start};
use sandbox::launch::Sandbox;

/// `session-sandbox`'s flags.
#[derive(clap::Args, Debug)]
pub struct SessionSandboxArgs {
    /// The session's runtime directory (exec.sock and ready go there).
    #[arg(long, value_name = "DIR", required = true)]
    pub session_dir: PathBuf,
    /// Where the guest's monotonic and boot-time clocks start, in
    /// nanoseconds (a woken session's: `hibernate/clocks.rs`).
    #[arg(long, value_name = "MONO_NS,BOOT_NS", value_parser = parse_clocks)]
    pub guest_clocks: Option<GuestClocks>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The socket file in a session's directory.
pub const EXEC_SOCKET: &str = "exec.sock";
/// The file holding init's host pid once the session is ready.
pub const READY_FILE: &str = "ready";

/// Runs the session's sandbox; the exit code.
pub fn main(args: SessionSandboxArgs) -> i32 {
    let lifeline = match take_stdin() {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("supervisor: session sandbox: {e}");
            return 125;
        }
    };
    let dir = args.session_dir.clone();
    let mut config = match SandboxConfig::try_from(args.run) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("supervisor: session sandbox: {e}");
            return 125;
        }
    };
    // `ready` binds the socket and writes a file: it must come before
    // the supervisor confines itself, and the guest may exec after it.
    config.schedule.start_early = false;
    config.schedule.confine_before_wait = false;
    config.clocks = args.guest_clocks;
    let host = Host {
        dir,
        lifeline: std::cell::RefCell::new(Some(lifeline)),
    };
    sandbox::run::run(config, &host)
}

struct Host {
    dir: PathBuf,
    lifeline: std::cell::RefCell<Option<OwnedFd>>,
}

impl Embedding for Host {
    fn ready(&self, sandbox: &Sandbox) -> Result<Start, String> {
        let requests = sandbox
            .exec_requests()
            .map_err(|e| format!("exec requests: {e}"))?;
        crate::oci::exec_socket::serve(&self.dir.join(EXEC_SOCKET), requests)?;
        if let Some(lifeline) = self.lifeline.borrow_mut().take() {
            let init = sandbox.init_pid;
            std::thread::Builder::new()
                .name("lifeline".into())
                .spawn(move || {
                    let mut f = File::from(lifeline);
                    let mut buf = [0u8; 64];
                    while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
                    let _ = kill(init, Signal::SIGKILL);
                })
                .map_err(|e| format!("starting the lifeline thread: {e}"))?;
        }
        let ready = self.dir.join(READY_FILE);
        let tmp = self.dir.join("ready.tmp");
        std::fs::write(&tmp, sandbox.init_pid.as_raw().to_string())
            .and_then(|_| std::fs::rename(&tmp, &ready))
            .map_err(|e| format!("{}: {e}", ready.display()))?;
        Ok(Start::Configured)
    }

    fn event(&self, event: Event<'_>) {
        if let Event::Failed(message) = event {
            eprintln!("supervisor: session sandbox: {message}");
        }
    }
}

/// `--guest-clocks`' value: two numbers of nanoseconds.
fn parse_clocks(text: &str) -> Result<GuestClocks, String> {
    let bad = || format!("{text:?}: want MONOTONIC_NS,BOOTTIME_NS");
    let (mono, boot) = text.split_once(',').ok_or_else(bad)?;
    Ok(GuestClocks {
        monotonic_ns: mono.parse().map_err(|_| bad())?,
        boottime_ns: boot.parse().map_err(|_| bad())?,
    })
}

/// Our stdin is the lifeline: keep it (close-on-exec), and put /dev/null
/// in its place, which init and the guest inherit.
fn take_stdin() -> Result<OwnedFd, String> {
    let lifeline = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("stdin: {e}"))?;
    let null = File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    dup2(null.as_raw_fd(), 0).map_err(|e| format!("dup2: {}", e.desc()))?;
    Ok(lifeline)
}
