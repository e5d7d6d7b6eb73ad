//! The trap: worker threads that answer the guest's seccomp notifications.
//!
//! Owns: the loop `RECV → classify → handle → answer` on the listener fd,
//! the per-syscall counters behind the report, and the wiring of
//! [`sandbox_syscalls::dispatch`] to the kernel (values, errnos, fd
//! installation with `ADDFD|SEND`, CONTINUE). Does not own: what a
//! serviced call does (syscalls/ handlers) or starting the guest (launch).
//!
//! Data flow of one serviced call: the guest thread traps →
//! `ioctl::recv` in an idle worker → `policy::trapped(nr)` → a handler
//! reads the arguments through [`guest::NotifGuest`], checks
//! `ID_VALID`, does the work against the VFS → `answer` sends the value
//! or installs the fd → the guest thread resumes.

mod creds;
mod guest;
mod ioctl;
mod memory;
mod nodes;
mod pidfds;
mod signals;
pub mod trace;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use nix::errno::Errno;
use parking_lot::{Condvar, Mutex};
use sandbox_syscalls::policy::{self, Trapped};
use sandbox_syscalls::{dispatch, Context, Reply, SyscallArgs};

pub use guest::NotifGuest;
use trace::{Answered, Tracer};

/// Syscall numbers counted individually; others fall in the last slot.
const COUNTED: usize = 512;

/// How often each syscall was serviced and denied.
pub struct Counters {
    serviced: Vec<AtomicU64>,
    denied: Vec<AtomicU64>,
}

impl Counters {
    fn new() -> Self {
        let zeros = || (0..COUNTED).map(|_| AtomicU64::new(0)).collect();
        Counters {
            serviced: zeros(),
            denied: zeros(),
        }
    }

    fn bump(slots: &[AtomicU64], nr: i32) {
        let i = usize::try_from(nr).unwrap_or(COUNTED - 1).min(COUNTED - 1);
        slots[i].fetch_add(1, Ordering::Relaxed);
    }

    /// (syscall name, count) for every call serviced at least once.
    pub fn serviced(&self) -> Vec<(String, u64)> {
        Self::named(&self.serviced)
    }

    /// (syscall name, count) for every call denied at least once.
    pub fn denied(&self) -> Vec<(String, u64)> {
        Self::named(&self.denied)
    }

    fn named(slots: &[AtomicU64]) -> Vec<(String, u64)> {
        slots
            .iter()
            .enumerate()
            .filter_map(|(nr, c)| {
                let n = c.load(Ordering::Relaxed);
                (n > 0).then(|| (policy::name(nr as i64), n))
            })
            .collect()
    }
}

/// The running trap: workers live until the process exits.
pub struct Trap {
    pub counters: Arc<Counters>,
    shared: Arc<Shared>,
}

/// Most workers the pool grows to (each blocked one is a guest thread
/// waiting on a FIFO that another guest thread will open).
const MAX_WORKERS: usize = 64;

/// What every worker shares.
struct Shared {
    listener: OwnedFd,
    ctx: Context,
    counters: Arc<Counters>,
    /// Set before the guest starts: at [`serve`], or by [`Trap::trace_with`].
    tracer: std::sync::OnceLock<Tracer>,
    /// The cpu `tasks` files each worker joins the guest's cpu group by
    /// and leaves it by (`limits::Enforcement::worker_cpu_files`).
    cpu_group: Option<(OwnedFd, OwnedFd)>,
    gate: Mutex<Gate>,
    wake: Condvar,
}

/// Who may wait in RECV. Exactly one worker does at a time: with two or
/// more waiting, the kernel's wake-ups cost about twice as much (measured:
/// 12 µs against 7 µs a round trip). A worker whose call may block hands
/// receiving over first ([`Shared::hand_off`]).
struct Gate {
    receiving: bool,
    /// The guest is gone: every worker ends.
    gone: bool,
    parked: usize,
    total: usize,
}

/// What the trap reads of the supervisor itself (its own ids and groups,
/// when the workers switch to their callers'), which its own filter
/// (`confine.rs`) would refuse: call it before confining the supervisor.
/// [`serve`] calls it too (it reads once).
pub fn prepare(_ctx: &Context) {
    // The workers (with a range of ids mapped) and the device-node maker
    // (`nodes.rs`, whatever the mapping) switch back to these.
    creds::remember_own();
}

