//! `supervisor run --pool SOCKET -- COMMAND`: the client. Sends the
//! command, the environment `run` would build, its own stdin, stdout
//! and stderr, and which of them are its terminal (the guest then gets
//! the sandbox's pty, relayed there) to a ready sandbox of the pool; passes the signals `run`
//! forwards on; exits as `run` would have (the answer's code, its one
//! line, the report written where `--report` says).
//!
//! Owns the client's side; refuses the flags that shape a sandbox (the
//! pool's own flags did that), but passes `--timeout` on (the sandbox
//! applies the shorter of it and the pool's). If the client dies, its connection ends
//! and the sandbox kills its guest (`slot.rs`).

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::SigSet;
use nix::sys::signalfd::{SfdFlags, SignalFd};

use super::protocol::{self, Answer, Request};
use super::socket::connect;
use crate::cli::RunArgs;
use sandbox::config::host_env;
use sandbox::launch::host_stdio::shielded_unless_view_device;
use sandbox::launch::{DEFAULT_DISK_SIZE, DEFAULT_HOSTNAME, FORWARDED};
use sandbox::tty;

/// Runs `args.command` in the pool at `args.pool`; the exit code.
pub fn main(args: RunArgs, pool: &Path) -> i32 {
    match ask(&args, pool) {
        Ok(answer) => conclude(&args, answer),
        Err(message) => {
            eprintln!("supervisor: {message}");
            125
        }
    }
}

fn ask(args: &RunArgs, pool: &Path) -> Result<Answer, String> {
    if let Some(flag) = shaping_flag(args) {
        return Err(format!(
            "{flag} cannot go with --pool: the pool's own flags shape its sandboxes"
        ));
    }
    if args.command.is_empty() {
        return Err("no command given (see 'supervisor run --help')".into());
    }
    let env = host_env(&args.env).map_err(|e| e.message)?;
    let mut request = Request::new(
        &args.command,
        &env,
        args.report.is_some(),
        args.trace.is_some(),
        args.timeout,
    );
    // The sandbox relays its pty to our terminal in raw mode, as `run`
    // does; the modes come back when we have the answer, whatever it did.
    request.terminal = tty::host_terminal();
    let _modes = request.terminal.map(|_| tty::SavedModes::of_stdin());
    // As `run` opens it: created or truncated, before the command runs.
    let trace_file = match &args.trace {
        Some(p) if p != Path::new("-") => {
            Some(File::create(p).map_err(|e| format!("--trace={}: {e}", p.display()))?)
        }
        _ => None,
    };
    let mut signals = SigSet::empty();
    FORWARDED.iter().for_each(|s| signals.add(*s));
    signals
        .thread_block()
        .map_err(|e| format!("signals: {}", e.desc()))?;
    let sigfd = SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signals: {}", e.desc()))?;
    let conn = connect(pool).map_err(|e| {
        format!(
            "--pool {}: no pool answers there ({})",
            pool.display(),
            e.desc()
        )
    })?;
    let stdio = Stdio::ours()?;
    let mut fds = stdio.fds().to_vec();
    fds.extend(trace_file.as_ref().map(|f| f.as_fd()));
    protocol::send_request(conn.as_fd(), &request, &fds)?;
    drop(stdio);
    wait_for_answer(&conn, &sigfd)
}

