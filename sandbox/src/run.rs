//! `supervisor run`: launch the sandbox, serve its trapped calls, wait for
//! it, and turn the outcome into an exit code, a line on stderr, and the
//! report.
//!
//! Owns the order of things (launch before any thread exists; the view
//! measured before the guest may exec; the supervisor confined before
//! any call is served) and the guest's environment. Does not own any of
//! the steps themselves.

use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::stat::{umask, Mode};
use nix::unistd::{getgid, getuid, Pid};
use sandbox_syscalls::policy::bpf;
use sandbox_syscalls::Context;

use crate::config::{SandboxConfig, StartMode, Terminal};
use crate::ending::{layer_is_full, Ending};
use crate::guest_proc::limits::{guest_cpus, guest_limits};
pub use crate::guest_proc::{GuestView, Reading};
use crate::launch::{self, LaunchConfig, LaunchError, FORWARDED};
use crate::launch_hooks::RunHooks;
use crate::limits::{watchdog, Enforcement, Limits, Tripwire};
use crate::network::{self, Network};
use crate::output::{Capture, Meter};
use crate::report::{CpuTime, LimitsReport, Reason, Report};
use crate::trap;
use crate::trap::trace::Tracer;
use crate::tty;

/// What a caller that embeds a run changes in it: the OCI runtime's
/// monitor (`oci/monitor.rs`) launches now and lets the guest exec on
/// `start`, hands the guest's terminal to a console socket, and gives the
/// guest exactly the bundle's environment. [`run`] changes nothing.
pub trait Embedding {
    /// Adjusts the launch built from the flags.
    fn configure(&self, _config: &mut LaunchConfig) {}
    /// Takes the guest's pty master; what it gives back is relayed to
    /// our own terminal, as `run` does.
    fn pty_master(&self, master: OwnedFd) -> Result<Option<OwnedFd>, String> {
        Ok(Some(master))
    }
    /// Called once the trap serves, before the guest may exec (after it,
    /// for an embedding that [`Embedding::starts_early`]); returns when
    /// the guest may start.
    fn before_start(&self, _sandbox: &launch::Sandbox) -> Result<(), String> {
        Ok(())
    }
    /// Lets the guest execute its command, once [`Embedding::before_start`]
    /// has returned (the pool's embedding gives the command, environment
    /// and stdio only here: [`launch::Sandbox::start_late`]).
    fn start(&self, sandbox: &mut launch::Sandbox) -> Result<(), LaunchError> {
        sandbox.start()
    }
    /// Whether the run's clock (`--timeout`, the report's wall time)
    /// starts when [`Embedding::before_start`] returns, not at the launch:
    /// the pool's sandbox may wait long for its client.
    fn clock_starts_now(&self) -> bool {
        false
    }
    /// A trace asked for only now, once [`Embedding::before_start`] has
    /// returned (the pool's client's `--trace`).
    fn late_tracer(&self) -> Option<Tracer> {
        None
    }
    /// Which of stdin, stdout, stderr the guest gets its pty as, known
    /// once [`Embedding::before_start`] has returned; `launched`: the
    /// launch's choice (`LaunchConfig::pty`). The pool's sandbox is
    /// launched with a pty and learns from its client whether to use it.
    fn terminal(&self, launched: Option<[bool; 3]>) -> Option<[bool; 3]> {
        launched
    }
    /// A timeout asked for only now, once [`Embedding::before_start`] has
    /// returned (the pool's client's `--timeout`): the shorter of it and
    /// the run's own holds.
    fn late_timeout(&self) -> Option<Duration> {
        None
    }
    /// The run has ended with `code`; `report` is final (written to
    /// `--report` right after).
    fn finished(&self, _report: &Report, _code: i32) {}
    /// The guest has ended with `code` (its lines printed, `--rw` mounts
    /// flushed); the sandbox is not torn down yet. The pool's sandbox
    /// answers its client here when no report is asked for, so the
    /// teardown happens after the answer.
    fn concluded(&self, _code: i32) {}
    /// Init has set the sandbox up and waits for the go to fork the
    /// guest's main process; this process has no thread yet (the trap's
    /// workers start later). The pool's sandbox, set up at nice 19,
    /// restores its priority here, so that every task made from now on
    /// inherits it: restored later, it raced init's fork of the guest's
    /// main process, which could copy nice 19 before the restore and join
    /// the process group after it.
    fn set_up(&self) -> Result<(), String> {
        Ok(())
    }
    /// Whether the supervisor confines itself before
    /// [`Embedding::before_start`] rather than after it: the pool's
    /// sandbox waits for its client there, so its confinement (the own
    /// filter's `seccomp(TSYNC)`, about 0.15 ms) is off the request's
    /// path. Everything `before_start` calls must then pass that filter.
    fn confines_before_start(&self) -> bool {
        false
    }
    /// Whether the guest may exec as soon as the supervisor has taken the
    /// view's measure (its root, the fence's grants), before the trap
    /// serves: its first serviced call waits in the listener's queue, and
    /// its exec overlaps the trap's start, the signal thread and the
    /// supervisor's confinement, which then comes before any worker (no
    /// call is ever served unconfined). Not with a terminal: the guest
    /// could ask its size before the relay has set it.
    fn starts_early(&self) -> bool {
        false
    }
    /// A run that failed before its guest ended: one line.
    fn error(&self, message: &str) {
        eprintln!("supervisor: {message}");
    }
    /// Whether the run may end without waiting for the sandbox's init to
    /// exit and its cgroup to go (the janitor removes it just after):
    /// the guest's processes are all gone either way.
    fn leaves_teardown(&self) -> bool {
        false
    }
    /// The limits the guest is told of, when the embedding enforces them
    /// itself (no cgroup of the run's for them); `None`: the flags'.
    fn guest_view(&self) -> Option<GuestView> {
        None
    }
}

