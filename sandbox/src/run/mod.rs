//! A run: launch the sandbox, serve its trapped calls, wait for it, and
//! turn the outcome into an exit code, a line on stderr, and the report.
//! The front-end's part is its [`Embedding`] and the config's
//! [`crate::config::Schedule`].
//!
//! Owns the order of things (launch before any thread exists; the view
//! measured before the guest may exec; the supervisor confined before
//! any call is served). Does not own any of the steps themselves (the
//! launch's configuration and what the guest is told of its limits:
//! `launch_config.rs`; the signal thread: `signals.rs`), nor the
//! configuration (`config.rs`).

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::stat::{umask, Mode};
use nix::unistd::{getgid, getuid};
use procfs::{GuestView, Reading, TextReading};
use sandbox_syscalls::Context;

use crate::config::{SandboxConfig, StartMode, Terminal};
use crate::embedding::{Embedding, Event, LateCommand, Start};
use crate::ending::{layer_is_full, Ending};
use crate::launch::{self, LateStart, LaunchConfig, LaunchError};
use crate::launch_hooks::RunHooks;
use crate::limits::{watchdog, Enforcement, Limits, Tripwire};
use crate::network::{self, Network};
use crate::output::{Capture, Meter};
use crate::report::{CpuTime, LimitsReport, Reason, Report};
use crate::trap;
use crate::trap::trace::Tracer;
use crate::tty;
use launch_config::{guest_view, launch_config};
use signals::{block_forwarded_signals, forward_signals};

mod launch_config;
mod signals;

/// Runs the sandbox `config` describes, with `embedding`'s part in it
/// ([`crate::embedding::Standalone`]: none); returns the exit code.
pub fn run(config: SandboxConfig, embedding: &dyn Embedding) -> i32 {
    let started = Cell::new(Instant::now());
    let mut report = Report::new(Reason::SupervisorError);
    report.limits = LimitsReport::new(&config.limits, config.fs.disk);
    let code = match execute(&config, embedding, &mut report, &started) {
        Ok(code) => code,
        Err(e) => {
            embedding.event(Event::Failed(&e.message));
            report.message = Some(e.message);
            e.exit_code
        }
    };
    report.wall_time_s = started.get().elapsed().as_secs_f64();
    if let Some((user, system)) = report.cpu_time_from_cgroup {
        report.cpu_time_s = CpuTime { user, system };
    } else if let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) {
        report.cpu_time_s.user = secs(usage.user_time());
        report.cpu_time_s.system = secs(usage.system_time());
    }
    if let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) {
        if report.peak_memory_bytes.is_none() && usage.max_rss() > 0 {
            report.peak_memory_bytes = Some(usage.max_rss() as u64 * 1024);
        }
    }
    embedding.event(Event::Finished(&report, code));
    match &config.report {
        Some(path) => crate::report::write_then_exit_code(&report, path, code),
        None => code,
    }
}

/// What limits the run: their enforcement (its cgroup made during the
/// launch, with the janitor that cleans up if we die), the tripwire a
/// fatal limit pulls, and the output meter.
struct Guards {
    enforcement: Enforcement,
    tripwire: Arc<Tripwire>,
    meter: Option<Arc<Meter>>,
    /// Init was released, not reaped: it may still be in the cgroup.
    init_released: Cell<bool>,
}

impl Guards {
    /// Plans the limits; before the launch, which makes the cgroup.
    fn prepare(limits: &Limits) -> Guards {
        let tripwire = Tripwire::new();
        let meter = limits.output.map(|l| Meter::new(l, tripwire.clone()));
        Guards {
            enforcement: Enforcement::plan(limits),
            tripwire,
            meter,
            init_released: Cell::new(false),
        }
    }

    /// Once launched: the one warning about limits not enforced the
    /// strong way.
    fn warn(&self, report: &mut Report) {
        if let Some(w) = self.enforcement.warning() {
            eprintln!("supervisor: warning: {w}");
            report.limits.warning = Some(w);
        }
    }

    /// Removes the cgroup and dismisses the janitor; or, when init was
    /// released and may not have left the cgroup yet, leaves the removal
    /// to the janitor without waiting for it.
    fn finish(self) {
        self.enforcement.finish(self.init_released.get());
    }
}

