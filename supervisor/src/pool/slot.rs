//! One sandbox of the pool (`supervisor pool-sandbox`, started by the
//! daemon with the pool's flags and a socketpair as its stdin): a `run`
//! embedded ([`Embedding`]) whose command comes late
//! ([`sandbox::config::StartMode::Late`]).
//!
//! Once the trap serves ([`Embedding::ready`]) it tells the
//! daemon it is ready and waits for a client's connection: the one the
//! daemon passes it, or the one it accepts itself from the listening
//! socket the daemon lends it (the daemon is then off the request's
//! path); it reads the
//! request, takes the client's stdin, stdout and stderr as its own (so
//! every line `run` prints reaches the client, and the output limit's
//! relays write there), starts a watcher thread for the client's
//! signals and its end, and lets the guest exec the command. When the run
//! has ended it gives the client's stdio back (its own 0, 1, 2 are then
//! /dev/null and the daemon's stderr again) and sends the answer (exit
//! code, error line, report). Then it exits, and its sandbox is gone: one
//! command per sandbox.
//!
//! Owns the sandbox side of the protocol; not the daemon's bookkeeping
//! (`daemon/sandboxes.rs`) or the run itself (`run/`).

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::{dup2, dup3, Pid};

use super::protocol::{self, Answer, FromClient, Handout, Request};
use super::socket::allowed;
use crate::cli::PoolArgs;
use sandbox::embedding::{Embedding, Event, LateCommand, Start};
use sandbox::launch::host_stdio;
use sandbox::launch::{Sandbox, FORWARDED};
use sandbox::report::Report;
use sandbox::run;
use sandbox::sys::fd::accept;
use sandbox::trap::trace::Tracer;

/// The sandbox's state: before a client, and with one.
struct Slot {
    daemon: OwnedFd,
    /// What our 0, 1, 2 become again once the run has ended: /dev/null
    /// (`take_stdin`'s) and the daemon's stderr (its log).
    own_stdio: OwnOutput,
    /// `--warm`: looked up in the view before the sandbox is ready.
    warm: Vec<PathBuf>,
    client: RefCell<Option<Client>>,
    /// The error line of a run that failed, for the answer.
    message: RefCell<Option<String>>,
    /// The client has (or is being sent) its answer: as the guest ended,
    /// before the teardown ([`Event::GuestEnded`]), or at the end. The
    /// watcher then lets the client go without killing anything.
    answered: Arc<AtomicBool>,
}

struct Client {
    conn: OwnedFd,
    request: Request,
    /// `--trace=FILE`'s file, opened by the client.
    trace_file: Option<OwnedFd>,
}

/// `supervisor pool-sandbox`: serves one command; returns the exit code
/// (the command's, as `run` would exit; the daemon only logs it).
pub fn main(args: PoolArgs) -> i32 {
    let daemon = match take_stdin() {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("supervisor: pool sandbox: {e}");
            return 125;
        }
    };
    let config = match args.run.pooled_config() {
        // `--restore-nice`: the set-up ran at nice 19; the sandbox's
        // tasks get this nice value back before it is ready.
        Ok(mut config) => {
            config.schedule.nice_after_set_up = args.restore_nice;
            config
        }
        Err(e) => {
            eprintln!("supervisor: pool sandbox: {e}");
            return 125;
        }
    };
    let own_stdio = match OwnOutput::keep() {
        Ok(own) => own,
        Err(e) => {
            eprintln!("supervisor: pool sandbox: {e}");
            return 125;
        }
    };
    let slot = Slot {
        daemon,
        own_stdio,
        warm: args.warm,
        client: RefCell::new(None),
        message: RefCell::new(None),
        answered: Arc::new(AtomicBool::new(false)),
    };
    run::run(config, &slot)
}

/// Our stdin is the daemon's socket: keep it (close-on-exec), and put
/// /dev/null in its place, which init and the guest inherit.
fn take_stdin() -> Result<OwnedFd, String> {
    let daemon = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("stdin: {e}"))?;
    let null = File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    dup2(null.as_raw_fd(), 0).map_err(|e| format!("dup2: {}", e.desc()))?;
    Ok(daemon)
}

/// Our own stdout and stderr, kept while the client's take their place.
struct OwnOutput {
    null: OwnedFd,
    stderr: OwnedFd,
}

