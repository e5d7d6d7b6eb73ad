//! One command in a running session, the daemon's side of the engine's
//! exec protocol (`sandbox/src/launch/exec_request.rs`): a connection to
//! the session's exec socket, pipes for the command's stdin, stdout and
//! stderr sent over it, the request, then the answers (`P` started, `E`
//! its exec failed, `X` its wait status). The command's output is handed
//! to a sink as it is read (streaming) and kept, up to a cap, for the
//! result.
//!
//! Processes the command leaves running stay: at its end the output
//! already written is drained, and if something it started still holds
//! the pipes, a thread reads and discards what it writes from then on,
//! so it neither blocks on a full pipe nor dies of a broken one. At the
//! timeout the command (only it) is killed.
//!
//! Owns the protocol's requester side and the output's handling; not the
//! session's lifecycle (`registry.rs`).

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::{pipe2, read, Pid};
use serde::Serialize;

use sandbox::sys::fd::{recv_with_fd, send_with_fd};

/// What to run.
pub struct Command {
    pub args: Vec<String>,
    /// The complete environment, `K=V`.
    pub env: Vec<String>,
    pub cwd: String,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Bytes of each stream kept for the result.
    pub cap: usize,
}

/// Which stream a chunk of output is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Why the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// It exited (`exit_code`).
    Exited,
    /// A signal ended it (`signal`).
    Signaled,
    /// It ran past its timeout and was killed.
    Timeout,
    /// It could not be executed (`exit_code` 127: not found, 126: not executable).
    ExecFailed,
    /// The session's memory limit killed its sandbox, this command with it (`message`).
    Memory,
    /// The session's process limit killed its sandbox (a fork failed), this command with it.
    Pids,
    /// The session's sandbox ended otherwise while the command ran (`message`).
    SandboxExited,
}

/// One stream's kept output.
#[derive(Debug, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    /// More was written than was kept.
    pub truncated: bool,
}

impl Captured {
    fn keep(&mut self, data: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
        self.truncated |= data.len() > room;
    }
}

/// How the command ended and what it wrote.
#[derive(Debug)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub reason: Reason,
    /// One line for `ExecFailed`.
    pub message: Option<String>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub wall: Duration,
}

/// Runs `cmd` over the exec socket at `socket` of the session whose init
/// has host pid `init`; `sink` gets each chunk of output as it is read.
/// An error: the session could not run it (it ended, or the socket is gone).
pub fn run(
    socket: &Path,
    init: i32,
    cmd: &Command,
    sink: &mut dyn FnMut(Stream, &[u8]),
) -> Result<Outcome, Lost> {
    run_inner(socket, init, cmd, sink, true)
}

/// The session could not run the command, or its end never came (the
/// sandbox went away meanwhile): why, and what the command wrote before.
#[derive(Debug, Default)]
pub struct Lost {
    pub error: String,
    pub stdout: Captured,
    pub stderr: Captured,
}

impl From<String> for Lost {
    fn from(error: String) -> Lost {
        Lost {
            error,
            ..Lost::default()
        }
    }
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error)
    }
}

/// How long an ended command's answer may take after its timeout's kill.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// Kills the session's process `pid` (a pid inside): by its host pid,
/// found in /proc, or, where the daemon may not read the sandbox's /proc
/// entries (an unprivileged daemon: init is not dumpable), by a `kill`
/// run in the session itself.
fn kill_in_session(socket: &Path, init: i32, pid: i32, inside: bool) {
    if let Some(host) = super::procs::host_pid(init, pid) {
        let _ = kill(Pid::from_raw(host), Signal::SIGKILL);
        return;
    }
    if inside {
        let killer = Command {
            args: vec!["kill".into(), "-KILL".into(), pid.to_string()],
            env: vec!["PATH=/usr/local/bin:/usr/bin:/bin".into()],
            cwd: "/".into(),
            stdin: Vec::new(),
            timeout: Duration::from_secs(5),
            cap: 4096,
        };
        let _ = run_inner(socket, init, &killer, &mut |_, _| {}, false);
    }
}