fn execute(
    config: &SandboxConfig,
    embedding: &dyn Embedding,
    report: &mut Report,
    started: &Cell<Instant>,
) -> Result<i32, LaunchError> {
    let view = guest_view(config);
    let launching = launch_config(config, &view)?;
    let guards = Guards::prepare(&config.limits);
    let result = serve_and_wait(
        config, embedding, &launching, &guards, report, started, view,
    );
    guards.finish();
    result
}

fn serve_and_wait(
    config: &SandboxConfig,
    embedding: &dyn Embedding,
    launching: &LaunchConfig,
    guards: &Guards,
    report: &mut Report,
    started: &Cell<Instant>,
    view: GuestView,
) -> Result<i32, LaunchError> {
    let forwarded = block_forwarded_signals()?;
    let mut capture = match &guards.meter {
        Some(_) => Some(Capture::install(&captured_fds(launching.pty)).map_err(setup_error)?),
        None => None,
    };
    let rw_flush = launch::RwFlush::open(&launching.mounts);
    let publishers = network::bind_publishers(&config.net.publish).map_err(setup_error)?;
    // Launch forks, and so does the socket factory while init sets up:
    // before this process has any thread (the output relays start below).
    let egress = config.net.has_egress();
    // The stub's address on the loopback: the nameserver the view names.
    let dns_stub = match launching.nameserver {
        Some(std::net::IpAddr::V4(stub)) => Some(stub),
        _ => None,
    };
    // What the guest may change (its root) is measured while init drops
    // its privileges (`InitHooks::view_built`), with the counters of the
    // cgroup made by then.
    let measured = RefCell::new(None);
    let mut hooks = RunHooks::new(
        &guards.enforcement,
        (egress, dns_stub),
        config.schedule.nice_after_set_up,
    );
    hooks.share_loopback(
        (config.net.shared_loopback.as_ref()).map(|s| nix::unistd::Pid::from_raw(s.init)),
    );
    hooks.on_view_built(Box::new(|root, fenced| {
        let counters = Arc::new(guards.enforcement.counters());
        let ctx = measure_view(root, fenced, launching, view, &counters)?;
        *measured.borrow_mut() = Some((ctx, counters));
        Ok(())
    }));
    let launched = launch::launch_with(launching, &hooks);
    if let Some(capture) = &mut capture {
        capture.restore();
    }
    let mut sandbox = launched?;
    guards.warn(report);
    let sockets = match hooks.take_factory() {
        Ok(factory) => Arc::new(factory),
        Err(e) => {
            sandbox.kill();
            return Err(setup_error(e));
        }
    };
    guards.tripwire.arm(sandbox.init_pid).map_err(setup_error)?;
    umask(Mode::empty()); // handlers apply the guest's own umask
    let workers = config.workers.unwrap_or(1);
    let listener = sandbox.listener.try_clone().map_err(supervisor_error)?;
    let layer = sandbox.root.try_clone().map_err(supervisor_error)?;
    let Some((mut ctx, counters)) = measured.take() else {
        sandbox.kill();
        return Err(setup_error("the guest's view was not measured".to_string()));
    };
    // The view is measured: from here on the guest may run, unless it
    // has a terminal (see `Schedule::start_early`).
    let early = config.schedule.start_early && launching.pty.is_none();
    let confine_at = match early {
        true => ConfineAt::BeforeServing,
        false if config.schedule.confine_before_wait => ConfineAt::BeforeWait,
        false => ConfineAt::JustBeforeStart,
    };
    // The regular files of the guest's stdio (ours, which it inherits,
    // or the pool client's by then): their reopen by name is served.
    let handed = ctx.handed();
    if early {
        handed.record_own_stdio();
        start_guest(config, guards, &mut sandbox, None)?;
    }
    ctx.set_sockets(sockets).map_err(supervisor_error)?;
    if let Some(token) = &config.net.token {
        ctx.set_net_token(token).map_err(supervisor_error)?;
    }
    let net_denials = ctx.net_denials();
    let network = match Network::start(&config.net, publishers, &mut ctx) {
        Ok(n) => n,
        Err(e) => {
            sandbox.kill();
            return Err(setup_error(e));
        }
    };
    let tracer = match &config.trace {
        Some(target) => Some(
            Tracer::open(target)
                .map_err(|e| setup_error(format!("--trace={}: {e}", target.display())))?,
        ),
        None => None,
    };
    let cpu_group = guards.enforcement.worker_cpu_files();
    // The signal thread's signalfd and what the trap reads of this
    // process come before the confinement, wherever it comes.
    let resizer = Arc::new(OnceLock::new());
    forward_signals(forwarded, sandbox.init_pid, resizer.clone());
    trap::prepare(&ctx);
    // A sandbox that waits for its command (a pool's, a session's) opens
    // now what its guest's first /proc/stat or uptime would, off the
    // request's path.
    if config.start == StartMode::Late {
        ctx.warm_procfs();
    }
    confine_at.here(ConfineAt::BeforeServing, &hooks)?;
    let trap = match trap::serve(listener, ctx, workers, tracer, cpu_group) {
        Ok(t) => t,
        Err(e) => {
            sandbox.kill();
            return Err(supervisor_error(e));
        }
    };
    let master = match sandbox.pty_master.take() {
        Some(m) => relayed_pty(&config.terminal, m).map_err(setup_error)?,
        None => None,
    };
    confine_at.here(ConfineAt::BeforeWait, &hooks)?;
    // The main process of a late start exists already and keeps its pid
    // across the exec: what its first served call would read of it is
    // read while the sandbox waits.
    if config.start == StartMode::Late {
        if let Some(pid) = sandbox.main_pid() {
            trap.warm_process(pid);
        }
    }
    let mut late = match embedding.ready(&sandbox).map_err(setup_error)? {
        Start::Configured => None,
        Start::Late(late) => Some(late),
    };
    let terminal = match &late {
        Some(late) => late.terminal,
        None => launching.pty,
    };
    // Declared after `sandbox`, so dropped (terminal restored) before it.
    let (relay, unrelayed) = match (master, terminal) {
        (Some(master), Some(stdio)) if stdio.contains(&true) => {
            let relay =
                tty::Relay::start(master, stdio, guards.meter.clone()).map_err(supervisor_error)?;
            let _ = resizer.set(relay.resizer());
            (Some(relay), None)
        }
        (master, _) => (None, master),
    };
    // A late start's sandbox may have waited long for its command: the
    // run's clock (the timeout, the report's wall time) starts now.
    if config.start == StartMode::Late {
        started.set(Instant::now());
    }
    if let Some(tracer) = late.as_mut().and_then(|l| l.tracer.take()) {
        trap.trace_with(tracer);
    }
    let late_timeout = late.as_ref().and_then(|l| l.timeout);
    let limits = limits_with(&guards.enforcement.limits, late_timeout);
    report.limits.timeout_s = limits.timeout.map(|d| d.as_secs_f64());
    confine_at.here(ConfineAt::JustBeforeStart, &hooks)?;
    if !early {
        handed.record_own_stdio();
        start_guest(config, guards, &mut sandbox, late.as_ref())?;
    }
    // A pty the guest was not given: closed once it has its start, not
    // before (the close's hang-up of the tty costs some 20 µs).
    drop(unrelayed);
    // Threads the guest's exec need not wait for: they start while it runs
    // (a guest that writes first only finds its pipe's buffer).
    if let (Some(capture), Some(meter)) = (&mut capture, &guards.meter) {
        capture.relay(meter);
    }
    let watchdog = watchdog::start(
        &limits,
        counters.clone(),
        guards.tripwire.clone(),
        started.get(),
    );
    let command = sandbox.command_name().to_string();
    let waited = sandbox.wait_with_stats();
    trap.settle();
    for warning in rw_flush.flush() {
        eprintln!("supervisor: warning: {warning}");
    }
    drop(watchdog);
    network.finish();
    if let Some(relay) = relay {
        relay.finish();
    }
    if let Some(capture) = capture {
        capture.finish();
    }
    let (outcome, tasks) = waited?;
    report.syscalls.serviced = trap.counters.serviced().into_iter().collect();
    report.syscalls.denied = trap.counters.denied().into_iter().collect();
    report.denied_connections = net_denials
        .snapshot()
        .0
        .into_iter()
        .map(Into::into)
        .collect();
    report.processes_started = tasks;
    report.peak_memory_bytes = counters.memory_peak();
    report.cpu_time_from_cgroup = counters.cpu_user_system();
    if let Some(meter) = &guards.meter {
        report.output.bytes = Some(meter.passed());
        report.output.cut = meter.was_cut();
    }
    let ending = Ending {
        outcome,
        kill: guards.tripwire.reason(),
        oom_kills: counters.oom_kills(),
        layer_full: layer_is_full(&layer),
        command,
    };
    let code = ending.conclude(config.fs.disk, &limits, report);
    embedding.event(Event::GuestEnded(code));
    Ok(code)
}

