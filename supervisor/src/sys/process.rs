//! Process creation and signal waiting.

use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::signal::SigSet;
use nix::unistd::{ForkResult, Pid};

/// Which side of a fork-like call we are on.
pub enum Forked {
    Parent(Pid),
    Child,
}

/// `clone(flags | SIGCHLD)` without a new stack: like `fork`, but the
/// child starts in the namespaces `flags` asks for.
///
/// The child runs on a copy of the caller's memory. Only the calling
/// thread exists in it, so the caller should be single-threaded: a lock
/// another thread held at the time (in the allocator, say) would stay
/// locked in the child.
pub fn clone_process(flags: CloneFlags) -> nix::Result<Forked> {
    let flags = flags.bits() as libc::c_ulong | libc::SIGCHLD as libc::c_ulong;
    // SAFETY: without CLONE_VM and with a null stack pointer the kernel
    // gives the child a private copy of the address space and of the
    // caller's stack, exactly as fork() does; no memory is shared, so
    // neither side can observe the other's writes. The remaining pointer
    // arguments (parent_tid, child_tid, tls) are unused without the
    // matching flags and are passed as null.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0 as libc::c_ulong,
        )
    };
    match Errno::result(ret)? {
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(Pid::from_raw(pid as libc::pid_t))),
    }
}

/// Plain `fork()`, for a process known to be single-threaded (the
/// sandbox's init; the OCI runtime's `create`, forking the monitor).
pub fn fork_single_threaded() -> nix::Result<Forked> {
    // SAFETY: callers only use this in the sandbox's init, which never
    // starts threads, and in `oci create` before it starts any, so the
    // child inherits no lock held by another thread.
    match unsafe { nix::unistd::fork() }? {
        ForkResult::Parent { child } => Ok(Forked::Parent(child)),
        ForkResult::Child => Ok(Forked::Child),
    }
}

/// The part of a `siginfo_t` that signal forwarding needs.
#[derive(Clone, Copy, Debug)]
pub struct SigInfo {
    pub signo: i32,
    /// `si_code`: <= 0 when a process sent it (kill, sigqueue, tgkill),
    /// > 0 when the kernel did (a terminal's Ctrl-C, a child's exit).
    pub code: i32,
}

/// Waits for one of the (blocked) signals in `set`.
pub fn sigwaitinfo(set: &SigSet) -> nix::Result<SigInfo> {
    // SAFETY: siginfo_t is plain data for which all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t for the duration of the call and
    // `info` a valid, writable siginfo_t.
    let ret = unsafe { libc::sigwaitinfo(set.as_ref(), &mut info) };
    Errno::result(ret)?;
    Ok(SigInfo {
        signo: info.si_signo,
        code: info.si_code,
    })
}

/// Resets every standard signal to its default disposition: an ignored
/// signal would otherwise stay ignored across fork and execve (an ignored
/// SIGCHLD would even make children reap themselves).
pub fn reset_signal_dispositions() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, Signal};
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for sig in Signal::iterator().filter(|s| !matches!(s, Signal::SIGKILL | Signal::SIGSTOP)) {
        // SAFETY: SIG_DFL installs no handler, so no code of ours can run
        // in signal context as a result.
        let _ = unsafe { sigaction(sig, &default) };
    }
}

/// Default dispositions and an empty signal mask, as a fresh program expects.
pub fn reset_signals() {
    use nix::sys::signal::{sigprocmask, SigmaskHow};
    reset_signal_dispositions();
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
}

/// Ends this process at once with `code`: no atexit handlers, no stdio
/// flush (a forked child must not flush its parent's buffers).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an integer and never returns; it runs no code
    // of this process.
    unsafe { libc::_exit(code) }
}

/// Overwrites this process's command line and environment strings (the
/// memory `/proc/<pid>/cmdline` and `environ` show) with NULs, leaving
/// "supervisor-init" as the command line. For init, whose memory is a
/// copy of the supervisor's.
pub fn scrub_cmdline_and_environ() {
    let Some([arg_start, arg_end, env_start, env_end]) = string_areas() else {
        return;
    };
    for (start, end) in [(arg_start, arg_end), (env_start, env_end)] {
        if start == 0 || end <= start {
            continue;
        }
        // SAFETY: the kernel reports [start, end) as this process's argv or
        // envp strings, which live on our own initial stack, mapped
        // read-write for the life of the process. Nothing else in init
        // reads them after this point (its guest gets an explicit
        // environment), and no other thread exists to race with.
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
    }
    let name = b"supervisor-init";
    if arg_end - arg_start > name.len() {
        // SAFETY: as above; the name plus its NUL fits inside the argv area.
        unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), arg_start as *mut u8, name.len()) };
    }
}

/// arg_start, arg_end, env_start, env_end: fields 48–51 of /proc/self/stat.
fn string_areas() -> Option<[usize; 4]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<usize>().ok();
    Some([field(48)?, field(49)?, field(50)?, field(51)?])
}

/// A resource limit the supervisor sets on the sandbox's init.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rlimit {
    /// Open descriptors per process (`--nofile`).
    NoFile,
    /// Data segment and private mappings per process (`--memory` without a cgroup).
    Data,
    /// Processes of the user (`--pids` without a cgroup).
    NProc,
    /// CPU seconds per process (`--cpu-time` without a cgroup).
    Cpu,
}

impl Rlimit {
    fn resource(self) -> libc::__rlimit_resource_t {
        match self {
            Rlimit::NoFile => libc::RLIMIT_NOFILE,
            Rlimit::Data => libc::RLIMIT_DATA,
            Rlimit::NProc => libc::RLIMIT_NPROC,
            Rlimit::Cpu => libc::RLIMIT_CPU,
        }
    }

    /// The flag it comes from, for error messages.
    pub fn flag_name(self) -> &'static str {
        match self {
            Rlimit::NoFile => "--nofile",
            Rlimit::Data => "--memory (as RLIMIT_DATA)",
            Rlimit::NProc => "--pids (as RLIMIT_NPROC)",
            Rlimit::Cpu => "--cpu-time (as RLIMIT_CPU)",
        }
    }
}

/// Sets `resource` of process `pid` to `value` (soft and hard; for
/// [`Rlimit::Cpu`] the hard limit is one second later, so SIGXCPU comes
/// before SIGKILL). Raising a hard limit needs CAP_SYS_RESOURCE.
pub fn prlimit(pid: Pid, resource: Rlimit, value: u64) -> nix::Result<()> {
    let hard = if resource == Rlimit::Cpu {
        value.saturating_add(1)
    } else {
        value
    };
    let new = libc::rlimit64 {
        rlim_cur: value,
        rlim_max: hard,
    };
    // SAFETY: `new` is a valid rlimit64 that lives across the call; the
    // old-value pointer is null, so the kernel writes nothing back.
    let ret = unsafe {
        libc::prlimit64(
            pid.as_raw(),
            resource.resource(),
            &new,
            std::ptr::null_mut(),
        )
    };
    Errno::result(ret).map(drop)
}
