//! The janitor: a small process, forked before the sandbox, that makes
//! the sandbox's cgroup directories and removes them if the supervisor
//! dies without doing it (SIGKILL, a crash). The kernel takes the
//! sandbox's processes with the supervisor (init's PDEATHSIG), but
//! nothing removes a cgroup directory. It makes them itself, and tells
//! the supervisor which it made, so that no kill of the supervisor can
//! fall between a directory's creation and the janitor knowing of it
//! (a pool stops a sandbox still setting up with a kill).
//!
//! Owns: forking it (while the supervisor is single-threaded, before the
//! cgroup exists), the creation of the directories and its answer, its
//! wait on a pipe whose only writer is the supervisor, and dismissing it
//! at the end of a normal run. Does not own where the directories go
//! (`cgroup::CgroupPlan`) or the removal itself
//! (`cgroup::remove_tree_sparing`).
//!
//! It runs in a process group of its own, which the supervisor gives it
//! at the fork: a kill of the supervisor's group straight after the fork
//! (a pool's stop of a sandbox still setting up) must not take the
//! janitor before it has run, or the cgroup stays for good. Terminal
//! signals aimed at the supervisor's group do not reach it either, and
//! it has no descriptor but its pipe: holding our stdout would keep a
//! reader of it waiting.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::SigSet;
use nix::sys::wait::waitpid;
use nix::unistd::{pipe2, read, setpgid, setsid, Pid};

use super::cgroup::{make_dirs, remove_tree_sparing};
use crate::sys::fd::close_all_except;
use crate::sys::process::{exit_now, fork_single_threaded, Forked};

/// How long the janitor waits in all for the sandbox's processes to leave
/// its cgroups. Nobody waits on the janitor, and a directory it gives up
/// on stays for good, so it waits longer than a supervisor's own removal
/// (`cgroup::REMOVAL_BOUND`): the exits of a pool's killed sandboxes have
/// taken longer than that under a full test suite on two CPUs.
const JANITOR_BOUND: Duration = Duration::from_secs(60);

/// The running janitor.
#[derive(Debug)]
pub struct Janitor {
    pid: Pid,
    /// Its pipe: closing it (or our death) tells the janitor to act.
    pipe: Option<OwnedFd>,
}

/// Forks the janitor, which makes `dirs` (a plan's, in order); the
/// janitor and the directories it made. Call while single-threaded.
pub fn spawn(dirs: Vec<PathBuf>) -> Result<(Janitor, Vec<PathBuf>), String> {
    let (rx, tx) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("janitor pipe: {}", e.desc()))?;
    let (answer_rx, answer_tx) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("janitor pipe: {}", e.desc()))?;
    let supervisor = std::process::id() as i32;
    match fork_single_threaded().map_err(|e| format!("starting the janitor: {}", e.desc()))? {
        Forked::Child => {
            drop(tx);
            drop(answer_rx);
            let made = make_dirs(&dirs);
            let answer: Vec<u8> = dirs.iter().map(|d| u8::from(made.contains(d))).collect();
            let _ = write_all(&answer_tx, &answer);
            drop(answer_tx);
            watch(rx, &made, supervisor)
        }
        Forked::Parent(pid) => {
            // Its own group before anything else can signal ours: the child
            // may not run for a while (a pool's sandboxes set up at nice 19).
            // It fails only if the child got there first (`setsid`).
            let _ = setpgid(pid, pid);
            drop(answer_tx);
            let janitor = Janitor {
                pid,
                pipe: Some(tx),
            };
            let answer = read_answer(&answer_rx, dirs.len());
            if answer.len() < dirs.len() {
                // Gone before it answered (killed): nothing of it removes
                // what it made, so whatever is there and empty goes now.
                remove_tree_sparing(&dirs, Some(pid.as_raw()), Duration::ZERO);
                janitor.dismiss();
                return Err("starting the janitor: it ended before making the cgroup".into());
            }
            let made = dirs
                .into_iter()
                .zip(answer)
                .filter(|(_, m)| *m == 1)
                .map(|(d, _)| d);
            Ok((janitor, made.collect()))
        }
    }
}

/// Up to `n` bytes from `fd`, until its end.
fn read_answer(fd: &OwnedFd, n: usize) -> Vec<u8> {
    let mut got = vec![0u8; n];
    let mut len = 0;
    while len < n {
        match read(fd.as_raw_fd(), &mut got[len..]) {
            Ok(0) => break,
            Ok(k) => len += k,
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    got.truncate(len);
    got
}

/// All of `bytes` to `fd`.
fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> Result<(), Errno> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(k) => bytes = &bytes[k..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The janitor's life: wait for the pipe's end, clean up, exit. It never
/// signals the `supervisor`: handed over at the end of a run, it may
/// find a trap worker of the exiting supervisor still in the sandbox's
/// cpu group, and a SIGKILL then would be the supervisor's exit status.
fn watch(rx: OwnedFd, dirs: &[PathBuf], supervisor: i32) -> ! {
    // A session of its own too, unless the supervisor's `setpgid` came
    // first (a group leader cannot start one): its own group is what
    // matters.
    let _ = setsid();
    // Forked during the launch, with the forwarded signals blocked: the
    // janitor takes signals as any process does.
    let _ = SigSet::all().thread_unblock();
    // Our stdio too: nothing of the supervisor's may stay open here.
    let _ = nix::unistd::close(0);
    let _ = nix::unistd::close(1);
    let _ = nix::unistd::close(2);
    let _ = close_all_except(&[rx.as_raw_fd()]);
    let mut byte = [0u8; 1];
    while let Err(Errno::EINTR) = read(rx.as_raw_fd(), &mut byte) {}
    remove_tree_sparing(dirs, Some(supervisor), JANITOR_BOUND);
    exit_now(0)
}

impl Janitor {
    /// Leaves the cleanup to the janitor and does not wait for it: used
    /// when the sandbox's init may still be leaving the cgroup (the
    /// janitor retries until the directories can go).
    pub fn hand_over(mut self) {
        self.pipe = None;
    }

    /// Ends the janitor after a normal cleanup (it finds nothing left to
    /// do) and reaps it.
    pub fn dismiss(mut self) {
        self.pipe = None;
        while let Err(Errno::EINTR) = waitpid(self.pid, None) {}
    }
}
