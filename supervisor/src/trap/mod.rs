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

mod guest;
mod ioctl;
mod memory;
mod pidfd;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use nix::errno::Errno;
use sandbox_syscalls::policy::{self, Trapped};
use sandbox_syscalls::{dispatch, Context, Reply, SyscallArgs};

pub use guest::NotifGuest;

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
    pub sync_wake_up: bool,
}

/// Most workers the pool grows to (each blocked one is a guest thread
/// waiting on a FIFO or a lock that another guest thread will release).
const MAX_WORKERS: usize = 64;

/// What every worker shares.
struct Shared {
    listener: OwnedFd,
    ctx: Context,
    counters: Arc<Counters>,
    /// Workers waiting in RECV right now.
    idle: AtomicUsize,
    /// Workers alive.
    total: AtomicUsize,
}

/// Starts `workers` threads answering notifications on `listener`. The
/// pool grows when a call blocks (a FIFO open waits for its other end):
/// there is always a worker waiting for the next call.
pub fn serve(listener: OwnedFd, ctx: Context, workers: usize) -> std::io::Result<Trap> {
    let sync_wake_up = ioctl::set_sync_wake_up(listener.as_fd());
    let counters = Arc::new(Counters::new());
    let shared = Arc::new(Shared {
        listener,
        ctx,
        counters: counters.clone(),
        idle: AtomicUsize::new(0),
        total: AtomicUsize::new(0),
    });
    for _ in 0..workers.max(1) {
        spawn_worker(&shared)?;
    }
    Ok(Trap {
        counters,
        sync_wake_up,
    })
}

fn spawn_worker(shared: &Arc<Shared>) -> std::io::Result<()> {
    let n = shared.total.fetch_add(1, Ordering::SeqCst);
    let mine = shared.clone();
    let spawned = thread::Builder::new()
        .name(format!("trap-{n}"))
        .spawn(move || worker(&mine));
    if spawned.is_err() {
        shared.total.fetch_sub(1, Ordering::SeqCst);
    }
    spawned.map(drop)
}

fn worker(shared: &Arc<Shared>) {
    // The kernel checks the workers' file access exactly as the guest's.
    if let Err(e) = caps::clear(None, caps::CapSet::Effective) {
        eprintln!("supervisor: cannot drop worker capabilities: {e}");
        std::process::abort();
    }
    let listener = shared.listener.as_fd();
    loop {
        shared.idle.fetch_add(1, Ordering::SeqCst);
        let received = ioctl::recv(listener);
        let idle_now = shared.idle.fetch_sub(1, Ordering::SeqCst) - 1;
        let n = match received {
            Ok(n) => n,
            // The caller died or was interrupted before we got it.
            Err(Errno::ENOENT) | Err(Errno::EINTR) => continue,
            Err(e) => {
                eprintln!("supervisor: notification receive failed: {e}");
                std::process::abort();
            }
        };
        if idle_now == 0 && shared.total.load(Ordering::SeqCst) < MAX_WORKERS {
            let _ = spawn_worker(shared);
        }
        let reply = handle(&shared.listener, &shared.ctx, &shared.counters, &n);
        answer(&shared.listener, &n, reply);
    }
}

fn handle(
    listener: &OwnedFd,
    ctx: &Context,
    counters: &Counters,
    n: &ioctl::Notification,
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
            };
            let call = SyscallArgs {
                nr: i64::from(n.nr),
                args: n.args,
            };
            dispatch(ctx, &guest, &call)
        }
    }
}

/// Sends the reply. A failure means the call is gone (the thread was
/// killed); a fd we opened for it is then simply closed.
fn answer(listener: &OwnedFd, n: &ioctl::Notification, reply: Reply) {
    let fd = listener.as_fd();
    let _ = match reply {
        Reply::Value(v) => ioctl::send(fd, n.id, v, 0, false),
        Reply::Error(e) => ioctl::send(fd, n.id, 0, -(e as i32), false),
        Reply::Continue => ioctl::send(fd, n.id, 0, 0, true),
        Reply::InstallFd { fd: file, cloexec } => {
            match ioctl::add_fd_and_answer(fd, n.id, file.as_fd(), cloexec) {
                Ok(_) => Ok(()),
                // ADDFD cannot install O_PATH files (the kernel's fget refuses
                // them). Only openat2 gets here with one (open and openat with
                // O_PATH pass the filter): such a descriptor reads nothing, and
                // the kernel opens it in the guest's own view, which holds only
                // what the guest may see — the handler's lookup just vetted it.
                Err(Errno::EBADF) if is_o_path(&file) => ioctl::send(fd, n.id, 0, 0, true),
                // EMFILE and friends: the guest's table is full.
                Err(Errno::ENOENT) => Err(Errno::ENOENT),
                Err(e) => ioctl::send(fd, n.id, 0, -(e as i32), false),
            }
        }
    };
}

fn is_o_path(fd: &OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .is_ok_and(|fl| fl & libc::O_PATH != 0)
}