/// Passes signals on until the answer comes.
fn wait_for_answer(conn: &OwnedFd, sigfd: &SignalFd) -> Result<Answer, String> {
    loop {
        let mut fds = [
            PollFd::new(conn.as_fd(), PollFlags::POLLIN),
            PollFd::new(sigfd.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(format!("poll: {}", e.desc())),
        }
        let has = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
        let (answered, signalled) = (has(&fds[0]), has(&fds[1]));
        if signalled {
            while let Ok(Some(info)) = sigfd.read_signal() {
                let _ = protocol::send_signal(conn.as_fd(), info.ssi_signo as i32);
            }
        }
        if answered {
            return protocol::recv_answer(conn.as_fd());
        }
    }
}

fn conclude(args: &RunArgs, answer: Answer) -> i32 {
    if let Some(message) = &answer.message {
        eprintln!("supervisor: {message}");
    }
    match (&args.report, &answer.report) {
        (Some(path), Some(report)) => {
            sandbox::report::write_then_exit_code(report, path, answer.code)
        }
        _ => answer.code,
    }
}

/// The first flag given that shapes a sandbox (`None`: only --env,
/// --report, --trace, --timeout and the command).
fn shaping_flag(a: &RunArgs) -> Option<&'static str> {
    let given = [
        (!a.ro.is_empty(), "--ro"),
        (!a.rw.is_empty(), "--rw"),
        (!a.tmpfs.is_empty(), "--tmpfs"),
        (a.rootfs.is_some(), "--rootfs"),
        (!a.mask.is_empty(), "--mask"),
        (!a.remount_ro.is_empty(), "--remount-ro"),
        (a.workdir.is_some(), "--workdir"),
        (a.hostname != DEFAULT_HOSTNAME, "--hostname"),
        (!a.allow_net.is_empty(), "--allow-net"),
        (!a.publish.is_empty(), "--publish"),
        (a.writable_system, "--writable-system"),
        (a.no_rewrite, "--no-rewrite"),
        (a.disk != DEFAULT_DISK_SIZE, "--disk"),
        (a.memory.is_some(), "--memory"),
        (a.cpus.is_some(), "--cpus"),
        (a.pids.is_some(), "--pids"),
        (a.cpu_time.is_some(), "--cpu-time"),
        (a.output_limit.is_some(), "--output-limit"),
        (a.nofile.is_some(), "--nofile"),
        (a.workers.is_some(), "--workers"),
        (a.userns_range.is_some(), "--userns-range"),
        (!a.cap_drop.is_empty(), "--cap-drop"),
        (!a.cap_add.is_empty(), "--cap-add"),
        (a.user.is_some(), "--user"),
    ];
    given.iter().find(|(set, _)| *set).map(|(_, flag)| *flag)
}

/// Our stdin, stdout and stderr as the guest gets them: /dev/null in
/// place of one that is closed, a host device reopened through a
/// read-only mount (`launch::host_stdio`), except a memory device, for
/// which the pool's sandbox takes its view's own node.
struct Stdio {
    nulls: [Option<File>; 3],
    ours: (std::io::Stdin, std::io::Stdout, std::io::Stderr),
    shields: [Option<OwnedFd>; 3],
}

impl Stdio {
    fn ours() -> Result<Stdio, String> {
        let mut nulls = [None, None, None];
        for (fd, null) in nulls.iter_mut().enumerate() {
            if fcntl(fd as i32, FcntlArg::F_GETFD).is_err() {
                let f = File::options()
                    .read(fd == 0)
                    .write(fd != 0)
                    .open("/dev/null");
                *null = Some(f.map_err(|e| format!("/dev/null: {e}"))?);
            }
        }
        let ours = (std::io::stdin(), std::io::stdout(), std::io::stderr());
        let mut stdio = Stdio {
            nulls,
            ours,
            shields: [None, None, None],
        };
        stdio.shields = stdio.fds().map(shielded_unless_view_device);
        Ok(stdio)
    }

    fn fds(&self) -> [BorrowedFd<'_>; 3] {
        let own = [
            self.ours.0.as_fd(),
            self.ours.1.as_fd(),
            self.ours.2.as_fd(),
        ];
        let mut fds = own;
        for (fd, null) in self.nulls.iter().enumerate() {
            if let Some(null) = null {
                fds[fd] = null.as_fd();
            }
        }
        for (fd, shield) in self.shields.iter().enumerate() {
            if let Some(shield) = shield {
                fds[fd] = shield.as_fd();
            }
        }
        fds
    }
}
