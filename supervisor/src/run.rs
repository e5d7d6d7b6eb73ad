//! `supervisor run`: launch the sandbox, serve its trapped calls, wait for
//! it, and turn the outcome into an exit code, a line on stderr, and the
//! report.
//!
//! Owns the order of things (launch before any thread exists; workers
//! serving before the guest may exec) and the guest's environment. Does
//! not own any of the steps themselves.

use std::ffi::OsString;
use std::thread;
use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::stat::{umask, Mode};
use nix::unistd::{getgid, getuid, sysconf, Pid, SysconfVar};
use sandbox_syscalls::policy::bpf;
use sandbox_syscalls::{Context, GuestLimits};

use crate::cli::RunArgs;
use crate::launch::{self, LaunchConfig, LaunchError, Outcome, FORWARDED};
use crate::report::{Reason, Report};
use crate::trap;
use crate::tty;

/// Host variables the guest inherits when they are set.
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

/// Runs the sandbox described by `args`; returns the exit code.
pub fn run(args: RunArgs) -> i32 {
    let started = Instant::now();
    let mut report = Report::new(Reason::SupervisorError);
    let code = match execute(&args, &mut report) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("supervisor: {}", e.message);
            report.message = Some(e.message);
            e.exit_code
        }
    };
    report.wall_time_s = started.elapsed().as_secs_f64();
    if let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) {
        report.cpu_time_s.user = secs(usage.user_time());
        report.cpu_time_s.system = secs(usage.system_time());
    }
    if let Some(path) = &args.report {
        if let Err(e) = report.write(path) {
            eprintln!("supervisor: cannot write report {}: {e}", path.display());
            return if code == 0 { 125 } else { code };
        }
    }
    code
}

fn execute(args: &RunArgs, report: &mut Report) -> Result<i32, LaunchError> {
    let config = launch_config(args)?;
    let forwarded = block_forwarded_signals()?;
    // Launch forks: it must happen before this process has any thread.
    let mut sandbox = launch::launch(&config)?;
    umask(Mode::empty()); // handlers apply the guest's own umask
    let workers = args.workers.unwrap_or(1);
    let listener = sandbox.listener.try_clone().map_err(supervisor_error)?;
    let root = sandbox.root.try_clone().map_err(supervisor_error)?;
    let mut ctx = Context::new(root, getuid().as_raw(), getgid().as_raw());
    ctx.set_limits(guest_limits(args));
    let trap = match trap::serve(listener, ctx, workers) {
        Ok(t) => t,
        Err(e) => {
            sandbox.kill();
            return Err(supervisor_error(e));
        }
    };
    // Declared after `sandbox`, so dropped (terminal restored) before it.
    let relay = match (sandbox.pty_master.take(), config.pty) {
        (Some(master), Some(stdio)) => {
            Some(tty::Relay::start(master, stdio).map_err(supervisor_error)?)
        }
        _ => None,
    };
    forward_signals(
        forwarded,
        sandbox.init_pid,
        relay.as_ref().map(|r| r.resizer()),
    );
    crate::confine::confine().map_err(supervisor_error)?;
    sandbox.start()?;
    let outcome = sandbox.wait();
    if let Some(relay) = relay {
        relay.finish();
    }
    let outcome = outcome?;
    report.syscalls.serviced = trap.counters.serviced().into_iter().collect();
    report.syscalls.denied = trap.counters.denied().into_iter().collect();
    Ok(match outcome {
        Outcome::Exited(code) => {
            report.reason = Reason::Exited;
            report.exit_code = Some(code);
            code
        }
        Outcome::Signaled(sig) => {
            let name = Signal::try_from(sig)
                .map(|s| s.as_str())
                .unwrap_or("unknown signal");
            let line = format!(
                "{} killed by signal {sig} ({name})",
                args.command[0].to_string_lossy()
            );
            eprintln!("supervisor: {line}");
            report.reason = Reason::Signaled;
            report.signal = Some(sig);
            report.message = Some(line);
            128 + sig
        }
    })
}