/// Starts the worker pool on `listener`: `workers` threads, of which one
/// receives at a time and the rest wait to take over. With a `tracer`,
/// every trapped call is logged (`--trace`). With `cpu_group` (the
/// sandbox's cpu `tasks` file, and ours), each worker runs in the guest's
/// cpu group until the guest is gone.
pub fn serve(
    listener: OwnedFd,
    ctx: Context,
    workers: usize,
    tracer: Option<Tracer>,
    cpu_group: Option<(OwnedFd, OwnedFd)>,
) -> std::io::Result<Trap> {
    // Best effort: kernels before 6.6 lack it and wake across CPUs.
    let _ = ioctl::set_sync_wake_up(listener.as_fd());
    prepare(&ctx);
    let mut ctx = ctx;
    if let Some(maker) = nodes::start(lends_caps(&ctx)) {
        ctx.set_device_nodes(maker);
    }
    let counters = Arc::new(Counters::new());
    let shared = Arc::new(Shared {
        listener,
        ctx,
        counters: counters.clone(),
        tracer: tracer.map(std::sync::OnceLock::from).unwrap_or_default(),
        cpu_group,
        gate: Mutex::new(Gate {
            receiving: false,
            gone: false,
            parked: 0,
            total: 0,
        }),
        wake: Condvar::new(),
    });
    for _ in 0..workers.max(1) {
        spawn_worker(&shared)?;
    }
    Ok(Trap { counters, shared })
}

impl Trap {
    /// Once the guest has ended: waits until the trace line of its last
    /// answered call is written (`--trace`).
    pub fn settle(&self) {
        if let Some(tracer) = self.shared.tracer.get() {
            tracer.settle();
        }
    }

    /// Traces from now on (the pool's client asks at the request, after
    /// the trap started serving); before the guest starts. Ignored if
    /// there is a tracer already.
    pub fn trace_with(&self, tracer: Tracer) {
        let _ = self.shared.tracer.set(tracer);
    }

    /// Reads and keeps what the first served call of process `pid` (a
    /// guest process that exists before its command: a late start's main
    /// process, which keeps its pid across the exec) would otherwise read
    /// on the guest's time: its pidfd and its ids in the sandbox's pid
    /// namespace (the pidfd's `fdinfo`: an open, a read and a close, and
    /// the code that parses it), which every `/proc/self` open and a
    /// trace line need. A process that has gone is not an error: its
    /// first call reads them as before.
    pub fn warm_process(&self, pid: i32) {
        let _ = guest::ns_ids_of(pid);
    }
}

fn spawn_worker(shared: &Arc<Shared>) -> std::io::Result<()> {
    let n = {
        let mut gate = shared.gate.lock();
        gate.total += 1;
        gate.total
    };
    let mine = shared.clone();
    let spawned = thread::Builder::new()
        .name(format!("trap-{n}"))
        .spawn(move || worker(&mine));
    if spawned.is_err() {
        shared.gate.lock().total -= 1;
    }
    spawned.map(drop)
}

impl Shared {
    /// Makes sure some other worker receives while the caller blocks.
    fn hand_off(self: &Arc<Self>) {
        let gate = self.gate.lock();
        if gate.receiving {
            return;
        }
        if gate.parked > 0 {
            self.wake.notify_one();
        } else if gate.total < MAX_WORKERS {
            drop(gate);
            let _ = spawn_worker(self);
        }
    }

    /// Waits until this worker may receive, and claims it; false once
    /// the guest is gone.
    fn take_receiving(&self) -> bool {
        let mut gate = self.gate.lock();
        while gate.receiving && !gate.gone {
            gate.parked += 1;
            self.wake.wait(&mut gate);
            gate.parked -= 1;
        }
        gate.receiving = !gate.gone;
        gate.receiving
    }

    /// The guest is gone: parked workers end too.
    fn end(&self) {
        self.gate.lock().gone = true;
        self.wake.notify_all();
    }

    /// Moves the calling worker into the guest's cpu group (`join`) or
    /// back into ours. Writing "0" moves only the caller, which skips the
    /// kernel's global threadgroup lock. Best effort: a worker that
    /// stays where it is only answers more slowly.
    fn move_to_cpu_group(&self, join: bool) {
        if let Some((guest, ours)) = &self.cpu_group {
            let _ = nix::unistd::write(if join { guest } else { ours }, b"0");
        }
    }
}

