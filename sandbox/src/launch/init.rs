//! The sandbox's init: pid 1 of the new pid namespace, the first process
//! inside all the new namespaces.
//!
//! Owns, in order: dying with the supervisor (PDEATHSIG), waiting for the
//! id maps, hostname (not the loopback: the socket factory brings it up
//! when the guest first looks), the view (`view.rs`), the working
//! directory, joining the sandbox's cgroup and entering a cgroup
//! namespace there, joining the sandbox's network namespace (made
//! meanwhile: `netns.rs`), the guest's pseudo-terminal if asked for (opened in the
//! view's devpts, so the guest can name it), closing inherited
//! descriptors, dropping privileges and installing the filter
//! (`privs.rs`), handing the pty master and the listener to the
//! supervisor, starting the guest's main process (`exec.rs`, sharing
//! init's memory until it executes), and then the
//! pid-1 loop: forward signals, reap, and report the main process's wait
//! status; on [`super::exec_request::EXEC_SIGNAL`], fork a helper for
//! each exec request on the channel. When the main process ends, init
//! kills and reaps everything left in the namespace (in a joined pid
//! namespace, everything it started: `descendants.rs`), then reports.
//! Setup errors go back to the supervisor as one line.
//!
//! After the filter is installed and until `Go`, init makes only calls
//! the filter passes (a send and a receive without an address, prctl's
//! PR_SET_DUMPABLE, close, exit): nothing serves notifications yet.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::sched::{unshare, CloneFlags};
use nix::sys::prctl::{set_dumpable, set_pdeathsig};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{chdir, sethostname, Pid};

use super::channel::{Channel, Held, Msg};
use super::exec::{self, ExecPlan};
use super::plan::ViewPlan;
use super::users::{GuestUser, SETID_CAPS};
use super::{privs, view};
use crate::sys::fd::close_all_except;
use crate::sys::process::{
    exit_now as _exit, reset_signal_dispositions, scrub_cmdline_and_environ, sigwaitinfo,
    spawn_sharing_memory,
};
use crate::sys::term::open_pty;

/// Set in the supervisor's environment, init skips Landlock's scope: for
/// tests that show the network namespace alone keeps the guest from the
/// host's abstract sockets (it only ever weakens the invoker's own run).
pub const NO_LANDLOCK_FOR_TESTS: &str = "SUPERVISOR_TEST_NO_LANDLOCK";

/// Signals init passes on to the guest's main process.
pub const FORWARDED: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// What init is given by `launch` (its half of every pipe, and the plans).
pub(super) struct InitArgs<'a> {
    pub channel: Channel,
    pub start: OwnedFd,
    pub exec_report: OwnedFd,
    pub plan: &'a ViewPlan,
    /// Idmapped copies of the plan's host sources (shifted ids, as root).
    pub idmapped: &'a super::idmapped::IdmappedSources,
    /// `None`: the command comes at start (`late.rs`).
    pub exec: Option<&'a ExecPlan>,
    /// What the view offers an exec request's command for fast reads.
    pub offers: super::fast_reads::Offered,
    pub filter: &'a [libc::sock_filter],
    /// Forked into a joined pid namespace: the user namespace to join
    /// first, and the namespaces to make then (`joined::enter_user`).
    pub enter_user: Option<(BorrowedFd<'a>, CloneFlags)>,
    /// `None`: the UTS namespace is a joined one, whose hostname stays.
    pub hostname: Option<&'a str>,
    pub workdir: &'a Path,
    /// Which of stdin, stdout, stderr the guest gets a pty slave as.
    pub pty: Option<[bool; 3]>,
    /// Files to write "0" to first: cgroup v1 `tasks` files (the OCI
    /// monitor's freezer: `LaunchConfig::self_join`).
    pub self_join: &'a [BorrowedFd<'a>],
    /// Wait, once the view is built, for the sandbox's cgroup
    /// (`Msg::Join`), made by the supervisor meanwhile.
    pub join_late: bool,
    /// Put the guest under Landlock's abstract-socket scope (unless the
    /// test switch [`NO_LANDLOCK_FOR_TESTS`] was set).
    pub landlock: bool,
    /// And fence its reads (the kernel has Landlock, and the caller
    /// serves the guest's opens: `LaunchConfig::fence_reads`).
    pub fence: bool,
    /// The user namespace maps a range of ids: init keeps CAP_SETUID and
    /// CAP_SETGID for its children to take other users (`users.rs`).
    pub switch_users: bool,
    /// The capabilities the guest's root keeps in its user namespace
    /// (`guest_caps.rs`; 0: none, the securebits locked).
    pub guest_caps: u64,
    /// Where the guest's clocks start (`timens.rs`); `None`: at init's start.
    pub clocks: Option<crate::config::GuestClocks>,
    /// The user namespace's root is not the invoker (`LaunchConfig::shifted_ids`):
    /// init takes its ids once it has opened the view's host sources.
    pub shifted_ids: bool,
    /// The supervisor runs as host root.
    pub invoker_is_root: bool,
    /// The main process's user (`None`: init's own).
    pub user: Option<&'a GuestUser>,
    /// Stdin, stdout, stderr reopened through read-only mounts, to take
    /// the place of those inherited (`host_stdio.rs`).
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// Which of stdin, stdout, stderr are the host's memory devices, not
    /// reopened: the view's node must take their place.
    pub view_stdio: [bool; 3],
}