fn launch_config(args: &RunArgs) -> Result<LaunchConfig, LaunchError> {
    let mut mounts: Vec<_> = args
        .ro
        .iter()
        .chain(&args.rw)
        .chain(&args.tmpfs)
        .cloned()
        .collect();
    // Parents before children, whatever the flag order.
    mounts.sort_by_key(|m| m.guest.components().count());
    Ok(LaunchConfig {
        command: args.command.clone(),
        env: guest_env(&args.env)?,
        workdir: args.workdir.clone(),
        hostname: args.hostname.clone(),
        mounts,
        disk_size: args.disk,
        filter: bpf::compile(),
        pty: tty::host_terminal(),
        cpus: guest_cpus(args),
    })
}

/// What the guest is told of its limits. Only the hidden test flags
/// (`--guest-memory-view`, `--guest-cpus-view`) set them for now.
fn guest_limits(args: &RunArgs) -> GuestLimits {
    GuestLimits {
        memory_limit: args.guest_memory_view,
        memory_usage: None,
        cpus: guest_cpus(args),
    }
}

/// The CPUs the guest may use, at most the host's online ones.
fn guest_cpus(args: &RunArgs) -> Option<usize> {
    let n = usize::from(args.guest_cpus_view?);
    let host = sysconf(SysconfVar::_NPROCESSORS_ONLN).ok().flatten();
    let host = host.and_then(|h| usize::try_from(h).ok()).unwrap_or(n);
    Some(n.min(host.max(1)))
}

/// The guest's whole environment: a few host variables and `--env`.
fn guest_env(extra: &[String]) -> Result<Vec<(OsString, OsString)>, LaunchError> {
    let mut env: Vec<(OsString, OsString)> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for item in extra {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.to_string(), OsString::from(v)),
            None => match std::env::var_os(item) {
                Some(v) => (item.clone(), v),
                None => continue,
            },
        };
        if k.is_empty() || k.contains('\0') {
            return Err(LaunchError {
                exit_code: 125,
                message: format!("--env {item}: invalid variable name"),
            });
        }
        env.retain(|(old, _)| old != k.as_str());
        env.push((k.into(), v));
    }
    Ok(env)
}

fn block_forwarded_signals() -> Result<SigSet, LaunchError> {
    let mut set = SigSet::empty();
    FORWARDED.iter().for_each(|s| set.add(*s));
    set.thread_block().map_err(supervisor_error)?;
    Ok(set)
}

/// Passes signals that another process sent us on to the guest's init.
/// Signals from the terminal (Ctrl-C) already reach the guest, which
/// shares our process group, so they are not sent twice. With a terminal
/// relay (`resizer`), the guest has a terminal and session of its own:
/// every signal is passed on, except SIGWINCH, which becomes a new window
/// size of the guest's terminal (the kernel then signals its foreground group).
fn forward_signals(set: SigSet, init: Pid, resizer: Option<tty::Resizer>) {
    let Ok(sfd) = SignalFd::new(&set) else { return };
    let _ = thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            match sfd.read_signal() {
                Ok(Some(info)) => match (Signal::try_from(info.ssi_signo as i32), &resizer) {
                    (Ok(Signal::SIGWINCH), Some(r)) => r.resize(),
                    (Ok(sig), Some(_)) => {
                        let _ = kill(init, sig);
                    }
                    (Ok(sig), None) if info.ssi_code <= 0 => {
                        let _ = kill(init, sig);
                    }
                    _ => {}
                },
                Ok(_) => {}
                Err(_) => return,
            }
        });
}

fn supervisor_error(e: impl std::fmt::Display) -> LaunchError {
    LaunchError {
        exit_code: 125,
        message: e.to_string(),
    }
}

fn secs(t: nix::sys::time::TimeVal) -> f64 {
    t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6
}
