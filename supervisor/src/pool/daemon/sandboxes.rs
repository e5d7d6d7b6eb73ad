//! The daemon's sandboxes and the clients waiting for one: the
//! sandboxes' processes (each a `supervisor pool-sandbox` child with the
//! pool's flags, `slot.rs`), the listening socket lent to one ready
//! sandbox at a time (it accepts its client itself; the daemon accepts
//! only while none holds it), the queue of clients waiting for a ready
//! sandbox, replacing every sandbox taken or lost (one set-up at a time;
//! at once when none is left ready, else when the command it replaces has
//! ended; each set-up at nice 19 where its priority can be restored, and
//! at the daemon's own while a client waits for it; a pause that grows
//! while set-ups keep failing), and killing them at the end. A sandbox is
//! never given a second client.
//!
//! Does not own the daemon's start and signals (`daemon.rs`), the socket
//! and the peer check (`socket.rs`), or what a sandbox does with its
//! client (`slot.rs`).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};
use nix::unistd::Pid;

use super::Stop;
use crate::pool::protocol::{self, Answer};
use crate::pool::socket::allowed;
use sandbox::sys::fd::{accept, send_with_fd};
use sandbox::sys::priority;

/// A sandbox's process and the daemon's end of its socketpair.
pub(super) struct Slot {
    child: Child,
    sock: OwnedFd,
    ready: bool,
    /// It holds the listening socket (`L`) and accepts the next client
    /// itself: at most one sandbox at a time, and the daemon does not
    /// accept meanwhile.
    armed: bool,
    /// Its set-up runs at the daemon's own priority (a client waits).
    boosted: bool,
}

/// The daemon's state: its sandboxes, the clients waiting, the pause
/// after failed set-ups.
pub(super) struct Pool {
    pub(super) size: usize,
    /// The pool's own flags, passed on to every sandbox.
    pub(super) flags: Vec<OsString>,
    pub(super) slots: Vec<Slot>,
    /// Sandboxes handed a client: reaped when they end.
    pub(super) busy: Vec<Child>,
    /// `--lifeline`: the read end of the owner's pipe (its end of file:
    /// the owner is gone).
    pub(super) lifeline: Option<OwnedFd>,
    pub(super) waiting: VecDeque<OwnedFd>,
    /// Some sandbox has been ready: later failures are not fatal.
    pub(super) proven: bool,
    /// Set-ups failed in a row since a sandbox was last ready, and when
    /// the next may start (`Pool::backoff`).
    pub(super) failures: u32,
    pub(super) retry_at: Option<Instant>,
    /// The daemon's nice value, when it can restore it on a sandbox set
    /// up at [`priority::LOWEST`]: set-ups then yield the CPUs to the
    /// commands running (PERFORMANCE.md, 2026-12-01, branch `yield`).
    pub(super) nice: Option<i32>,
}

/// The pause after the first failed set-up, doubled for each further
/// failure in a row, up to [`MAX_PAUSE`]: a cause that lasts (a `--ro`
/// source removed after the pool started) costs a line now and then in
/// the pool's log, not a set-up loop.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