fn run_inner(
    socket: &Path,
    init: i32,
    cmd: &Command,
    sink: &mut dyn FnMut(Stream, &[u8]),
    may_kill_inside: bool,
) -> Result<Outcome, Lost> {
    let started = Instant::now();
    let conn = crate::oci::exec_socket::connect_to(socket)?;
    let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {}", e.desc()));
    let (stdin_r, stdin_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let sent = |e: Errno| format!("sending the exec request: {}", e.desc());
    for (tag, fd) in
        [b"0", b"1", b"2"]
            .into_iter()
            .zip([stdin_r.as_fd(), out_w.as_fd(), err_w.as_fd()])
    {
        send_with_fd(conn.as_fd(), tag, Some(fd)).map_err(sent)?;
    }
    let request = serde_json::json!({"args": cmd.args, "env": cmd.env, "cwd": cmd.cwd});
    let mut msg = vec![b'R'];
    msg.extend_from_slice(request.to_string().as_bytes());
    send_with_fd(conn.as_fd(), &msg, None).map_err(sent)?;
    drop((stdin_r, out_w, err_w));
    feed_stdin(stdin_w, &cmd.stdin);

    let mut waiting = Waiting {
        conn,
        pipes: [Some(out_r), Some(err_r)],
        kept: [Captured::default(), Captured::default()],
        pid: None,
        cap: cmd.cap,
    };
    let deadline = started + cmd.timeout;
    let mut timed_out = false;
    let end = loop {
        let now = Instant::now();
        if !timed_out && now >= deadline {
            timed_out = true;
            if let Some(pid) = waiting.pid {
                kill_in_session(socket, init, pid, may_kill_inside);
            }
        }
        if timed_out && now >= deadline + KILL_GRACE {
            // Not killed (not found): answer anyway; the command may run on.
            break Answer::Done(Signal::SIGKILL as i32);
        }
        let wait = match timed_out {
            true => Duration::from_millis(200),
            false => deadline - now,
        };
        match waiting.step(wait, sink) {
            Ok(Some(end)) => break end,
            Ok(None) => {}
            Err(e) => break Answer::Lost(e),
        }
    };
    let Waiting {
        pipes, mut kept, ..
    } = waiting;
    for (i, pipe) in pipes.into_iter().enumerate() {
        if let Some(pipe) = pipe {
            drain_then_discard(pipe, &mut kept[i], cmd.cap, i, sink);
        }
    }
    let [stdout, stderr] = kept;
    let mut outcome = match end {
        Answer::Lost(error) => {
            return Err(Lost {
                error,
                stdout,
                stderr,
            })
        }
        Answer::Failed(e) => Outcome {
            exit_code: Some(if e == Errno::ENOENT { 127 } else { 126 }),
            signal: None,
            reason: Reason::ExecFailed,
            message: Some(format!(
                "{}: {}",
                cmd.args.first().map(String::as_str).unwrap_or(""),
                e.desc()
            )),
            stdout,
            stderr,
            wall: Duration::ZERO,
        },
        Answer::Done(status) => {
            let sig = status & 0x7f;
            Outcome {
                exit_code: (sig == 0).then_some((status >> 8) & 0xff),
                signal: (sig != 0).then_some(sig),
                reason: if sig == 0 {
                    Reason::Exited
                } else {
                    Reason::Signaled
                },
                message: None,
                stdout,
                stderr,
                wall: Duration::ZERO,
            }
        }
        Answer::Started(_) => unreachable_answer(),
    };
    if timed_out && outcome.reason == Reason::Signaled {
        outcome.reason = Reason::Timeout;
    }
    outcome.wall = started.elapsed();
    Ok(outcome)
}

/// `Started` never ends the wait (`Waiting::step` keeps it).
fn unreachable_answer() -> Outcome {
    Outcome {
        exit_code: None,
        signal: None,
        reason: Reason::ExecFailed,
        message: Some("no answer from the session".into()),
        stdout: Captured::default(),
        stderr: Captured::default(),
        wall: Duration::ZERO,
    }
}

/// Writes `data` to the command's stdin from a thread (the command may
/// read it slowly, or never); nothing to write closes it at once.
fn feed_stdin(pipe: OwnedFd, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let data = data.to_vec();
    let spawned = std::thread::Builder::new()
        .name("exec-stdin".into())
        .spawn(move || {
            // A command that exits without reading it all: EPIPE, fine.
            let _ = std::fs::File::from(pipe).write_all(&data);
        });
    if let Err(e) = spawned {
        eprintln!("supervisor: sessions: feeding stdin: {e}");
    }
}

enum Answer {
    Started(i32),
    Failed(Errno),
    /// The raw wait status.
    Done(i32),
    /// No end came: the connection broke (the sandbox went away).
    Lost(String),
}

struct Waiting {
    conn: OwnedFd,
    pipes: [Option<OwnedFd>; 2],
    kept: [Captured; 2],
    /// The command's pid in the session, once started.
    pid: Option<i32>,
    cap: usize,
}

impl Waiting {
    /// Waits up to `wait` for something to read; the end, once it came.
    fn step(
        &mut self,
        wait: Duration,
        sink: &mut dyn FnMut(Stream, &[u8]),
    ) -> Result<Option<Answer>, String> {
        let ms = wait.as_millis().clamp(1, u16::MAX as u128) as u16;
        let (conn_ready, ready) = {
            let mut fds = vec![PollFd::new(self.conn.as_fd(), PollFlags::POLLIN)];
            let live: Vec<usize> = (0..2).filter(|i| self.pipes[*i].is_some()).collect();
            for i in &live {
                if let Some(p) = &self.pipes[*i] {
                    fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
                }
            }
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {}", e.desc())),
            }
            let is_ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            let conn_ready = is_ready(&fds[0]);
            let ready: Vec<usize> = live
                .iter()
                .zip(&fds[1..])
                .filter(|(_, fd)| is_ready(fd))
                .map(|(i, _)| *i)
                .collect();
            (conn_ready, ready)
        };
        for i in ready {
            self.read_pipe(i, sink);
        }
        if !conn_ready {
            return Ok(None);
        }
        match recv_answer(self.conn.as_fd())? {
            Answer::Started(pid) => {
                self.pid = Some(pid);
                Ok(None)
            }
            end => Ok(Some(end)),
        }
    }

    fn read_pipe(&mut self, i: usize, sink: &mut dyn FnMut(Stream, &[u8])) {
        let Some(pipe) = &self.pipes[i] else { return };
        let mut buf = [0u8; 65536];
        match read(pipe.as_raw_fd(), &mut buf) {
            Ok(0) => self.pipes[i] = None,
            Ok(n) => {
                sink(stream(i), &buf[..n]);
                self.kept[i].keep(&buf[..n], self.cap);
            }
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(_) => self.pipes[i] = None,
        }
    }
}

