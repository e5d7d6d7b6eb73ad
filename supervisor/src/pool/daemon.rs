//! `supervisor pool`: the daemon that keeps `--size` sandboxes set up and
//! waiting, and gets each client's connection to one of them (the one
//! it lends the listening socket to accepts it itself).
//!
//! Owns the daemon's start (the flags that are a client's refused, the
//! signals it stops on, the lifeline taken from stdin, whether set-ups
//! may yield the CPUs) and its end (SIGTERM, SIGINT: idle sandboxes
//! killed, socket removed, exit 0; the end of an owner's lifeline,
//! `--lifeline`: every sandbox killed). The sandboxes and the clients
//! waiting for them are `daemon/sandboxes.rs`; binding the socket and
//! the peer check, `socket.rs`. It never reads a client's request: the
//! sandbox does.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::dup2;

use super::socket::bind;
use crate::cli::PoolArgs;
use sandbox::sys::priority;
use sandboxes::Pool;

mod sandboxes;

/// Runs the daemon; returns its exit code. `flags`: the command line
/// after `pool`, for the sandboxes.
pub fn main(args: PoolArgs, flags: Vec<OsString>) -> i32 {
    match serve(args, flags) {
        Ok(()) => 0,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("supervisor: pool: {message}");
            }
            125
        }
    }
}

fn serve(args: PoolArgs, flags: Vec<OsString>) -> Result<(), String> {
    refuse_client_flags(&args)?;
    if args.restore_nice.is_some() {
        return Err("--restore-nice is the pool's own, for its sandboxes".into());
    }
    let mut signals = SigSet::empty();
    [Signal::SIGTERM, Signal::SIGINT, Signal::SIGCHLD]
        .iter()
        .for_each(|s| signals.add(*s));
    signals
        .thread_block()
        .map_err(|e| format!("signals: {}", e.desc()))?;
    let sigfd = SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signals: {}", e.desc()))?;
    let lifeline = if args.lifeline {
        Some(take_stdin()?)
    } else {
        None
    };
    let listener = bind(&args.socket)?;
    let mut pool = Pool {
        size: args.size,
        // The lifeline is the pool's own: a sandbox's stdin is its socket.
        flags: flags.into_iter().filter(|f| f != "--lifeline").collect(),
        slots: Vec::new(),
        busy: Vec::new(),
        lifeline,
        waiting: VecDeque::new(),
        proven: false,
        failures: 0,
        retry_at: None,
        nice: yielding_nice(),
    };
    let result = pool.run(&listener, &sigfd);
    // Whoever stops us, no new client is accepted from here on.
    let _ = std::fs::remove_file(&args.socket);
    drop(listener);
    pool.shut_down(matches!(result, Ok(Stop::OwnerGone)));
    result.map(drop)
}

/// Why the daemon stops.
enum Stop {
    /// SIGTERM or SIGINT: the sandboxes serving a client finish on their
    /// own.
    Asked,
    /// The owner's lifeline ended: nothing of the pool may outlive it.
    OwnerGone,
}

/// `--lifeline`: our stdin is the owner's pipe; keep it (close-on-exec,
/// so no sandbox holds it) and put /dev/null in its place.
fn take_stdin() -> Result<OwnedFd, String> {
    let lifeline = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("--lifeline: stdin: {e}"))?;
    let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0).map_err(|e| format!("dup2: {}", e.desc()))?;
    Ok(lifeline)
}

/// The flags that belong to a client (`run --pool`), not to the pool.
fn refuse_client_flags(args: &PoolArgs) -> Result<(), String> {
    let run = &args.run;
    let wrong = [
        (!run.command.is_empty(), "COMMAND"),
        (run.pool.is_some(), "--pool"),
        (run.report.is_some(), "--report"),
        (!run.env.is_empty(), "--env"),
    ];
    if let Some((_, what)) = wrong.iter().find(|(given, _)| *given) {
        return Err(format!(
            "{what} is the client's to give (supervisor run --pool SOCKET [--env ...] [--report FILE] -- COMMAND)"
        ));
    }
    // Each sandbox would bind the host port: the second could not.
    if !run.publish.is_empty() {
        return Err(
            "--publish cannot be pooled: every sandbox would need the same host port".into(),
        );
    }
    Ok(())
}

/// The nice value sandboxes restore once set up, if their set-ups can run
/// at the lowest priority: not when we run at it already, nor when the
/// restore would be refused (no CAP_SYS_NICE, RLIMIT_NICE too low: an
/// unprivileged pool sets up at its own priority, as before).
fn yielding_nice() -> Option<i32> {
    let nice = priority::own_nice().ok()?;
    (nice < priority::LOWEST && priority::may_raise_to(nice)).then_some(nice)
}