/// `supervisor run` itself: nothing embedded; it exits right after.
struct Standalone;
impl Embedding for Standalone {
    fn leaves_teardown(&self) -> bool {
        true
    }
    fn starts_early(&self) -> bool {
        true
    }
}

/// Runs the sandbox `config` describes; returns the exit code.
pub fn run(config: SandboxConfig) -> i32 {
    run_embedded(config, &Standalone)
}

/// [`run`], changed by `embedding`.
pub fn run_embedded(config: SandboxConfig, embedding: &dyn Embedding) -> i32 {
    let started = Cell::new(Instant::now());
    let mut report = Report::new(Reason::SupervisorError);
    report.limits = LimitsReport::new(&config.limits, config.fs.disk);
    let code = match execute(&config, embedding, &mut report, &started) {
        Ok(code) => code,
        Err(e) => {
            embedding.error(&e.message);
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
    embedding.finished(&report, code);
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
    args: &SandboxConfig,
    embedding: &dyn Embedding,
    report: &mut Report,
    started: &Cell<Instant>,
) -> Result<i32, LaunchError> {
    let view = embedding
        .guest_view()
        .unwrap_or_else(|| GuestView::of_limits(&args.limits));
    let mut config = launch_config(args, &view)?;
    embedding.configure(&mut config);
    let guards = Guards::prepare(&args.limits);
    let result = serve_and_wait(args, embedding, &config, &guards, report, started, view);
    guards.finish();
    result
}

fn serve_and_wait(
    args: &SandboxConfig,
    embedding: &dyn Embedding,
    config: &LaunchConfig,
    guards: &Guards,
    report: &mut Report,
    started: &Cell<Instant>,
    view: GuestView,
) -> Result<i32, LaunchError> {
    let forwarded = block_forwarded_signals()?;
    let mut capture = match &guards.meter {
        Some(_) => Some(Capture::install(&captured_fds(config.pty)).map_err(setup_error)?),
        None => None,
    };
    let rw_flush = launch::RwFlush::open(&config.mounts);
    let publishers = network::bind_publishers(&args.net.publish).map_err(setup_error)?;
    // Launch forks, and so does the socket factory while init sets up:
    // before this process has any thread (the output relays start below).
    let egress = !args.net.allow.is_empty();
    // The stub's address on the loopback: the nameserver the view names.
    let dns_stub = match config.nameserver {
        Some(std::net::IpAddr::V4(stub)) => Some(stub),
        _ => None,
    };
    let hooks = RunHooks::new(&guards.enforcement, (egress, dns_stub), embedding);
    let launched = launch::launch_with(config, &hooks);
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
    let workers = args.workers.unwrap_or(1);
    let listener = sandbox.listener.try_clone().map_err(supervisor_error)?;
    let root = sandbox.root.try_clone().map_err(supervisor_error)?;
    let layer = sandbox.root.try_clone().map_err(supervisor_error)?;
    let counters = Arc::new(guards.enforcement.counters());
    let mut ctx = Context::new(root, getuid().as_raw(), getgid().as_raw());
    ctx.set_ids(config.id_map());
    ctx.set_limits(guest_limits(view, &counters));
    if sandbox.fenced {
        if let Err(e) = ctx.fence_reads() {
            sandbox.kill();
            return Err(setup_error(format!("the guest's view: {}", e.desc())));
        }
    }
    // What the guest may change (its root) is measured: from here on it
    // may run, unless it has a terminal (see `Embedding::starts_early`).
    let early = embedding.starts_early() && config.pty.is_none();
    let confine_at = match early {
        true => ConfineAt::BeforeServing,
        false if embedding.confines_before_start() => ConfineAt::BeforeEmbeddingStart,
        false => ConfineAt::JustBeforeStart,
    };
    if early {
        start_guest(args, embedding, guards, &mut sandbox)?;
    }
    ctx.set_sockets(sockets).map_err(supervisor_error)?;
    let net_denials = ctx.net_denials();
    let network = match Network::start(&args.net.allow, publishers, &mut ctx) {
        Ok(n) => n,
        Err(e) => {
            sandbox.kill();
            return Err(setup_error(e));
        }
    };
    let tracer = match &args.trace {
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
    confine_at.here(ConfineAt::BeforeServing, &hooks)?;
    let trap = match trap::serve(listener, ctx, workers, tracer, cpu_group) {
        Ok(t) => t,
        Err(e) => {
            sandbox.kill();
            return Err(supervisor_error(e));
        }
    };
    let master = match sandbox.pty_master.take() {
        Some(m) => embedding.pty_master(m).map_err(setup_error)?,
        None => None,
    };
    confine_at.here(ConfineAt::BeforeEmbeddingStart, &hooks)?;
    embedding.before_start(&sandbox).map_err(setup_error)?;
    // Declared after `sandbox`, so dropped (terminal restored) before it.
    let relay = match (master, embedding.terminal(config.pty)) {
        (Some(master), Some(stdio)) if stdio.contains(&true) => {
            let relay =
                tty::Relay::start(master, stdio, guards.meter.clone()).map_err(supervisor_error)?;
            let _ = resizer.set(relay.resizer());
            Some(relay)
        }
        _ => None,
    };
    if embedding.clock_starts_now() {
        started.set(Instant::now());
    }
    if let Some(tracer) = embedding.late_tracer() {
        trap.trace_with(tracer);
    }
    let limits = limits_with(&guards.enforcement.limits, embedding.late_timeout());
    report.limits.timeout_s = limits.timeout.map(|d| d.as_secs_f64());
    confine_at.here(ConfineAt::JustBeforeStart, &hooks)?;
    if !early {
        start_guest(args, embedding, guards, &mut sandbox)?;
    }
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
    let code = ending.conclude(args.fs.disk, &limits, report);
    embedding.concluded(code);
    Ok(code)
}

/// When the supervisor confines itself (its own filter, `confine.rs`):
/// always before the guest's first call is served.
#[derive(Clone, Copy, PartialEq)]
enum ConfineAt {
    /// Before the trap's workers start: the guest has started already.
    BeforeServing,
    /// Before [`Embedding::before_start`] (which then waits confined).
    BeforeEmbeddingStart,
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

/// Lets the guest exec its command ([`Embedding::start`]). Without a
/// report, nothing needs init's resource usage: the run then ends when
/// init has reported, not when the kernel has torn it down.
fn start_guest(
    args: &SandboxConfig,
    embedding: &dyn Embedding,
    guards: &Guards,
    sandbox: &mut launch::Sandbox,
) -> Result<(), LaunchError> {
    if args.report.is_none() && embedding.leaves_teardown() {
        sandbox.release_on_status();
        guards.init_released.set(true);
    }
    embedding.start(sandbox)
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

fn launch_config(args: &SandboxConfig, view: &GuestView) -> Result<LaunchConfig, LaunchError> {
    let mut mounts = args.fs.mounts.clone();
    // Parents before children, whatever the flag order.
    mounts.sort_by_key(|m| m.guest.components().count());
    Ok(LaunchConfig {
        command: args.command.clone(),
        env: args.env.resolve()?,
        workdir: args.workdir.clone(),
        hostname: args.hostname.clone(),
        mounts,
        rootfs: args.fs.rootfs.clone(),
        rootfs_in_place: args.fs.rootfs_in_place,
        masks: args.fs.masks.clone(),
        read_only: args.fs.read_only.clone(),
        disk_size: args.fs.disk,
        writable_system: args.fs.writable_system,
        filter: bpf::compile_without_fast_reads(),
        // A trace shows every open, so a traced guest marks none.
        fast_reads_filter: args.trace.is_none().then(bpf::compile),
        pty: match args.terminal {
            Terminal::Host => tty::host_terminal(),
            Terminal::Always => Some([true; 3]),
            Terminal::Never => None,
            // Whether the guest takes it is learned at start
            // (`Embedding::terminal`).
            Terminal::AtStart => Some([false; 3]),
        },
        cpus: guest_cpus(view.cpus),
        memory_limited: view.memory.is_some(),
        pids_limited: view.pids.is_some(),
        nameserver: args
            .net
            .allow
            .iter()
            .any(netstack::rules::Rule::is_name)
            .then_some(std::net::IpAddr::V4(netstack::dns::STUB_ADDR)),
        self_join: Vec::new(),
        id_count: args.ids.count,
        user: args.ids.user.clone(),
        late_exec: args.start == StartMode::Late,
        // Every open the guest makes is served here (`serve_and_wait`).
        fence_reads: true,
    })
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
/// The relay may start after this thread (the pool's learns of its client's
/// terminal late): `resizer` is set then.
fn forward_signals(set: SigSet, init: Pid, resizer: Arc<OnceLock<tty::Resizer>>) {
    let Ok(sfd) = SignalFd::new(&set) else { return };
    let _ = thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            match sfd.read_signal() {
                Ok(Some(info)) => match (Signal::try_from(info.ssi_signo as i32), resizer.get()) {
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