fn worker(shared: &Arc<Shared>) {
    // The kernel checks the workers' file access exactly as the guest's.
    // Permitted too: a worker taken over by a hostile guest cannot raise
    // its capabilities again (capset stays allowed by confine.rs). With
    // a range of ids mapped, a root supervisor's worker keeps CAP_SETUID
    // and CAP_SETGID effective to take each caller's ids (`creds.rs`;
    // they grant no file access), and CAP_CHOWN, CAP_DAC_OVERRIDE,
    // CAP_FOWNER, CAP_FSETID and CAP_SETFCAP permitted only, raised for
    // one call (a chown, a chmod, a rename in another's or a sticky
    // directory, a namespaced file capability) or one lookup (the search
    // of a directory the caller's ids may not search) on
    // inodes the guest's ids own when the caller holds them in its own
    // namespace (`guest.rs`, `with_caller_caps`, the syscalls crate's
    // `handlers/caller_caps.rs`), and only where no
    // guest id is host root: a worker's fsuid never returns to 0 while it
    // serves a call then, which would make the kernel raise those
    // permitted file capabilities again. An unprivileged supervisor has
    // none to keep: it acts only as its own ids.
    use caps::Capability::{
        CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP, CAP_SETGID, CAP_SETUID,
    };
    let ranged = switches_ids(&shared.ctx) && nix::unistd::geteuid().is_root();
    let shifted = lends_caps(&shared.ctx);
    let (effective, mut permitted): (caps::CapsHashSet, caps::CapsHashSet) = match ranged {
        true => (
            [CAP_SETUID, CAP_SETGID].into(),
            [CAP_SETUID, CAP_SETGID].into(),
        ),
        false => Default::default(),
    };
    if shifted {
        permitted.extend([
            CAP_CHOWN,
            CAP_DAC_OVERRIDE,
            CAP_FOWNER,
            CAP_FSETID,
            CAP_SETFCAP,
        ]);
    }
    let dropped = caps::set(None, caps::CapSet::Effective, &effective)
        .and_then(|()| caps::set(None, caps::CapSet::Permitted, &permitted));
    if let Err(e) = dropped {
        eprintln!("supervisor: cannot drop worker capabilities: {e}");
        std::process::abort();
    }
    shared.move_to_cpu_group(true);
    serve_calls(shared);
    // Out of the guest's group before it is removed.
    shared.move_to_cpu_group(false);
}

/// Whether the workers (and the device-node maker) may lend a caller the
/// file capabilities it holds in its own namespace: a root supervisor
/// with a range of ids mapped, none of which is host root (see `worker`).
fn lends_caps(ctx: &Context) -> bool {
    switches_ids(ctx) && nix::unistd::geteuid().is_root() && !ctx.ids().holds_host(0, 0)
}

/// Whether workers act with each caller's ids: only when the sandbox
/// maps more ids than the supervisor's own (with one, every caller's ids
/// are the supervisor's).
fn switches_ids(ctx: &Context) -> bool {
    ctx.ids().count() > 1
}

/// Makes the worker act with the caller's ids for a serviced call that
/// needs them ([`creds::Acting::acts_for`]).
fn act_as_caller(acting: Option<&mut creds::Acting>, n: &ioctl::Notification) -> Result<(), Errno> {
    let nr = i64::from(n.nr);
    match acting {
        Some(acting) if matches!(policy::trapped(nr), Trapped::Service) && acting.acts_for(nr) => {
            let ids = creds::of_caller(n.pid as i32)?;
            acting.take(&ids)
        }
        _ => Ok(()),
    }
}

/// The worker's loop, until the guest is gone.
fn serve_calls(shared: &Arc<Shared>) {
    let mut acting = switches_ids(&shared.ctx).then(creds::Acting::new);
    serve_calls_acting(shared, acting.as_mut());
    if let Some(acting) = &mut acting {
        acting.restore();
    }
}

fn serve_calls_acting(shared: &Arc<Shared>, mut acting: Option<&mut creds::Acting>) {
    let on_block = || shared.hand_off();
    while shared.take_receiving() {
        let received = ioctl::recv(shared.listener.as_fd());
        shared.gate.lock().receiving = false;
        let n = match received {
            Ok(n) => n,
            // The caller died or was interrupted before we got it; or
            // the guest is gone, and RECV fails at once from now on:
            // this worker's work is done (spinning would steal a CPU
            // from the sandbox's teardown).
            Err(Errno::ENOENT) if guest_gone(&shared.listener) => return shared.end(),
            Err(Errno::ENOENT) | Err(Errno::EINTR) => continue,
            Err(e) => {
                eprintln!("supervisor: notification receive failed: {e}");
                std::process::abort();
            }
        };
        let traced = shared
            .tracer
            .get()
            .map(|t| (t, Instant::now(), describe(shared, &n)));
        let reply = match act_as_caller(acting.as_deref_mut(), &n) {
            Ok(()) => handle(
                &shared.listener,
                &shared.ctx,
                &shared.counters,
                &n,
                &on_block,
            ),
            Err(e) => Reply::Error(e),
        };
        // Timed up to the answer, not after it: the guest it wakes may take
        // this worker's CPU until its next trapped call, and that wait is
        // the guest's running time, not this call's.
        let traced = traced.map(|(tracer, start, what)| (start.elapsed(), tracer.hold(), what));
        let answered = answer(&shared.listener, &n, reply);
        if let Some((took, held, (pid, call, denied))) = traced {
            held.line(pid, &call, denied, answered, took);
        }
    }
}