/// Runs init; never returns.
pub(super) fn run(args: InitArgs<'_>) -> ! {
    // If the supervisor died before this line, the channel is at its end.
    if set_pdeathsig(Signal::SIGKILL).is_err() {
        _exit(125);
    }
    // Into the freezer's cgroup while the supervisor writes our id maps.
    let joined = join_cgroups(args.self_join).and_then(|()| enter_joined_user(&args));
    if !matches!(args.channel.recv(), Ok(Some(Msg::Go))) {
        _exit(125);
    }
    if let Err(msg) = joined.and_then(|()| take_stdio(&args.stdio)) {
        fail(&args.channel, msg);
    }
    // Our memory is a copy of the supervisor's: its command line and
    // environment must not be readable as /proc/1/cmdline or environ.
    scrub_cmdline_and_environ();
    // Whatever the supervisor ignores, init must see SIGCHLD.
    reset_signal_dispositions();
    let (listener, pty, rest) = match setup(&args) {
        Ok(done) => done,
        Err(msg) => fail(&args.channel, msg),
    };
    let mut signals = SigSet::empty();
    FORWARDED
        .iter()
        .chain([&Signal::SIGCHLD, &super::exec_request::EXEC_SIGNAL])
        .for_each(|s| signals.add(*s));
    if signals.thread_block().is_err() {
        _exit(125);
    }
    let (master, slave) = pty.unzip();
    let held = Held {
        listener: listener.as_raw_fd(),
        pty: master.as_ref().map(AsRawFd::as_raw_fd),
    };
    // The supervisor copies them with pidfd_getfd (a change of ids may
    // have left us non-dumpable): no descriptor travels by sendmsg,
    // which the filter now serves.
    if set_dumpable(true).is_err() || args.channel.send_ready(held).is_err() {
        _exit(125);
    }
    // Once the supervisor holds our root, nothing of init stays visible to
    // the guest: not its memory (/proc/1/mem, environ), not its fds.
    if !args.channel.recv_go() || set_dumpable(false).is_err() {
        _exit(125);
    }
    // The supervisor holds its copies: the guest must never hold them.
    drop(listener);
    drop(master);
    let InitArgs {
        channel,
        start,
        exec_report,
        exec: plan,
        ..
    } = args;
    // The guest's main process shares init's memory until it executes:
    // nothing to copy for it, nothing for its exec to tear down. It
    // closes its copy of init's end of the channel (the supervisor must
    // see init's end close with init), and drops nothing of init's.
    let terminal = slave.as_ref().map(AsFd::as_fd).zip(args.pty);
    let own_channel = channel.as_fd().as_raw_fd();
    let (main, _spawned) = match spawn_sharing_memory(|| {
        let _ = nix::unistd::close(own_channel);
        exec::run_guest(
            plan,
            (start.as_fd(), exec_report.as_fd()),
            terminal,
            args.user,
        )
    }) {
        Ok(spawned) => spawned,
        Err(e) => fail(&channel, format!("starting the guest: {}", e.desc())),
    };
    // Init wakes when the main process executes its program, often on the
    // CPU that program is about to use: it goes straight back to its wait.
    // The main process's stack (`_spawned`), the start channel's guest end
    // and our copy of the terminal's slave (`slave`: the master reads EIO
    // once the guest's copies and this one are gone) are released by
    // init's exit; the exec report's write end is closed when the main
    // process has ended, just before its status is sent, so the
    // supervisor's read of it (`Sandbox::wait_with_stats`) ends there and
    // does not wake it at the exec either.
    let _start = start;
    let _slave = slave;
    supervise(main, &channel, &signals, &rest, args.offers, exec_report)
}