fn stream(i: usize) -> Stream {
    match i {
        0 => Stream::Stdout,
        _ => Stream::Stderr,
    }
}

fn recv_answer(conn: BorrowedFd<'_>) -> Result<Answer, String> {
    let mut buf = [0u8; 16];
    let (n, _) = recv_with_fd(conn, &mut buf)
        .map_err(|e| format!("waiting for the command: {}", e.desc()))?;
    let value = i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
    match (buf[0], n) {
        (b'P', 5) => Ok(Answer::Started(value)),
        (b'E', 5) => Ok(Answer::Failed(Errno::from_raw(value))),
        (b'X', 5) => Ok(Answer::Done(value)),
        _ => Err("the session ended (no answer from its exec helper)".into()),
    }
}

/// Reads what the ended command left in `pipe`; if a process it left
/// running still holds the pipe, a thread discards the rest until that
/// process closes it.
fn drain_then_discard(
    pipe: OwnedFd,
    kept: &mut Captured,
    cap: usize,
    i: usize,
    sink: &mut dyn FnMut(Stream, &[u8]),
) {
    let flags = fcntl(pipe.as_raw_fd(), FcntlArg::F_GETFL).unwrap_or(0);
    let nonblocking = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    let _ = fcntl(pipe.as_raw_fd(), FcntlArg::F_SETFL(nonblocking));
    let mut buf = [0u8; 65536];
    loop {
        match read(pipe.as_raw_fd(), &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                sink(stream(i), &buf[..n]);
                kept.keep(&buf[..n], cap);
            }
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => break,
            Err(_) => return,
        }
    }
    let _ = fcntl(
        pipe.as_raw_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags)),
    );
    let _ = std::thread::Builder::new()
        .name("exec-discard".into())
        .spawn(move || {
            let mut buf = [0u8; 65536];
            while matches!(read(pipe.as_raw_fd(), &mut buf), Ok(n) if n > 0) {}
        });
}