impl OwnOutput {
    /// Copies of /dev/null and of our stderr (the daemon's), close-on-exec.
    fn keep() -> Result<OwnOutput, String> {
        let null = File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("stderr: {e}"))?;
        Ok(OwnOutput {
            null: null.into(),
            stderr,
        })
    }

    /// Puts /dev/null on 0 and 1 and our stderr on 2 in place of the
    /// client's: a caller that reads the client's stdout or stderr to
    /// its end (a shell's `$(...)`, Python's `capture_output`) then sees
    /// it when the client exits, not when this process does after the
    /// sandbox's teardown. Nothing of the run writes there any more: its
    /// lines are printed and the guest has ended. A terminal's relay is
    /// left alone (it may still drain the pty, and a terminal has no end
    /// for a caller to wait for).
    fn restore(&self) {
        for (fd, target) in [(&self.null, 0), (&self.null, 1), (&self.stderr, 2)] {
            // dup3: the supervisor's own filter passes it, not dup2.
            let _ = dup3(fd.as_raw_fd(), target, OFlag::empty());
        }
    }
}

impl Slot {
    /// Gives the client's stdio back before its answer (not for a
    /// terminal's: [`OwnOutput::restore`]).
    fn release_client_stdio(&self, client: &Client) {
        if !client.request.terminal.is_some_and(|t| t.contains(&true)) {
            self.own_stdio.restore();
        }
    }

    /// Waits for a client and reads its request; takes its stdio (a
    /// memory device as the node of the view under `root`:
    /// `host_stdio::view_node_for`).
    fn take_client(&self, root: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Client, String> {
        nix::sys::socket::send(
            self.daemon.as_raw_fd(),
            protocol::READY,
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
        )
        // The daemon is gone, or tore us down before we were ready.
        .map_err(|_| CLOSED)?;
        let conn = match protocol::recv_handout(self.daemon.as_fd()).ok_or(CLOSED)? {
            Handout::Connection(conn) => conn,
            Handout::Listener(listener) => self.accept_one(listener)?,
        };
        let (request, stdio) = match protocol::recv_from_client_into(conn.as_fd(), buf) {
            Some(FromClient::Request(r, fds)) => (r, fds),
            _ => return Err(CLOSED.into()),
        };
        let mut stdio = stdio.into_iter();
        for target in 0..3 {
            let fd = stdio
                .next()
                .ok_or("the pool's client sent no stdin, stdout and stderr")?;
            let fd = host_stdio::view_node_for(root, fd)?;
            // dup3: the supervisor's own filter, already installed, passes
            // it and not dup2 (`Schedule::confine_before_wait`).
            if fd.as_raw_fd() != target {
                dup3(fd.as_raw_fd(), target, OFlag::empty())
                    .map_err(|e| format!("dup3: {}", e.desc()))?;
            }
        }
        Ok(Client {
            conn,
            request,
            trace_file: stdio.next(),
        })
    }
}

impl Slot {
    /// Accepts our one client from the pool's listening socket (a peer
    /// the pool does not serve is closed unanswered, as the daemon does),
    /// then closes the listening socket and says `t`: never a second
    /// client. The daemon lends it to one ready sandbox at a time and
    /// polls it only after that sandbox's `t`, so no one else accepts
    /// meanwhile. The daemon's end (it died, or tears us down) ends the
    /// wait.
    fn accept_one(&self, listener: OwnedFd) -> Result<OwnedFd, String> {
        let conn = loop {
            let mut fds = [
                PollFd::new(listener.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.daemon.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {}", e.desc())),
            }
            let events = |f: &PollFd<'_>| f.revents().unwrap_or(PollFlags::empty());
            if !events(&fds[1]).is_empty() {
                return Err(CLOSED.into());
            }
            let listening = events(&fds[0]);
            if listening.is_empty() {
                continue;
            }
            if !listening.contains(PollFlags::POLLIN) {
                return Err("the pool's socket failed".into());
            }
            match accept(listener.as_fd()) {
                Ok(conn) if allowed(&conn) => break conn,
                // Someone else's: closed unanswered (the client says so).
                Ok(_) | Err(Errno::ECONNABORTED | Errno::EINTR) => {}
                Err(e) => return Err(format!("accept: {}", e.desc())),
            }
        };
        drop(listener);
        // A daemon gone meanwhile changes nothing for this client.
        let _ = nix::sys::socket::send(
            self.daemon.as_raw_fd(),
            protocol::TAKEN,
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
        );
        Ok(conn)
    }
}

/// Not an error to print: the daemon tore the idle sandbox down, or the
/// client left before asking.
const CLOSED: &str = "closed";

impl Embedding for Slot {
    /// Waits for a client; its command is the guest's.
    fn ready(&self, sandbox: &Sandbox) -> Result<Start, String> {
        // The watcher starts while we wait: a thread's start is off the
        // request's path.
        let watcher = watch(sandbox.init_pid, self.answered.clone());
        super::warm::warm(sandbox.root.as_fd(), &self.warm);
        // The request's buffer, made (its pages touched) while idle, and
        // then the watcher's: neither mapped nor unmapped (a flush of
        // every CPU this process ran on) while the client waits.
        let mut buf = vec![1u8; protocol::MAX_MESSAGE];
        let mut client = self.take_client(sandbox.root.as_fd(), &mut buf)?;
        let conn = client
            .conn
            .try_clone()
            .map_err(|e| format!("the client's connection: {e}"))?;
        // A watcher that could not start: the client's end then only
        // goes unnoticed until the guest ends.
        let _ = watcher.send((conn, buf));
        let request = &client.request;
        let tracer = match (request.trace, client.trace_file.take()) {
            (false, _) => None,
            (true, Some(fd)) => Some(Tracer::to_file(File::from(fd))),
            // Our stderr is the client's.
            (true, None) => Tracer::open(Path::new("-")).ok(),
        };
        let late = LateCommand {
            command: request.command(),
            env: request.env(),
            // The run relays the pty to 0, 1, 2 (the client's, dup2'd in
            // place by `take_client`) where the client said they are its
            // terminal.
            terminal: request.terminal,
            tracer,
            timeout: request.timeout(),
            report: request.report,
        };
        *self.client.borrow_mut() = Some(client);
        Ok(Start::Late(late))
    }

