//! The handle of a launched sandbox: the supervisor's half of setup,
//! starting the guest, waiting for its status, signals, and reaping init.
//!
//! Owns: [`Sandbox`]'s methods (the struct and the launch itself are in
//! the module root). Does not own: what init does on its side (`init.rs`).

use std::fs::OpenOptions;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::write;

use super::channel::Msg;
use super::{
    exec, netns, open_namespace, userns, ExecRequests, InitHooks, LateStart, LaunchError,
    Namespaces, Outcome, Sandbox,
};
use crate::sys::holder::Leaving;

/// Init's user namespace: its own, whose id maps the supervisor writes,
/// or, in a joined pid namespace, the other sandbox's, which init joins
/// (`joined.rs`) and which has its maps.
#[derive(Clone, Copy)]
pub(super) enum UserNs<'a> {
    Own(&'a vfs::IdMap),
    Joined(BorrowedFd<'a>),
}

/// How often, and how far apart, [`Sandbox::main_pid`] looks for init's
/// child: init forks it as soon as it is told to go, some hundreds of
/// microseconds at most.
const MAIN_LOOKS: u32 = 40;
const MAIN_PAUSE: std::time::Duration = std::time::Duration::from_micros(250);

impl Sandbox {
    /// The supervisor's side of setup: the network namespace's maker, id
    /// maps, go, the network namespace, listener, root. Returns the
    /// maker, for the caller to reap last.
    pub(super) fn finish_launch(
        &mut self,
        user: UserNs<'_>,
        hooks: &dyn InitHooks,
    ) -> Result<Leaving, LaunchError> {
        let pid = self.init_pid;
        self.userns = match user {
            UserNs::Own(_) => open_namespace(pid, "user"),
            // Init may not have joined it yet: not its /proc/<pid>/ns/user.
            UserNs::Joined(user) => user.try_clone_to_owned().map_err(|e| e.to_string()),
        }
        .map_err(LaunchError::setup)?;
        let making = netns::start(self.userns.as_fd()).map_err(LaunchError::setup)?;
        if let UserNs::Own(ids) = user {
            userns::write_maps(pid, ids).map_err(|m| {
                LaunchError::setup(format!("cannot set up the user namespace: {m}"))
            })?;
        }
        self.channel
            .send(&Msg::Go)
            .map_err(|e| LaunchError::setup(format!("starting init: {}", e.desc())))?;
        if hooks.joins_late() {
            let files = hooks.cgroup_join(pid).map_err(LaunchError::setup)?;
            if let Err(e) = self.channel.send(&Msg::Join(files)) {
                return Err(self.init_failure_or(format!("starting init: {}", e.desc())));
            }
        }
        let (net, maker) = making.finish().map_err(LaunchError::setup)?;
        self.netns = net;
        if let Err(e) = netns::send(&self.channel, self.netns.as_fd()) {
            return Err(self.init_failure_or(format!("starting init: {}", e.desc())));
        }
        let ns = Namespaces {
            user: self.userns.as_fd(),
            net: self.netns.as_fd(),
        };
        if let Err(step) = hooks.setting_up(pid, ns) {
            return Err(self.init_failure_or(step));
        }
        match self.channel.recv() {
            Ok(Some(Msg::Built)) => {}
            other => return Err(init_gone(other)),
        }
        // Init goes on meanwhile: if it fails (a workdir not in the view),
        // and is gone before its root is opened, its reason is the one.
        let root = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(format!("/proc/{pid}/root"));
        self.root = match root {
            Ok(root) => OwnedFd::from(root),
            Err(e) => return Err(self.init_failure_or(format!("opening the sandbox's root: {e}"))),
        };
        if let Err(step) = hooks.view_built(self.root.as_fd(), self.fenced) {
            return Err(self.init_failure_or(step));
        }
        let held = match self.channel.recv() {
            Ok(Some(Msg::Ready(held))) => held,
            other => return Err(init_gone(other)),
        };
        (self.listener, self.pty_master) = held.copy_from(pid).map_err(|e| {
            LaunchError::setup(format!("taking the sandbox's listener: {}", e.desc()))
        })?;
        hooks.set_up(pid).map_err(LaunchError::setup)?;
        // Init may now hide itself from the guest (see init.rs).
        self.channel
            .send(&Msg::Go)
            .map_err(|e| LaunchError::setup(format!("starting init: {}", e.desc())))?;
        Ok(maker)
    }

    /// A step of ours that failed while init built the view (or dropped
    /// its privileges), which init finishes whatever happens (it has
    /// every message it waits for): when init failed first, its reason is
    /// the real one (our step then found init gone, e.g. its namespaces
    /// or its root no longer open).
    fn init_failure_or(&self, step: String) -> LaunchError {
        loop {
            match self.channel.recv() {
                // The view was built before init failed: its reason follows.
                Ok(Some(Msg::Built)) => continue,
                Ok(Some(Msg::Failed(msg))) => return LaunchError::setup(msg),
                _ => return LaunchError::setup(step),
            }
        }
    }

    /// Lets the guest's main process execute the command. Call it once
    /// the view is measured (see the module doc of `launch`, step 3).
    pub fn start(&self) -> Result<(), LaunchError> {
        self.started.store(true, Ordering::SeqCst);
        match write(&self.start, &[1]) {
            // EPIPE: the guest is already gone; wait() will say why.
            Ok(_) | Err(Errno::EPIPE) => Ok(()),
            Err(e) => Err(LaunchError::setup(format!(
                "starting the guest: {}",
                e.desc()
            ))),
        }
    }

    /// [`Sandbox::start`] for a launch with [`super::LaunchConfig::late_exec`]:
    /// the guest's main process executes `late.command` with `late.env`
    /// and `late.stdio`. A bad command (empty, a NUL byte) is an error
    /// here, and the guest is left unstarted.
    pub fn start_late(&mut self, late: &LateStart<'_>) -> Result<(), LaunchError> {
        let plan = exec::ExecPlan::new(late.command, late.env)?;
        self.command = plan.name;
        self.command_has_slash = plan.has_slash;
        let readying = super::fast_reads::late_readying(
            self.root.as_fd(),
            late.command,
            late.env,
            self.offers,
        );
        let musl_env = readying.env(late.env);
        let through = readying
            .through_loader()
            .map(|program| (program, self.offers.rewrite));
        self.started.store(true, Ordering::SeqCst);
        match &musl_env {
            Some(env) => {
                super::late::send(self.start.as_fd(), &LateStart { env, ..*late }, through)
            }
            None => super::late::send(self.start.as_fd(), late, through),
        }
    }

    /// The pid here of the guest's main process, init's one child, once
    /// init has forked it (`/proc/<init>/task/<init>/children`, read up to
    /// [`MAIN_LOOKS`] times [`MAIN_PAUSE`] apart while it is empty); `None`
    /// when init has not forked it by then or the file cannot be read.
    /// Before the start only (afterwards the guest's own children are
    /// init's too once orphaned).
    pub fn main_pid(&self) -> Option<i32> {
        let path = format!("/proc/{0}/task/{0}/children", self.init_pid);
        for _ in 0..MAIN_LOOKS {
            let text = std::fs::read_to_string(&path).ok()?;
            if let Some(pid) = text.split_whitespace().next() {
                return pid.parse().ok();
            }
            std::thread::sleep(MAIN_PAUSE);
        }
        None
    }

    /// argv[0] of the guest's command, as given (for messages).
    pub fn command_name(&self) -> &str {
        &self.command
    }

    /// Blocks until the guest's main process ends; init then exits and
    /// the kernel kills the rest. A failed exec of the command comes back
    /// as `Err` (126 or 127).
    pub fn wait(self) -> Result<Outcome, LaunchError> {
        self.wait_with_stats().map(|(outcome, _)| outcome)
    }

    /// [`Sandbox::wait`], with how many processes and threads the sandbox
    /// started when init lived to say it.
    pub fn wait_with_stats(mut self) -> Result<(Outcome, Option<u32>), LaunchError> {
        if !self.started.load(Ordering::SeqCst) {
            self.kill();
            self.reap();
            return Err(LaunchError::setup("the sandbox was never started"));
        }
        let mut tasks = None;
        let status = loop {
            match self.channel.recv() {
                Ok(Some(Msg::Status(s, t))) => {
                    tasks = t;
                    break Ok(Some(s));
                }
                Ok(Some(Msg::Failed(msg))) => break Err(msg),
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break Ok(None),
            }
        };
        // Read once the guest has ended: init closes its end just before
        // it sends the status (or dies), the main process's closed at its
        // exec or exit, so this read wakes no one at the exec and no
        // longer waits here.
        let exec_error = exec::read_exec_error(&self.exec_report);
        let init_status = match status {
            Ok(Some(_)) if self.release => {
                // Init has ended every other process and is exiting; it
                // is reaped by whoever inherits it.
                self.reaped = true;
                None
            }
            _ => self.reap(),
        };
        if let Some(e) = exec_error {
            return Err(exec::exec_error(&self.command, self.command_has_slash, e));
        }
        let outcome = match status {
            Err(msg) => return Err(LaunchError::setup(msg)),
            Ok(Some(s)) if libc::WIFEXITED(s) => Outcome::Exited(libc::WEXITSTATUS(s)),
            Ok(Some(s)) => Outcome::Signaled(libc::WTERMSIG(s)),
            // Init died without a word: it was killed, and so was the guest.
            Ok(None) => Outcome::Signaled(match init_status {
                Some(WaitStatus::Signaled(_, sig, _)) => sig as i32,
                _ => Signal::SIGKILL as i32,
            }),
        };
        Ok((outcome, tasks))
    }

    /// Makes [`Sandbox::wait_with_stats`] return as soon as init reports
    /// the main process's status, without waiting for init's own exit:
    /// init has killed and reaped every other process of the sandbox by
    /// then (`init.rs`), and what remains is the kernel's teardown of the
    /// namespaces (the mount namespace's unmounts wait for an RCU grace
    /// period). Init is then never reaped here: not for callers that need
    /// its resource usage (`RUSAGE_CHILDREN`) or its leaving a cgroup.
    pub fn release_on_status(&mut self) {
        self.release = true;
    }

    /// A handle that asks init for new processes in the sandbox (the OCI
    /// runtime's `exec`); usable from another thread.
    pub fn exec_requests(&self) -> std::io::Result<ExecRequests> {
        Ok(ExecRequests::new(self.channel.try_clone()?, self.init_pid))
    }

    /// SIGKILL to init: everything in the sandbox dies.
    pub fn kill(&self) {
        let _ = kill(self.init_pid, Signal::SIGKILL);
    }

    /// Sends `sig` to init, which passes the forwarded ones
    /// ([`super::FORWARDED`]) on to the guest's main process.
    pub fn forward_signal(&self, sig: i32) {
        if let Ok(sig) = Signal::try_from(sig) {
            let _ = kill(self.init_pid, sig);
        }
    }

    /// Waits for init to end (once).
    fn reap(&mut self) -> Option<WaitStatus> {
        if self.reaped {
            return None;
        }
        loop {
            match waitpid(self.init_pid, None) {
                Err(Errno::EINTR) => continue,
                r => {
                    self.reaped = true;
                    return r.ok();
                }
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            self.reap();
        }
    }
}

/// What init's message instead of the one awaited during its set-up says:
/// its own reason, or that it died.
fn init_gone(got: nix::Result<Option<Msg>>) -> LaunchError {
    match got {
        Ok(Some(Msg::Failed(msg))) => LaunchError::setup(msg),
        _ => LaunchError::setup("the sandbox's init died while setting up"),
    }
}
