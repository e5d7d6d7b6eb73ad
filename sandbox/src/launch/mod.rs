//! Launching the sandbox: namespaces, the guest's view, init (pid 1),
//! privileges, the seccomp filter, the listener hand-off, the guest's
//! exec, and its exit status.
//!
//! Owns: the API the rest of the supervisor uses ([`launch`], [`Sandbox`],
//! and its configuration [`LaunchConfig`], `config.rs`) and the order of
//! the steps. Does not own: serving notifications (the trap), the guest's
//! environment or the filter's contents (given in [`LaunchConfig`]), or
//! the CLI.
//!
//! How a run goes:
//! 1. [`launch`] (called while the supervisor is still single-threaded)
//!    plans the view, then `clone`s init into new user, mount, pid, ipc
//!    and uts namespaces (or, for ipc and uts, ones the caller named,
//!    joined first: `joined.rs`), starts a child making the sandbox's
//!    network namespace in init's user namespace (`netns.rs`) and writes
//!    init's id maps (`userns.rs`); in another sandbox's pid namespace,
//!    init joins that sandbox's user namespace and makes its mount, ipc
//!    and uts namespaces itself (`joined.rs`), and the network namespace
//!    is made in that user namespace.
//! 2. Init (`init.rs`) builds the view (`plan.rs`, `view.rs`), joins the
//!    network namespace, drops every privilege, installs the filter
//!    (`privs.rs`) and names the listener over the control channel
//!    (`channel.rs`), for the supervisor to copy with `pidfd_getfd`. `launch` returns with the listener and a
//!    descriptor of the view's root.
//! 3. The caller measures the view (its root, the fence's grants: before
//!    the guest can change them; from [`InitHooks::view_built`], while
//!    init finishes, or once `launch` returns) and calls [`Sandbox::start`]: the
//!    guest's main process, paused before execve, executes the command
//!    (`exec.rs`). The caller may start serving the listener before or
//!    after: a serviced call waits in the listener's queue until a worker
//!    takes it.
//! 4. [`Sandbox::wait`] (`sandbox.rs`) returns when the main process
//!    ends; init has then killed and reaped whatever else ran in the
//!    sandbox, and exits. If the supervisor dies, init gets SIGKILL
//!    (PDEATHSIG), and the kernel kills the rest: no guest process
//!    outlives its supervisor.

pub(crate) mod bind;
mod channel;
mod config;
mod descendants;
mod dev_shm;
mod dev_view;
mod elf_fields;
pub mod engine_overlay;
mod etc;
mod exec;
mod exec_request;
mod fast_reads;
mod flush;
pub mod guest_caps;
mod host_root;
pub mod host_stdio;
mod idmapped;
mod init;
mod joined;
mod late;
mod ldso_patch;
mod musl;
mod netns;
mod plan;
pub(crate) mod privs;
mod proc_mount;
mod rootfs;
mod sandbox;
mod static_loader;
pub mod subids;
mod timens;
mod userns;
mod users;
pub(crate) mod view;

pub use config::{allow_all_filter, LaunchConfig, Program, DEFAULT_DISK_SIZE, DEFAULT_HOSTNAME};
pub use dev_shm::DevShm;
pub use exec::DEFAULT_PATH;
pub use exec_request::{env_pairs, ExecRequests};
pub use flush::RwFlush;
pub use init::FORWARDED;
pub use late::LateStart;
pub use plan::ViewPlan;
pub use users::{GuestUser, OCI_ID_COUNT};

use std::fmt;
use std::fs::OpenOptions;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::unistd::{getgid, getuid, pipe2, Pid};

use crate::sys::process::{clone_process, Forked};
use channel::Channel;
use exec::ExecPlan;
use plan::PlanInput;

/// How the guest's main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signaled(i32),
}

/// A launch failure: the exit code to use (125 setup, 126 cannot
/// execute, 127 not found) and one line without the "supervisor: " prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchError {
    pub exit_code: i32,
    pub message: String,
}