/// The handlers' context on the view whose root is `root`: the guest's
/// ids, what it is told of its limits, and, where the view is `fenced`,
/// the fence's grants read (before the guest can change them).
fn measure_view(
    root: BorrowedFd<'_>,
    fenced: bool,
    launching: &LaunchConfig,
    view: GuestView,
    counters: &Arc<crate::limits::counters::Counters>,
) -> Result<Context, String> {
    let root = root.try_clone_to_owned().map_err(|e| e.to_string())?;
    let mut ctx = Context::new(root, getuid().as_raw(), getgid().as_raw());
    ctx.set_ids(launching.id_map());
    ctx.set_limits(view.into_limits(|| {
        if !counters.has_memory() {
            return (None, None);
        }
        let (usage, stat) = (counters.clone(), counters.clone());
        let usage = Box::new(move || usage.memory_usage()) as Reading;
        let stat = Box::new(move || stat.memory_stat()) as TextReading;
        (Some(usage), Some(stat))
    }));
    if fenced {
        ctx.fence_reads()
            .map_err(|e| format!("the guest's view: {}", e.desc()))?;
    }
    Ok(ctx)
}

/// When the supervisor confines itself (its own filter, `confine.rs`):
/// always before the guest's first call is served.
#[derive(Clone, Copy, PartialEq)]
enum ConfineAt {
    /// Before the trap's workers start: the guest has started already.
    BeforeServing,
    /// Before [`Embedding::ready`] (which then waits confined).
    BeforeWait,
    /// After everything else, just before the guest may exec.
    JustBeforeStart,
}