impl Pool {
    pub(super) fn run(&mut self, listener: &OwnedFd, sigfd: &SignalFd) -> Result<Stop, String> {
        loop {
            // One sandbox first: a flag that fails the launch (a missing
            // --ro source) then fails once, and the pool with it.
            let wanted = if self.proven { self.size } else { 1 };
            // One set-up at a time: a burst of clients then shares the
            // CPUs with one new sandbox, not with as many as it took
            // (PERFORMANCE.md, 2026-11-30 17:30).
            if self.slots.len() < wanted
                && self.slots.iter().all(|s| s.ready)
                && self.refill_now()
                && self.pause_over()
            {
                self.spawn()?;
            }
            // While a sandbox accepts, the clients are its (and those
            // after it wait in the backlog until the next is armed).
            let listening = !self.slots.iter().any(|s| s.armed);
            let mut fds = vec![
                PollFd::new(
                    listener.as_fd(),
                    match listening {
                        true => PollFlags::POLLIN,
                        false => PollFlags::empty(),
                    },
                ),
                PollFd::new(sigfd.as_fd(), PollFlags::POLLIN),
            ];
            fds.extend(
                self.slots
                    .iter()
                    .map(|s| PollFd::new(s.sock.as_fd(), PollFlags::POLLIN)),
            );
            // Last, so the slots' indices stay `i + 2`. The owner writes
            // nothing: any event on it is its end (or an error).
            fds.extend(
                self.lifeline
                    .as_ref()
                    .map(|l| PollFd::new(l.as_fd(), PollFlags::POLLIN)),
            );
            match poll(&mut fds, self.poll_timeout()) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {}", e.desc())),
            }
            let ready = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
            let (accept_now, signalled) = (listening && ready(&fds[0]), ready(&fds[1]));
            let slot_events: Vec<usize> = (0..self.slots.len())
                .filter(|&i| ready(&fds[i + 2]))
                .collect();
            let owner_gone = self.lifeline.is_some() && fds.last().is_some_and(ready);
            drop(fds);
            if owner_gone {
                return Ok(Stop::OwnerGone);
            }
            if signalled && self.stop_asked(sigfd) {
                return Ok(Stop::Asked);
            }
            if accept_now {
                self.accept(listener);
            }
            for i in slot_events.into_iter().rev() {
                self.slot_event(i)?;
            }
            self.hand_out(listener);
            self.boost();
            self.reap_ended();
        }
    }

    /// Whether to set a sandbox up now: while none is ready (a client
    /// would wait), else once the sandboxes handed out have ended, so that
    /// a set-up does not share the CPUs with the command it replaces
    /// (PERFORMANCE.md, 2026-11-30 17:48: `python3 -c pass` 15.2 ms
    /// against 18.4 ms median).
    fn refill_now(&mut self) -> bool {
        self.reap_ended();
        !self.slots.iter().any(|s| s.ready) || self.slots.len() + self.busy.len() < self.size
    }

    /// Reaps the sandboxes handed out that have ended (their clients
    /// answered), and forgets them.
    fn reap_ended(&mut self) {
        self.busy
            .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
    }

    /// Reads the signals; whether one asks us to stop.
    fn stop_asked(&self, sigfd: &SignalFd) -> bool {
        let mut stop = false;
        while let Ok(Some(info)) = sigfd.read_signal() {
            stop |= info.ssi_signo != Signal::SIGCHLD as u32;
        }
        stop
    }

    /// Starts one sandbox (it reports `r` once ready).
    fn spawn(&mut self) -> Result<(), String> {
        let (ours, theirs) = socket::socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| format!("socketpair: {}", e.desc()))?;
        let mut command = Command::new("/proc/self/exe");
        command
            .arg("pool-sandbox")
            .args(&self.flags)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            // Not in our process group: a terminal's Ctrl-C is ours alone;
            // and its own, which `boost` and its restore address.
            .process_group(0);
        // A client waiting already: at our priority from the start.
        let lowered = self.nice.filter(|_| self.waiting.is_empty());
        if let Some(nice) = lowered {
            command.arg(format!("--restore-nice={nice}"));
            priority::start_at_nice(&mut command, priority::LOWEST);
        }
        let child = command
            .spawn()
            .map_err(|e| format!("starting a sandbox: {e}"))?;
        self.slots.push(Slot {
            child,
            sock: ours,
            ready: false,
            armed: false,
            boosted: lowered.is_none(),
        });
        Ok(())
    }

    /// While clients wait, the set-ups they wait for run at our own
    /// priority, not behind the commands running. A failure leaves the
    /// set-up slower, not wrong: the sandbox restores its priority itself.
    fn boost(&mut self) {
        let Some(nice) = self.nice.filter(|_| !self.waiting.is_empty()) else {
            return;
        };
        for slot in self.slots.iter_mut().filter(|s| !s.ready && !s.boosted) {
            slot.boosted = true;
            let _ = priority::set_group_nice(slot.child.id() as i32, nice);
        }
    }

    fn accept(&mut self, listener: &OwnedFd) {
        let Ok(conn) = accept(listener.as_fd()) else {
            return;
        };
        // Someone else's: closed unanswered (the client says so).
        if allowed(&conn) {
            self.waiting.push_back(conn);
        }
    }

    /// A sandbox said it is ready, or that it took a client, or ended.
    fn slot_event(&mut self, i: usize) -> Result<(), String> {
        let mut buf = [0u8; 8];
        let got = socket::recv(
            std::os::fd::AsRawFd::as_raw_fd(&self.slots[i].sock),
            &mut buf,
            socket::MsgFlags::MSG_DONTWAIT,
        );
        match got {
            Ok(1) if buf[0] == protocol::READY[0] => {
                self.slots[i].ready = true;
                self.proven = true;
                self.failures = 0;
                Ok(())
            }
            Ok(1) if buf[0] == protocol::TAKEN[0] => {
                self.taken(i);
                Ok(())
            }
            Err(nix::errno::Errno::EAGAIN) => Ok(()),
            _ => self.lost(i),
        }
    }

    /// A sandbox ended before it was given a client (its own line on
    /// stderr says why): fatal before any was ready; else replaced, after
    /// a pause that grows while set-ups keep failing, and one waiting
    /// client told.
    fn lost(&mut self, i: usize) -> Result<(), String> {
        let mut slot = self.slots.swap_remove(i);
        let status = slot.child.wait();
        if !self.proven {
            // 125: it said why, in one line of its own.
            return Err(match status.ok().and_then(|s| s.code()) {
                Some(125) => String::new(),
                _ => "could not set up a sandbox".into(),
            });
        }
        if let Some(conn) = self.waiting.pop_front() {
            let answer = Answer {
                code: 125,
                message: Some("the pool could not set up a sandbox (see the pool's log)".into()),
                report: None,
            };
            let _ = protocol::send_answer(conn.as_fd(), &answer);
        }
        self.failures += 1;
        self.retry_at = Some(Instant::now() + backoff(self.failures));
        Ok(())
    }

    /// Whether no failed set-up's pause holds the next one back.
    fn pause_over(&mut self) -> bool {
        match self.retry_at {
            Some(at) if Instant::now() < at => false,
            _ => {
                self.retry_at = None;
                true
            }
        }
    }

    /// Until the pause ends (then the loop sets the next sandbox up), or
    /// until something happens.
    fn poll_timeout(&self) -> PollTimeout {
        let Some(at) = self.retry_at else {
            return PollTimeout::NONE;
        };
        let left = at.saturating_duration_since(Instant::now()).as_millis();
        PollTimeout::try_from(left.saturating_add(1)).unwrap_or(PollTimeout::MAX)
    }

    /// The sandbox at `i` accepted a client (and closed the listening
    /// socket): it is the client's now.
    fn taken(&mut self, i: usize) {
        let slot = self.slots.swap_remove(i);
        self.busy.push(slot.child);
    }

    /// Gives waiting clients to ready sandboxes, each to its own; with
    /// none waiting, lends the listening socket to one ready sandbox,
    /// which then accepts the next client itself: the daemon is not on
    /// that client's path (PERFORMANCE.md, 2026-12-06, branch
    /// `pooldispatch`).
    fn hand_out(&mut self, listener: &OwnedFd) {
        while !self.waiting.is_empty() {
            let Some(i) = self.slots.iter().position(|s| s.ready && !s.armed) else {
                return;
            };
            let slot = self.slots.swap_remove(i);
            let Some(conn) = self.waiting.pop_front() else {
                return;
            };
            match send_with_fd(slot.sock.as_fd(), protocol::CONNECTION, Some(conn.as_fd())) {
                Ok(()) => self.busy.push(slot.child),
                Err(_) => {
                    // It died meanwhile: the client waits for the next.
                    self.waiting.push_front(conn);
                    let mut child = slot.child;
                    let _ = child.wait();
                }
            }
        }
        self.arm(listener);
    }

    /// Lends the listening socket to a ready sandbox, unless one holds it.
    fn arm(&mut self, listener: &OwnedFd) {
        while !self.slots.iter().any(|s| s.armed) {
            let Some(i) = self.slots.iter().position(|s| s.ready) else {
                return;
            };
            match send_with_fd(
                self.slots[i].sock.as_fd(),
                protocol::LISTEN,
                Some(listener.as_fd()),
            ) {
                Ok(()) => self.slots[i].armed = true,
                Err(_) => {
                    // It died meanwhile: the next ready one.
                    let mut child = self.slots.swap_remove(i).child;
                    let _ = child.wait();
                }
            }
        }
    }

    /// Kills the idle sandboxes (and, when the owner is gone, those
    /// serving a client too) and reaps them. Killed, not told: a sandbox
    /// still setting up would only notice a closed socket once set up,
    /// which at nice 19 behind the commands running can take many
    /// seconds, and its teardown then as long again.
    pub(super) fn shut_down(&mut self, owner_gone: bool) {
        self.waiting.clear();
        self.collect_taken();
        let mut ending: Vec<Child> = std::mem::take(&mut self.slots)
            .into_iter()
            .map(|s| s.child)
            .collect();
        if owner_gone {
            ending.append(&mut self.busy);
        }
        for child in &ending {
            self.kill(child);
        }
        for mut child in ending {
            let _ = child.wait();
        }
    }

    /// Counts the sandbox that took a client from the listening socket as
    /// serving it even if its `t` came after our last poll: it finishes on
    /// its own like the others serving a client.
    fn collect_taken(&mut self) {
        let mut buf = [0u8; 8];
        for i in (0..self.slots.len()).rev() {
            let sock = std::os::fd::AsRawFd::as_raw_fd(&self.slots[i].sock);
            let got = socket::recv(sock, &mut buf, socket::MsgFlags::MSG_DONTWAIT);
            if self.slots[i].armed && matches!(got, Ok(1)) && buf[0] == protocol::TAKEN[0] {
                self.taken(i);
            }
        }
    }

    /// SIGKILLs a sandbox's process group: the sandbox process and its
    /// init (whose end ends the guest's pid namespace: the kernel kills
    /// the rest); its socket factory dies with the sandbox (PDEATHSIG),
    /// and its janitor, in a session of its own, removes its cgroup. The
    /// group is raised to our priority first: a set-up at nice 19 would
    /// otherwise exit, its mount namespace torn down, behind every
    /// command running.
    fn kill(&self, child: &Child) {
        let Ok(group) = i32::try_from(child.id()) else {
            return;
        };
        if let Some(nice) = self.nice {
            let _ = priority::set_group_nice(group, nice);
        }
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}

/// The pause after the `failures`-th set-up in a row that failed.
fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_PAUSE.saturating_mul(1 << doublings).min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), FIRST_PAUSE);
        assert_eq!(backoff(2), FIRST_PAUSE * 2);
        assert_eq!(backoff(4), FIRST_PAUSE * 8);
        assert_eq!(backoff(7), MAX_PAUSE);
        assert_eq!(backoff(u32::MAX), MAX_PAUSE);
    }
}