impl LaunchError {
    fn setup(message: impl Into<String>) -> Self {
        LaunchError {
            exit_code: 125,
            message: message.into(),
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LaunchError {}

/// A launched sandbox whose guest waits, just before execve, for [`Sandbox::start`].
pub struct Sandbox {
    /// Init, pid 1 inside; its pid here.
    pub init_pid: Pid,
    /// The seccomp notification listener of the guest's filter.
    pub listener: OwnedFd,
    /// `/proc/<init>/root` (O_PATH): the root of the guest's view.
    pub root: OwnedFd,
    /// The master of the guest's pseudo-terminal, if [`LaunchConfig::pty`] asked for one.
    pub pty_master: Option<OwnedFd>,
    /// The sandbox's user namespace (`/proc/<init>/ns/user`, opened while
    /// init may still be inspected) and network namespace (`netns.rs`).
    pub userns: OwnedFd,
    pub netns: OwnedFd,
    /// Init put the guest in a Landlock domain that fences its reads
    /// (`sys/landlock.rs`): the handlers must serve what it refuses
    /// (`Context::fence_reads`).
    pub fenced: bool,
    channel: Channel,
    start: OwnedFd,
    exec_report: OwnedFd,
    command: String,
    command_has_slash: bool,
    started: AtomicBool,
    /// What the view offers for fast reads: a late musl command gets
    /// `LD_PRELOAD` naming the library, a late static one starts through
    /// the loader (`fast_reads.rs`).
    offers: fast_reads::Offered,
    reaped: bool,
    /// Do not wait for init's exit once it has reported (see
    /// [`Sandbox::release_on_status`]).
    release: bool,
}

/// Init's new namespaces; the network namespace is made beside (`netns.rs`).
const NAMESPACES: CloneFlags = CloneFlags::CLONE_NEWUSER
    .union(CloneFlags::CLONE_NEWNS)
    .union(CloneFlags::CLONE_NEWPID)
    .union(CloneFlags::CLONE_NEWIPC)
    .union(CloneFlags::CLONE_NEWUTS);

/// Creates the sandbox and returns once the guest is ready to exec.
/// Call it while the process has a single thread: it forks.
pub fn launch(cfg: &LaunchConfig) -> Result<Sandbox, LaunchError> {
    launch_with(cfg, &NoHooks)
}

/// What the caller does to init while it sets up, before it has forked
/// anything: everything in the sandbox inherits the result.
pub trait InitHooks {
    /// Whether init joins a cgroup the caller makes while init builds
    /// the view ([`InitHooks::cgroup_join`]): init then waits for it
    /// before its cgroup namespace and the guest. Known before the clone.
    fn joins_late(&self) -> bool {
        false
    }
    /// When [`InitHooks::joins_late`], called first once init is told to
    /// go: makes the cgroup (moving init into what it cannot join itself)
    /// and returns the cgroup v1 `tasks` files init writes "0" to.
    fn cgroup_join(&self, _init: Pid) -> Result<Vec<OwnedFd>, String> {
        Ok(Vec::new())
    }
    /// Called right after init is told to go (and any cgroup sent), while
    /// it builds the view, so that slow steps overlap that work. `ns`:
    /// the sandbox's namespaces (init joins the network namespace only
    /// later: its own `/proc/<pid>/ns/net` is not yet the sandbox's).
    fn setting_up(&self, init: Pid, ns: Namespaces<'_>) -> Result<(), String>;
    /// Called once init is rooted in the view (`root`: its root, as
    /// [`Sandbox::root`]), while it drops its privileges and installs the
    /// filter: the view is final, the guest not yet made, so measuring it
    /// here overlaps init's last steps. `fenced`: [`Sandbox::fenced`].
    fn view_built(&self, _root: BorrowedFd<'_>, _fenced: bool) -> Result<(), String> {
        Ok(())
    }
    /// Called once init is set up, before it forks the guest (rlimits
    /// set here do not constrain init's own setup).
    fn set_up(&self, init: Pid) -> Result<(), String>;
}

/// The sandbox's user and network namespaces.
#[derive(Clone, Copy)]
pub struct Namespaces<'a> {
    pub user: BorrowedFd<'a>,
    pub net: BorrowedFd<'a>,
}

struct NoHooks;

impl InitHooks for NoHooks {
    fn setting_up(&self, _: Pid, _: Namespaces<'_>) -> Result<(), String> {
        Ok(())
    }
    fn set_up(&self, _: Pid) -> Result<(), String> {
        Ok(())
    }
}

/// [`launch`], calling `hooks` on init at the two moments they name.
pub fn launch_with(cfg: &LaunchConfig, hooks: &dyn InitHooks) -> Result<Sandbox, LaunchError> {
    // Joined first: a joined UTS namespace's hostname is the view's.
    let joined = joined::enter(cfg.join_ipc.as_deref(), cfg.join_uts.as_deref())
        .map_err(LaunchError::setup)?;
    let hostname = joined.hostname.as_deref().unwrap_or(&cfg.hostname);
    let mut exec = match cfg.late_exec {
        true => None,
        false => Some(ExecPlan::new(&cfg.command, &cfg.env)?),
    };
    // With a rootfs the host's cwd has no place in the view.
    let host_cwd = match cfg.rootfs {
        Some(_) => None,
        None => std::env::current_dir().ok(),
    };
    let workdir = match (&cfg.workdir, &host_cwd) {
        (Some(w), _) => w.clone(),
        (None, None) if cfg.rootfs.is_some() => PathBuf::from("/"),
        (None, Some(cwd)) => cwd.clone(),
        (None, None) => {
            return Err(LaunchError::setup(
                "the current directory is gone; give --workdir",
            ))
        }
    };
    if !workdir.is_absolute() {
        return Err(LaunchError::setup(format!(
            "workdir {}: must be an absolute path",
            workdir.display()
        )));
    }
    // The invoker's ids as the guest sees them: its root where shifted.
    let (uid, gid) = match cfg.shifted_ids {
        Some(_) => (0, 0),
        None => (getuid().as_raw(), getgid().as_raw()),
    };
    let mut plan = ViewPlan::new(&PlanInput {
        mounts: &cfg.mounts,
        env: &cfg.env,
        hostname,
        workdir: &workdir,
        host_cwd: host_cwd.as_deref(),
        layer_size: cfg.disk_size,
        uid,
        gid,
        cpus: cfg.cpus,
        rootfs: cfg.rootfs.as_deref(),
        masks: &cfg.masks,
        read_only: &cfg.read_only,
        nameserver: cfg.nameserver,
        writable_system: cfg.writable_system,
    })
    .map_err(LaunchError::setup)?;
    plan.rootfs_in_place = cfg.rootfs_in_place;
    plan.root_read_only = cfg.root_read_only;
    plan.dev_shm = cfg.dev_shm.clone();
    plan.mounts_keep_ids = cfg.mounts_keep_ids && cfg.shifted_ids.is_some();
    let landlock = std::env::var_os(init::NO_LANDLOCK_FOR_TESTS).is_none();
    plan.proc_covers = procfs::Limited {
        memory: cfg.memory_limited,
        pids: cfg.pids_limited,
        cpus: cfg.cpus.is_some(),
        fenced: landlock && cfg.fence_reads && crate::sys::landlock::has_fs_rules(),
    };
    let fast_reads = match &cfg.fast_reads_filter {
        Some(filter) if plan.proc_covers.fenced && fast_reads::possible() => {
            plan.etc_guest_files = fast_reads::etc_files(cfg.rootfs.as_deref(), cfg.rewrite_sites);
            Some(filter)
        }
        _ => None,
    };
    // The library is in the view: a musl command is told where. A static
    // command starts through the loader, which marks its opens (in every
    // fenced view, a tree's too). One look at the command's program tells
    // which; a late command and an exec request get the same look.
    let offers = fast_reads::Offered {
        preload: !plan.etc_guest_files.is_empty(),
        loader: fast_reads.is_some() && static_loader::possible(),
        rewrite: cfg.rewrite_sites,
    };
    if offers.loader {
        plan.etc_guest_files.push(static_loader::etc_file());
    }
    // The loader's own opens before the preload's start: a copy of the
    // host's loader whose open site is marked (ldso_patch.rs).
    if offers.preload && cfg.rewrite_sites && cfg.rootfs.is_none() {
        plan.ldso = ldso_patch::for_host_view(&plan.top_dirs);
    }
    if let Some(exec) = exec.as_mut() {
        fast_reads::ready_command(exec, cfg.rootfs.as_deref(), &workdir, offers);
    }
    let filter = privs::to_sock_filter(&fast_reads.unwrap_or(&cfg.filter).insns());
    // Shifted ids as root: host directories through idmapped copies.
    let mut idmapped = match cfg.shifted_ids {
        Some(ids) if nix::unistd::geteuid().is_root() => {
            idmapped::prepare(&plan, &ids, plan.mounts_keep_ids).map_err(LaunchError::setup)?
        }
        _ => idmapped::IdmappedSources::default(),
    };
    let os_err = |what: &str, e: Errno| LaunchError::setup(format!("{what}: {}", e.desc()));
    let (ours, theirs) = channel::pair().map_err(|e| os_err("creating the control channel", e))?;
    let (start_rx, start_tx) = match cfg.late_exec {
        true => late::channel().map(|(ours, theirs)| (theirs, ours)),
        false => pipe2(OFlag::O_CLOEXEC),
    }
    .map_err(|e| os_err("creating the start channel", e))?;
    let (exec_rx, exec_tx) = pipe2(OFlag::O_CLOEXEC).map_err(|e| os_err("creating a pipe", e))?;

    let self_join: Vec<BorrowedFd<'_>> = cfg.self_join.iter().map(|f| f.as_fd()).collect();
    // Reopened here, in the invoker's mount namespace (init's is a copy,
    // whose mounts the kernel will not clone from the host's), unless
    // init takes the view's own node in their place.
    let (stdio, view_stdio) = host_stdio::launch_stdio(&plan.dev_nodes);
    // Last before the clone: nothing else may be born in a joined pid
    // namespace.
    let pid_join = (cfg.join_pid.as_ref())
        .map(|j| joined::enter_pid(j, &cfg.id_map()))
        .transpose()
        .map_err(LaunchError::setup)?;
    let flags = match pid_join {
        Some(_) => CloneFlags::empty(),
        None => joined.clone_flags(NAMESPACES),
    };
    let forked = clone_process(flags);
    if let (Some(join), Ok(Forked::Parent(_)) | Err(_)) = (&pid_join, &forked) {
        join.leave().map_err(LaunchError::setup)?;
    }
    match forked {
        Err(e) => Err(LaunchError::setup(format!(
            "cannot create the sandbox's namespaces: {} (are unprivileged user namespaces allowed? \
             see sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, \
             kernel.apparmor_restrict_unprivileged_userns)",
            e.desc()
        ))),
        Ok(Forked::Child) => {
            drop((ours, start_tx, exec_rx));
            init::run(init::InitArgs {
                channel: theirs,
                start: start_rx,
                exec_report: exec_tx,
                plan: &plan,
                idmapped: &idmapped,
                exec: exec.as_ref(),
                offers,
                filter: &filter,
                enter_user: (pid_join.as_ref()).map(|j| (j.user(), joined.clone_flags(NAMESPACES))),
                hostname: joined.hostname.is_none().then_some(hostname),
                workdir: &workdir,
                pty: cfg.pty,
                self_join: &self_join,
                join_late: hooks.joins_late(),
                switch_users: cfg.id_map().count() > 1,
                guest_caps: cfg.guest_caps(),
                clocks: cfg.clocks,
                shifted_ids: cfg.shifted_ids.is_some(),
                invoker_is_root: nix::unistd::geteuid().is_root(),
                user: cfg.user.as_ref(),
                landlock,
                fence: plan.proc_covers.fenced,
                stdio: std::array::from_fn(|i| stdio[i].as_ref().map(|f| f.as_fd())),
                view_stdio,
            })
        }
        Ok(Forked::Parent(pid)) => {
            drop((theirs, start_rx, exec_tx, stdio));
            let mut sandbox = Sandbox {
                init_pid: pid,
                listener: placeholder_fd()?,
                root: placeholder_fd()?,
                pty_master: None,
                userns: placeholder_fd()?,
                netns: placeholder_fd()?,
                fenced: plan.proc_covers.fenced,
                channel: ours,
                start: start_tx,
                exec_report: exec_rx,
                command: exec.as_ref().map(|e| e.name.clone()).unwrap_or_default(),
                command_has_slash: exec.as_ref().is_some_and(|e| e.has_slash),
                started: AtomicBool::new(false),
                offers,
                reaped: false,
                release: false,
            };
            // On any error below, dropping `sandbox` kills and reaps init.
            let own_ids = cfg.id_map();
            let user = match &pid_join {
                Some(join) => sandbox::UserNs::Joined(join.user()),
                None => sandbox::UserNs::Own(&own_ids),
            };
            let net_maker = sandbox.finish_launch(user, hooks)?;
            // Their exits overlapped the clone and init's setup.
            idmapped.reap_holders();
            drop(net_maker);
            Ok(sandbox)
        }
    }
}

/// A descriptor to stand in until the real one arrives.
fn placeholder_fd() -> Result<OwnedFd, LaunchError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open("/")
        .map(OwnedFd::from)
        .map_err(|e| LaunchError::setup(format!("opening /: {e}")))
}

/// `/proc/<pid>/ns/<name>`. Before init makes itself non-dumpable: an
/// unprivileged supervisor may not open it afterwards.
pub fn open_namespace(pid: Pid, name: &str) -> Result<OwnedFd, String> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(format!("/proc/{pid}/ns/{name}"))
        .map(OwnedFd::from)
        .map_err(|e| format!("opening the sandbox's {name} namespace: {e}"))
}