impl ConfineAt {
    /// Confines the supervisor if `point` is the chosen one.
    fn here(self, point: ConfineAt, hooks: &RunHooks<'_>) -> Result<(), LaunchError> {
        if self != point {
            return Ok(());
        }
        crate::confine::confine(&hooks.take_own_filter()).map_err(supervisor_error)
    }
}

/// Lets the guest exec its command: the config's, or `late`'s with this
/// process's stdin, stdout and stderr (those the output limit captures
/// excepted: the guest keeps the pipes it inherited). Without a report,
/// nothing needs init's resource usage: the run may then end when init
/// has reported, not when the kernel has torn it down
/// (`Schedule::leave_teardown`).
fn start_guest(
    config: &SandboxConfig,
    guards: &Guards,
    sandbox: &mut launch::Sandbox,
    late: Option<&LateCommand>,
) -> Result<(), LaunchError> {
    let report = config.report.is_some() || late.is_some_and(|l| l.report);
    if !report && config.schedule.leave_teardown {
        sandbox.release_on_status();
        guards.init_released.set(true);
    }
    let Some(late) = late else {
        return sandbox.start();
    };
    let captured = guards.meter.is_some();
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    sandbox.start_late(&LateStart {
        command: &late.command,
        env: &late.env,
        stdio: [
            Some(stdin.as_fd()),
            (!captured).then(|| stdout.as_fd()),
            (!captured).then(|| stderr.as_fd()),
        ],
        // The relay serves the pty where the command said it is its
        // terminal (`LateCommand::terminal`).
        terminal: late.terminal.unwrap_or([false; 3]),
    })
}

/// The guest's pty master, where the config says: relayed to our own
/// terminal (`Some`), or sent to a console socket (`None`).
fn relayed_pty(terminal: &Terminal, master: OwnedFd) -> Result<Option<OwnedFd>, String> {
    match terminal {
        Terminal::Console(path) => {
            tty::send_master(path, b"/dev/pts/0", master.as_fd())?;
            Ok(None)
        }
        _ => Ok(Some(master)),
    }
}

/// `limits` with `timeout` too: the shorter of the two holds.
fn limits_with(limits: &Limits, timeout: Option<Duration>) -> Limits {
    let mut limits = limits.clone();
    limits.timeout = match (limits.timeout, timeout) {
        (Some(own), Some(late)) => Some(own.min(late)),
        (own, late) => own.or(late),
    };
    limits
}

/// Which of our stdout (1) and stderr (2) the guest writes to directly
/// (not through its pseudo-terminal): those are captured for the meter.
fn captured_fds(pty: Option<[bool; 3]>) -> Vec<i32> {
    let on_tty = pty.unwrap_or([false; 3]);
    [1, 2]
        .into_iter()
        .filter(|&fd| !on_tty[fd as usize])
        .collect()
}

fn setup_error(message: String) -> LaunchError {
    LaunchError {
        exit_code: 125,
        message,
    }
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