    fn event(&self, event: Event<'_>) {
        match event {
            Event::Failed(message) => {
                if message != CLOSED {
                    *self.message.borrow_mut() = Some(message.to_string());
                }
            }
            Event::GuestEnded(code) => self.answer_early(code),
            Event::Finished(report, code) => self.answer(report, code),
        }
    }
}

impl Slot {
    /// Answers a client that asked for no report as soon as its guest
    /// has ended, so that the teardown happens after the answer.
    fn answer_early(&self, code: i32) {
        let client = self.client.borrow();
        let Some(client) = client.as_ref().filter(|c| !c.request.report) else {
            return;
        };
        let answer = Answer {
            code,
            message: None,
            report: None,
        };
        self.answered.store(true, Ordering::SeqCst);
        self.release_client_stdio(client);
        let _ = protocol::send_answer(client.conn.as_fd(), &answer);
    }

    /// Answers the client at the run's end (unless answered already).
    fn answer(&self, report: &Report, code: i32) {
        if self.answered.swap(true, Ordering::SeqCst) {
            return;
        }
        let client = self.client.borrow();
        let Some(client) = client.as_ref() else {
            if let Some(m) = self.message.borrow().as_ref() {
                // No client to tell: the daemon's log.
                let _ = writeln!(std::io::stderr(), "supervisor: pool: {m}");
            }
            return;
        };
        let answer = Answer {
            code,
            message: self.message.borrow_mut().take(),
            report: client
                .request
                .report
                .then(|| serde_json::to_value(report).ok())
                .flatten(),
        };
        self.release_client_stdio(client);
        let _ = protocol::send_answer(client.conn.as_fd(), &answer);
    }
}

/// The watcher: once given the client's connection (and the buffer the
/// request came in, for its messages), the client's signals
/// go to init (which passes the forwarded ones to the guest's main
/// process); the client's end (it died, or was killed) kills the sandbox.
/// A sandbox torn down before it had a client drops the sender, and the
/// watcher ends.
fn watch(init: Pid, answered: Arc<AtomicBool>) -> mpsc::Sender<(OwnedFd, Vec<u8>)> {
    let (give, take) = mpsc::channel::<(OwnedFd, Vec<u8>)>();
    let _ = thread::Builder::new()
        .name("pool-client".into())
        .spawn(move || {
            let Ok((conn, mut buf)) = take.recv() else {
                return;
            };
            watch_client(&conn, init, &answered, &mut buf);
        });
    give
}

fn watch_client(conn: &OwnedFd, init: Pid, answered: &AtomicBool, buf: &mut [u8]) {
    loop {
        match protocol::recv_from_client_into(conn.as_fd(), buf) {
            Some(FromClient::Signal(signo)) => match FORWARDED.iter().find(|s| **s as i32 == signo)
            {
                // Ours to handle: with the client's terminal relayed, a
                // new window size goes to the guest's pty (`run`'s signal
                // thread does that), not to init.
                Some(Signal::SIGWINCH) => {
                    let _ = kill(Pid::this(), Signal::SIGWINCH);
                }
                Some(sig) => {
                    let _ = kill(init, *sig);
                }
                None => {}
            },
            Some(FromClient::Request(..)) => {}
            None => {
                // Answered: the client went because it was done (and init
                // may be reaped already: its pid is not ours to signal).
                if !answered.load(Ordering::SeqCst) {
                    let _ = kill(init, Signal::SIGKILL);
                }
                return;
            }
        }
    }
}