/// For `--trace`: the caller's sandbox pid, the decoded call, and
/// whether the policy denies it. Read before the call is answered, while
/// the caller's memory still holds its arguments.
fn describe(shared: &Shared, n: &ioctl::Notification) -> (Option<i32>, String, bool) {
    use sandbox_syscalls::Guest;
    let no_block = || {};
    let guest = NotifGuest {
        listener: shared.listener.as_fd(),
        id: n.id,
        tid: n.pid as i32,
        on_block: &no_block,
    };
    let pid = guest.ns_ids().ok().map(|(_, tid)| tid);
    let call = sandbox_syscalls::trace::describe(i64::from(n.nr), &n.args, &guest);
    let denied = matches!(policy::trapped(i64::from(n.nr)), Trapped::Deny(_));
    (pid, call, denied)
}

fn handle(
    listener: &OwnedFd,
    ctx: &Context,
    counters: &Counters,
    n: &ioctl::Notification,
    on_block: &dyn Fn(),
) -> Reply {
    if n.arch != policy::bpf::AUDIT_ARCH_X86_64 {
        // The filter kills foreign architectures; never service one.
        return Reply::Error(Errno::ENOSYS);
    }
    match policy::trapped(i64::from(n.nr)) {
        Trapped::Deny(e) => {
            Counters::bump(&counters.denied, n.nr);
            Reply::Error(e)
        }
        Trapped::Service => {
            Counters::bump(&counters.serviced, n.nr);
            let guest = NotifGuest {
                listener: listener.as_fd(),
                id: n.id,
                tid: n.pid as i32,
                on_block,
            };
            let call = SyscallArgs {
                nr: i64::from(n.nr),
                args: n.args,
            };
            match dispatch(ctx, &guest, &call) {
                Reply::Deny(e) => {
                    Counters::bump(&counters.denied, n.nr);
                    Reply::Error(e)
                }
                reply => reply,
            }
        }
    }
}

/// Sends the reply. A failure means the call is gone (the thread was
/// killed); a fd we opened for it is then simply closed.
fn answer(listener: &OwnedFd, n: &ioctl::Notification, reply: Reply) -> Answered {
    let fd = listener.as_fd();
    let sent = |r: Result<(), Errno>, answered| r.map_or(Answered::Gone, |()| answered);
    match reply {
        Reply::Value(v) => sent(ioctl::send(fd, n.id, v, 0, false), Answered::Value(v)),
        Reply::Error(e) => sent(
            ioctl::send(fd, n.id, 0, -(e as i32), false),
            Answered::Error(e),
        ),
        Reply::Continue => sent(ioctl::send(fd, n.id, 0, 0, true), Answered::Continue),
        // The handler answered itself (an accepted connection installed).
        Reply::Answered(v) => Answered::Value(v),
        Reply::Deny(e) => sent(
            ioctl::send(fd, n.id, 0, -(e as i32), false),
            Answered::Error(e),
        ),
        Reply::InstallFd { fd: file, cloexec } => {
            match ioctl::add_fd_and_answer(fd, n.id, file.as_fd(), cloexec) {
                Ok(guest_fd) => Answered::Fd(guest_fd),
                // ADDFD cannot install O_PATH files (the kernel's fget refuses
                // them). Only openat2 gets here with one (open and openat with
                // O_PATH pass the filter): such a descriptor reads nothing, and
                // the kernel opens it in the guest's own view, which holds only
                // what the guest may see — the handler's lookup just vetted it.
                Err(Errno::EBADF) if is_o_path(&file) => {
                    sent(ioctl::send(fd, n.id, 0, 0, true), Answered::Continue)
                }
                Err(Errno::ENOENT) => Answered::Gone,
                // EMFILE and friends: the guest's table is full.
                Err(e) => sent(
                    ioctl::send(fd, n.id, 0, -(e as i32), false),
                    Answered::Error(e),
                ),
            }
        }
    }
}

/// Whether no task uses the filter any more: the listener then polls
/// as hung up.
fn guest_gone(listener: &OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP)),
        Err(_) => false,
    }
}

fn is_o_path(fd: &OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .is_ok_and(|fl| fl & libc::O_PATH != 0)
}
