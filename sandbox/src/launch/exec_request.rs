//! New processes in a running sandbox (the OCI runtime's `exec`): the
//! supervisor hands init a connection (a `SOCK_SEQPACKET` socket whose
//! other end is the requester) over the control channel and signals it
//! ([`EXEC_SIGNAL`]); init forks a *helper* for it, a copy of init under
//! the same filter, so what it starts is served by the same listener.
//!
//! The helper reads from the connection the requester's stdin, stdout
//! and stderr (one message each, SCM_RIGHTS, tagged `0`, `1`, `2`) and
//! the request (`R` + JSON `{"args": [...], "env": ["K=V"...], "cwd":
//! "/", "tty": false, "user": {"uid": 1000, "gid": 1000, "groups": []}}`;
//! `user` optional), forks the process, which takes the user (`users.rs`)
//! and those descriptors and executes the command (PATH search as for the main
//! command), and
//! answers `P` + the process's pid (inside the sandbox) once it has
//! executed, or `E` + the errno its exec failed with; then, when it ends,
//! `X` + its raw wait status. With `"tty": true` the stdin sent is a
//! terminal's slave (of the sandbox's devpts; the requester opened it):
//! the process starts a session with it as its controlling terminal and
//! takes it as stdin, stdout and stderr. In a view that offers fast
//! reads (`fast_reads.rs`), the process looks at the program its command
//! names first, in its own view with its own ids and working directory:
//! a musl program gets `LD_PRELOAD` naming the library, a static one
//! starts through the static loader, as the main command would.
//! Everything it calls passes the filter (recvmsg, a plain send, clone,
//! setsid, ioctl, dup2, chdir, execve, wait4, read, write; the look's
//! `O_PATH` open, fstat, marked read open and pread): the helper is a
//! copy of a non-dumpable init, whose memory the supervisor may not read
//! to serve a call.
//!
//! Owns the helper's side and [`ExecRequests`], the supervisor's handle;
//! not the requester (`supervisor/src/oci/exec.rs`).

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{chdir, dup2, pipe2, Pid};
use serde::Deserialize;

use super::channel::{Channel, Msg};
use super::exec::{read_exec_error, ExecPlan};
use super::fast_reads::{self, Offered};
use super::musl::Lookup;
use super::users::{become_user, GuestUser};
use crate::sys::fd::{recv_with_fd, send_plain};
use crate::sys::process::{exit_now, fork_single_threaded, reset_signals, Forked};

/// The signal that tells init an exec request is on the channel (not one
/// that init forwards; signals from inside the sandbox never reach init).
pub const EXEC_SIGNAL: Signal = Signal::SIGPWR;

/// Longest request accepted.
const MAX_REQUEST: usize = 256 * 1024;

/// The supervisor's handle for sending exec requests to init.
pub struct ExecRequests {
    channel: Channel,
    init: Pid,
}

impl ExecRequests {
    pub(super) fn new(channel: Channel, init: Pid) -> ExecRequests {
        ExecRequests { channel, init }
    }

    /// Hands `conn` (a connected SOCK_SEQPACKET socket) to init.
    pub fn send(&self, conn: OwnedFd) -> nix::Result<()> {
        self.channel.send(&Msg::Exec(conn))?;
        kill(self.init, EXEC_SIGNAL)
    }
}

/// What the requester asks for.
#[derive(Deserialize)]
struct Request {
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    /// Stdin is a terminal's slave: the process's controlling terminal and stdio.
    #[serde(default)]
    tty: bool,
    /// The process's user (`None`: init's own).
    #[serde(default)]
    user: Option<GuestUser>,
}

/// In init: one helper per pending request on the channel (non-blocking);
/// `offers`: what the view offers their commands for fast reads.
pub(super) fn serve_pending(channel: &Channel, offers: Offered) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    loop {
        let mut fds = [PollFd::new(channel.fd(), PollFlags::POLLIN)];
        if !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0) {
            return;
        }
        match channel.recv() {
            Ok(Some(Msg::Exec(conn))) => {
                if let Ok(Forked::Child) = fork_single_threaded() {
                    helper(conn, offers)
                }
            }
            _ => return,
        }
    }
}

