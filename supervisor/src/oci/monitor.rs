//! The monitor: the process that runs a container's sandbox and serves
//! its trapped calls, the child of the container's anchor (`anchor.rs`,
//! whose pid the engine sees). Its exit status is the container's: the
//! guest's exit code, or 128+N; the anchor passes it on.
//!
//! The anchor forks it while still single-threaded, in the session and
//! cgroup the anchor set up. The monitor runs the bundle's
//! [`SandboxConfig`] as `supervisor run` does (`sandbox::run::run`): the
//! sandbox launched, the trap serving; then ([`Embedding::ready`]) it
//! tells `create` it is ready (or why it failed) on a pipe, and waits on
//! the state directory's `start` FIFO until `start` opens it. Only then
//! does it confine itself and let the guest exec. Its "ok" carries the
//! host pid of the sandbox's init, whose namespaces the anchor joins.
//! With `terminal: true` the guest's pty master goes to the console
//! socket (the config's `Terminal::Console`) instead of a relay.
//!
//! Owns that sequence and the embedding; not the state record (written
//! by `create`), nor the sandbox itself.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use nix::unistd::dup2;

use super::cgroup::ContainerCgroup;
use sandbox::config::{SandboxConfig, Terminal};
use sandbox::embedding::{Embedding, Event, Start};
use sandbox::launch::Sandbox;

/// What the monitor is given by `create`.
pub struct MonitorPlan {
    pub cgroup: ContainerCgroup,
    /// The state directory's `start` FIFO.
    pub start_fifo: PathBuf,
    /// The state directory's exec socket (`exec_socket.rs`).
    pub exec_socket: PathBuf,
    /// Where the monitor's own messages go once the guest holds its stdio.
    pub log: PathBuf,
    /// The container's network namespace, which the anchor enters before
    /// it forks the monitor.
    pub network: super::netns::NetNamespace,
    /// config.json's `net.*` sysctls, written there.
    pub net_sysctls: Vec<(String, String)>,
}

/// Runs the monitor (the sandbox `config` describes) in the forked child; never returns. `ready` is the
/// write end of the pipe the anchor reads and relays to `create`: "ok"
/// and init's host pid, or "E" and the error.
pub fn run(plan: MonitorPlan, config: SandboxConfig, ready: OwnedFd) -> ! {
    let embedding = Monitor {
        ready: RefCell::new(Some(File::from(ready))),
        plan,
        terminal: matches!(config.terminal, Terminal::Console(_)),
        stderr: RefCell::new(None),
    };
    // On a terminal the guest's stdio is the pty: nothing in the sandbox
    // may hold the engine's pipes (runc's caller waits for their end).
    if embedding.terminal {
        if let Err(e) = embedding.detach_stdio() {
            embedding.error(&e);
            std::process::exit(125);
        }
    }
    let code = sandbox::run::run(config, &embedding);
    std::process::exit(code)
}

struct Monitor {
    plan: MonitorPlan,
    /// `process.terminal`: the guest's stdio is its pty.
    terminal: bool,
    /// Until the guest may start: the pipe to `create`.
    ready: RefCell<Option<File>>,
    /// The container's stderr, kept for messages once fd 2 is the log.
    stderr: RefCell<Option<File>>,
}

impl Monitor {
    /// Tells `create` the container is ready ("ok" and the host pid of
    /// the sandbox's init), and moves our own stdio off the container's:
    /// only the guest holds those now.
    fn announce_ready(&self, init_pid: i32) -> Result<(), String> {
        let Some(mut pipe) = self.ready.borrow_mut().take() else {
            return Ok(());
        };
        self.detach_stdio()?;
        pipe.write_all(format!("ok{init_pid}").as_bytes())
            .map_err(|e| format!("telling the anchor: {e}"))
    }

    /// Points our stdin and stdout at /dev/null and stderr at the
    /// monitor's log, keeping the container's stderr for messages.
    fn detach_stdio(&self) -> Result<(), String> {
        if self.stderr.borrow().is_some() {
            return Ok(());
        }
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.plan.log)
            .map_err(|e| format!("{}: {e}", self.plan.log.display()))?;
        let null = File::options()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(|e| format!("/dev/null: {e}"))?;
        // Kept only when it is the guest's too (without a terminal).
        let stderr = match self.terminal {
            true => null.try_clone(),
            false => std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map(File::from),
        };
        *self.stderr.borrow_mut() = Some(stderr.map_err(|e| format!("keeping stderr: {e}"))?);
        for (from, to) in [
            (null.as_raw_fd(), 0),
            (null.as_raw_fd(), 1),
            (log.as_raw_fd(), 2),
        ] {
            dup2(from, to).map_err(|e| format!("redirecting the monitor's stdio: {}", e.desc()))?;
        }
        Ok(())
    }

    /// Blocks until `start` opens the FIFO, and tells it we go on.
    fn wait_for_start(&self) -> Result<(), String> {
        let mut fifo = OpenOptions::new()
            .write(true)
            .open(&self.plan.start_fifo)
            .map_err(|e| format!("{}: {e}", self.plan.start_fifo.display()))?;
        fifo.write_all(b"1")
            .map_err(|e| format!("answering start: {e}"))
    }
}

impl Monitor {
    /// A run that failed before its guest ended: to `create` while it
    /// waits, else to the log and the container's stderr.
    fn error(&self, message: &str) {
        if let Some(mut pipe) = self.ready.borrow_mut().take() {
            let _ = pipe.write_all(format!("E{message}").as_bytes());
            return;
        }
        eprintln!("supervisor: {message}");
        if let Some(mut stderr) = self.stderr.borrow().as_ref() {
            let _ = writeln!(stderr, "supervisor: {message}");
        }
    }
}

impl Embedding for Monitor {
    /// Serves `exec`, tells `create` the container is ready, and waits
    /// for `start`.
    fn ready(&self, sandbox: &Sandbox) -> Result<Start, String> {
        let requests = sandbox
            .exec_requests()
            .map_err(|e| format!("exec requests: {e}"))?;
        super::exec_socket::serve(&self.plan.exec_socket, requests)?;
        self.announce_ready(sandbox.init_pid.as_raw())?;
        self.wait_for_start()?;
        Ok(Start::Configured)
    }

    fn event(&self, event: Event<'_>) {
        if let Event::Failed(message) = event {
            self.error(message);
        }
    }
}