/// In a joined pid namespace: joins its user namespace and makes the
/// others there (`joined.rs`), dying with the supervisor still.
fn enter_joined_user(args: &InitArgs<'_>) -> Result<(), String> {
    let Some((user, flags)) = args.enter_user else {
        return Ok(());
    };
    super::joined::enter_user(user, flags)?;
    set_pdeathsig(Signal::SIGKILL).map_err(|e| format!("PDEATHSIG: {}", e.desc()))
}

/// What init ends once the main process has: its own pid namespace's
/// every other process (with the namespace's `ns_last_pid`: how many
/// pids the sandbox used), or in a joined one its own descendants.
enum Rest {
    Namespace(Option<File>),
    Descendants(super::descendants::Descendants),
}

/// Puts each reopened descriptor in place of the stdin, stdout or stderr
/// init inherited (the originals are closed with the rest in `setup`).
fn take_stdio(stdio: &[Option<BorrowedFd<'_>>; 3]) -> Result<(), String> {
    for (i, fd) in stdio.iter().enumerate() {
        if let Some(fd) = fd {
            nix::unistd::dup2(fd.as_raw_fd(), i as i32)
                .map_err(|e| format!("taking the reopened stdio: {}", e.desc()))?;
        }
    }
    Ok(())
}

/// Moves init (one thread) into each cgroup whose `tasks` file is given.
fn join_cgroups(files: &[BorrowedFd<'_>]) -> Result<(), String> {
    for f in files {
        nix::unistd::write(f, b"0")
            .map_err(|e| format!("cannot move the sandbox into its cgroup: {}", e.desc()))?;
    }
    Ok(())
}

/// Joins the sandbox's cgroup once the supervisor has made it (while we
/// built the view; `InitHooks::cgroup_join`), then enters a cgroup
/// namespace rooted there: /proc/*/cgroup shows `/`, not the host's
/// cgroup paths. Before the guest exists, and while init still may
/// unshare: everything it forks is born inside.
fn enter_sandbox_cgroup(args: &InitArgs<'_>) -> Result<(), String> {
    if args.join_late {
        let files = match args.channel.recv() {
            Ok(Some(Msg::Join(files))) => files,
            _ => _exit(125),
        };
        let files: Vec<BorrowedFd<'_>> = files.iter().map(|f| f.as_fd()).collect();
        join_cgroups(&files)?;
    }
    unshare(CloneFlags::CLONE_NEWCGROUP)
        .map_err(|e| format!("creating a cgroup namespace: {}", e.desc()))
}

fn fail(channel: &Channel, msg: String) -> ! {
    let _ = channel.send(&Msg::Failed(msg));
    _exit(125)
}

/// The guest's pseudo-terminal: (master, slave).
type Pty = (OwnedFd, OwnedFd);

/// Everything up to and including the filter; returns the listener, the
/// pty if one was asked for, and the pid namespace's ns_last_pid (read
/// when the guest ends: how many pids the sandbox used; close-on-exec,
/// so the guest never holds it).
fn setup(args: &InitArgs<'_>) -> Result<(OwnedFd, Option<Pty>, Rest), String> {
    // A joined UTS namespace keeps its own (not ours to set).
    if let Some(hostname) = args.hostname {
        sethostname(hostname).map_err(|e| format!("--hostname {hostname}: {}", e.desc()))?;
    }
    // The loopback (and the DNS stub's address on it) is the socket
    // factory's to bring up, when the guest first looks at the network
    // namespace (`socket_factory.rs`): most runs never do.
    let become_root = args.shifted_ids.then_some(!args.invoker_is_root);
    view::build(args.plan, args.idmapped, become_root)?;
    // The supervisor measures the view while we drop our privileges.
    args.channel
        .send(&Msg::Built)
        .map_err(|e| format!("reporting the view: {}", e.desc()))?;
    chdir(args.workdir).map_err(|e| format!("workdir {}: {}", args.workdir.display(), e.desc()))?;
    super::host_stdio::take_view_devices(args.view_stdio)?;
    enter_sandbox_cgroup(args)?;
    // Made beside the view's set-up; joined before anything is forked.
    super::netns::join(&args.channel)?;
    // Opened before the filter: afterwards, opens are serviced calls.
    let pty = match args.pty {
        Some(_) => {
            Some(open_pty().map_err(|e| format!("creating the guest's terminal: {}", e.desc()))?)
        }
        None => None,
    };
    let rest = match args.enter_user {
        Some(_) => Rest::Descendants(super::descendants::Descendants::adopt()?),
        None => Rest::Namespace(File::open("/proc/sys/kernel/ns_last_pid").ok()),
    };
    let mut keep = vec![
        args.channel.fd().as_raw_fd(),
        args.start.as_raw_fd(),
        args.exec_report.as_raw_fd(),
    ];
    keep.extend(match &rest {
        Rest::Namespace(last_pid) => last_pid.as_ref().map(|f| f.as_raw_fd()),
        Rest::Descendants(d) => Some(d.fd()),
    });
    if let Some((master, slave)) = &pty {
        keep.extend([master.as_raw_fd(), slave.as_raw_fd()]);
    }
    close_all_except(&keep).map_err(|e| format!("closing descriptors: {}", e.desc()))?;
    // The guest's uptime and boot time are the sandbox's.
    super::timens::fresh_clocks(args.clocks)?;
    super::users::set_guest_caps(args.guest_caps);
    let keep = match args.switch_users {
        true => SETID_CAPS | args.guest_caps,
        false => 0,
    };
    privs::drop_privileges_keeping(keep, args.guest_caps, args.guest_caps == 0)?;
    // The fence keeps a racing guest's native opens off the kernel's own
    // procfs; the scope, defence in depth (the netstack's sockets live in
    // the sandbox's own network namespace: socket_factory.rs), keeps it
    // from abstract names made outside its domain (sys/landlock.rs).
    // Without Landlock (or before 6.12, without the scope) the guest goes
    // without; the supervisor asked the kernel the same (`Sandbox::fenced`).
    if args.landlock {
        let grants = match args.fence {
            true => Some(fence_grants().map_err(|e| format!("landlock rules: {}", e.desc()))?),
            false => None,
        };
        match crate::sys::landlock::confine_guest(grants.as_deref()) {
            Ok(()) => {}
            // The supervisor counts on the fence (fewer covers, and
            // CONTINUE for the reads it admits): only the scope may fail.
            Err(Errno::EOPNOTSUPP) | Err(Errno::ENOSYS) if !args.fence => {}
            Err(e) => return Err(format!("landlock: {}", e.desc())),
        }
    }
    Ok((privs::install_filter(args.filter)?, pty, rest))
}

/// What the guest's domain grants reading beneath, in the view init is
/// now rooted in: its top-level entries, and the roots of its mounts
/// beneath them and the directories just below a root with few entries,
/// whose rules end the kernel's rule walk early (`procfs/src/fence.rs`).
fn fence_grants() -> Result<Vec<OwnedFd>, Errno> {
    let root =
        File::open("/").map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    procfs::fence_grants(root.as_fd(), &mount_points())
}

/// The mount points of init's mount namespace (the view's, after the
/// pivot), as its mountinfo names them. Unreadable, none: the fence then
/// grants the top-level entries alone, which cover the mounts as well.
fn mount_points() -> Vec<Vec<u8>> {
    let Ok(text) = crate::proc_text::read("/proc/self/mountinfo", 16 * 1024) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(crate::mountinfo::unescape)
        .collect()
}

/// The pid-1 loop: forwards signals that a process sent (si_code <= 0;
/// a terminal's Ctrl-C reaches the guest directly, through the process
/// group, and is not doubled), reaps every child, and ends when the main
/// process does.
fn supervise(
    main: Pid,
    channel: &Channel,
    signals: &SigSet,
    rest: &Rest,
    offers: super::fast_reads::Offered,
    exec_report: OwnedFd,
) -> ! {
    let mut exec_report = Some(exec_report);
    loop {
        let info = match sigwaitinfo(signals) {
            Ok(info) => info,
            Err(Errno::EINTR) => continue,
            Err(_) => _exit(125),
        };
        if info.signo == super::exec_request::EXEC_SIGNAL as i32 {
            if info.code <= 0 {
                super::exec_request::serve_pending(channel, offers);
            }
        } else if info.signo == Signal::SIGCHLD as i32 {
            if let Some(status) = reap(main) {
                let tasks = match rest {
                    Rest::Namespace(last_pid) => last_pid.as_ref().and_then(tasks_started),
                    Rest::Descendants(_) => None,
                };
                match rest {
                    Rest::Namespace(_) => end_the_rest(),
                    Rest::Descendants(d) => {
                        d.end();
                        close_stdio();
                    }
                }
                // The exec report ends here (the supervisor reads it once
                // it has the status).
                drop(exec_report.take());
                let _ = channel.send(&Msg::Status(status, tasks));
                // The send woke the supervisor as a synchronous wake-up,
                // often onto this CPU, where our exit (the pid namespace's
                // and the memory's teardown, some 150 µs on these VMs)
                // would run before it: it answers first.
                let _ = nix::sched::sched_yield();
                _exit(0);
            }
        } else if info.code <= 0 {
            if let Ok(sig) = Signal::try_from(info.signo) {
                let _ = kill(main, sig);
            }
        }
    }
}

/// Processes and threads started in the sandbox besides init: pids are
/// handed out in order in a fresh namespace (pread passes the filter).
fn tasks_started(last_pid: &File) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 16];
    let n = last_pid.read_at(&mut buf, 0).ok()?;
    let last: u32 = std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()?;
    Some(last.saturating_sub(1))
}

/// Kills every other process of the sandbox and reaps them all, before
/// init reports the main process's status: once the supervisor has the
/// status, nothing of the guest runs any more, and it need not wait for
/// init's own exit (the kernel's teardown of the namespaces: see
/// `Sandbox::release_on_status`). `kill(-1)` from pid 1 reaches every
/// process of the namespace but init, and races no fork (a fork fails
/// once its parent has a fatal signal pending); init has no child left
/// only when every descendant was reparented to it and reaped. Init's
/// stdio goes too: the supervisor's output relays end at their pipes'
/// end of file, which init's copies would hold back until it exits.
fn end_the_rest() {
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    while let Ok(_) | Err(Errno::EINTR) = waitpid(None, None) {}
    close_stdio();
}

/// Init's stdio (see [`end_the_rest`]).
fn close_stdio() {
    for fd in 0..3 {
        let _ = nix::unistd::close(fd);
    }
}

/// Reaps every child that has ended; the raw wait status of `main` if it
/// was among them.
fn reap(main: Pid) -> Option<i32> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return Some((code & 0xff) << 8),
            Ok(WaitStatus::Signaled(pid, sig, core)) if pid == main => {
                return Some(sig as i32 | if core { 0x80 } else { 0 })
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}