/// The helper: reads the request, starts the process, reports on it.
fn helper(conn: OwnedFd, offers: Offered) -> ! {
    let mut stdio: [Option<OwnedFd>; 3] = [None, None, None];
    let mut buf = vec![0u8; MAX_REQUEST];
    let request = loop {
        match recv_with_fd(conn.as_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => exit_now(1),
            Ok((n, fd)) => match (buf[0], fd) {
                (t @ b'0'..=b'2', Some(fd)) => stdio[(t - b'0') as usize] = Some(fd),
                (b'R', _) => match serde_json::from_slice::<Request>(&buf[1..n]) {
                    Ok(r) => break r,
                    Err(_) => answer_errno(&conn, Errno::EINVAL),
                },
                _ => exit_now(1),
            },
        }
    };
    let env = env_pairs(&request.env);
    let command: Vec<OsString> = request.args.iter().map(OsString::from).collect();
    let Ok(mut plan) = ExecPlan::new(&command, &env) else {
        answer_errno(&conn, Errno::EINVAL)
    };
    let slave = match request.tty {
        true => stdio[0].take(),
        false => None,
    };
    let Ok((report_rx, report_tx)) = pipe2(OFlag::O_CLOEXEC) else {
        answer_errno(&conn, Errno::EMFILE)
    };
    let child = match fork_single_threaded() {
        Ok(Forked::Child) => {
            drop(report_rx);
            // Before any call of ours is serviced (the trap reads a
            // process's ids once).
            if let Err(e) = become_user(request.user.as_ref()) {
                let _ = nix::unistd::write(&report_tx, &(e as i32).to_le_bytes());
                exit_now(126);
            }
            reset_signals();
            match slave {
                Some(slave) => super::exec::take_terminal(slave.as_fd(), [true; 3]),
                None => {
                    for (i, fd) in stdio.iter().enumerate() {
                        if let Some(fd) = fd {
                            let _ = dup2(fd.as_raw_fd(), i as i32);
                        }
                    }
                }
            }
            if let Some(cwd) = &request.cwd {
                if let Err(e) = chdir(cwd.as_str()) {
                    let _ = nix::unistd::write(&report_tx, &(e as i32).to_le_bytes());
                    exit_now(126);
                }
            }
            // Relative names from the working directory just taken.
            fast_reads::look(
                Lookup::OwnView,
                plan.candidate_paths(),
                Some(std::path::Path::new(".")),
                offers,
            )
            .apply(&mut plan, offers.rewrite);
            let err = super::exec::exec_first(&plan);
            let _ = nix::unistd::write(&report_tx, &(err as i32).to_le_bytes());
            exit_now(super::exec::exit_code_for(err))
        }
        Ok(Forked::Parent(pid)) => pid,
        Err(e) => answer_errno(&conn, e),
    };
    drop(report_tx);
    drop(stdio);
    if let Some(e) = read_exec_error(&report_rx) {
        let _ = waitpid(child, None);
        answer_errno(&conn, e)
    }
    let mut started = vec![b'P'];
    started.extend_from_slice(&child.as_raw().to_le_bytes());
    let _ = send_plain(conn.as_fd(), &started);
    let status = loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => break (code & 0xff) << 8,
            Ok(WaitStatus::Signaled(_, sig, _)) => break sig as i32,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => break Signal::SIGKILL as i32,
        }
    };
    let mut done = vec![b'X'];
    done.extend_from_slice(&status.to_le_bytes());
    let _ = send_plain(conn.as_fd(), &done);
    exit_now(0)
}

fn answer_errno(conn: &OwnedFd, e: Errno) -> ! {
    let mut msg = vec![b'E'];
    msg.extend_from_slice(&(e as i32).to_le_bytes());
    let _ = send_plain(conn.as_fd(), &msg);
    exit_now(1)
}

/// `K=V` strings (an OCI process's `env`, an exec request's) as pairs:
/// an entry without `=` is a name with an empty value, an empty one is
/// dropped.
pub fn env_pairs(env: &[String]) -> Vec<(OsString, OsString)> {
    env.iter()
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('=') {
            Some((k, v)) => (k.into(), v.into()),
            None => (e.into(), OsString::new()),
        })
        .collect()
}
