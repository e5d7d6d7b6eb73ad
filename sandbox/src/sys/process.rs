//! Process creation and signal waiting.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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
    reset_signal_dispositions();
    unblock_signals();
}

/// An empty signal mask (the dispositions reset before: see [`reset_signals`]).
pub fn unblock_signals() {
    use nix::sys::signal::{sigprocmask, SigmaskHow};
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
    let stat = crate::proc_text::read("/proc/self/stat", 4096).ok()?;
    let mut areas = procfs::StatLine::parse(&stat)?
        .fields_from(48)
        .map(|f| f.parse::<usize>().ok());
    let mut next = || areas.next().flatten();
    Some([next()?, next()?, next()?, next()?])
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

/// Sets rlimit `resource` (a Linux `RLIMIT_*` number) of process `pid`
/// to `soft` and `hard` (`u64::MAX`: unlimited). Raising a hard limit
/// needs CAP_SYS_RESOURCE; a soft limit above the hard one is EINVAL.
pub fn prlimit_soft_hard(pid: Pid, resource: u32, soft: u64, hard: u64) -> nix::Result<()> {
    let new = libc::rlimit64 {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `new` is a valid rlimit64 that lives across the call; the
    // old-value pointer is null, so the kernel writes nothing back. An
    // unknown resource number is the kernel's to refuse (EINVAL).
    let ret = unsafe {
        libc::prlimit64(
            pid.as_raw(),
            resource as libc::__rlimit_resource_t,
            &new,
            std::ptr::null_mut(),
        )
    };
    Errno::result(ret).map(drop)
}

/// Size of the stack [`spawn_sharing_memory`] gives its child (touched
/// only as far as the child goes; the lowest page is a guard).
const SPAWN_STACK: usize = 1 << 20;

/// `clone(CLONE_VM | SIGCHLD)` on a stack of its own, as posix_spawn
/// does: the child runs `child` in the caller's memory while the caller
/// waits, until the child executes a program or exits. No copy of the
/// caller's page tables is made, the child takes no copy-on-write fault,
/// and the program it executes tears nothing down.
///
/// The caller waits on a close-on-exec pipe, not with `CLONE_VFORK`: a
/// vfork parent sleeps in the kernel's killable wait, which the load
/// average counts as running, and the sandbox's init may wait so for
/// minutes (a pool's or a session's warm sandbox, its main process
/// waiting for its command; an OCI container created and not started):
/// a pool of 16 idle sandboxes showed a load of 16 with no CPU used. The
/// child's end of the pipe closes when it executes, once the kernel has
/// moved it to the new program's memory, or when it exits, once it has
/// let go of ours; the caller's read of the pipe is an ordinary sleep.
/// Whatever `child` does, it must not close that descriptor (it is
/// numbered 3 or above, above the stdio a child puts in place).
///
/// `child` should end in execve or [`exit_now`] (if it returns, the child
/// exits 125), and must leave alone what the caller owns (its writes are
/// the caller's): it may read through references, make and drop values of
/// its own, and use descriptors by number (its descriptor table is its
/// own copy). The caller must be single-threaded (no other thread may
/// hold a lock the child needs).
///
/// A kernel that refuses to share memory with a child born in another
/// time namespace than the caller (EINVAL; `launch::timens` moves init
/// into its children's, so that init's children may share its memory)
/// gets a child with a copy of the memory instead: the same contract,
/// with page tables copied.
///
/// The child's stack and the pipe's read end come back as [`Spawned`],
/// released when it is dropped: a caller that has nothing more to do
/// with them keeps it until it exits, and the kernel's exit releases
/// them. The caller's wake-up at the child's exec, which often takes the
/// CPU the child's new program is about to use, then does no more than
/// return (an unmap, which flushes the CPUs the child ran on, and a
/// close were some 40 µs of it on these VMs).
pub fn spawn_sharing_memory<F: FnOnce()>(child: F) -> nix::Result<(Pid, Spawned)> {
    extern "C" fn enter<F: FnOnce()>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Option<F>` in spawn_sharing_memory's frame,
        // which stays alive and untouched while the caller waits for this
        // child (on the pipe); only this child takes it.
        let slot = unsafe { &mut *(arg as *mut Option<F>) };
        if let Some(f) = slot.take() {
            f();
        }
        exit_now(125)
    }
    // SAFETY: a fresh private anonymous mapping; no existing memory is
    // touched. Checked for MAP_FAILED below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SPAWN_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(Errno::last());
    }
    let (done, done_by_child) = match exec_or_exit_pipe() {
        Ok(pair) => pair,
        Err(e) => {
            // SAFETY: the mapping made above, used by nothing yet.
            unsafe { libc::munmap(stack, SPAWN_STACK) };
            return Err(e);
        }
    };
    // The closure lives here until the child takes it; never dropped here
    // (the child consumed it, or it is forgotten on failure).
    let mut slot = std::mem::ManuallyDrop::new(Some(child));
    // SAFETY: the guard page is the lowest page of the mapping made above.
    let guarded = unsafe { libc::mprotect(stack, page_size(), libc::PROT_NONE) };
    let pid = match Errno::result(guarded) {
        Ok(_) => {
            let arg = &mut *slot as *mut Option<F> as *mut libc::c_void;
            let clone = |flags: libc::c_int| {
                // SAFETY: the child runs `enter::<F>` on the top of the
                // mapping above (stacks grow down), with `slot` as its
                // argument; this thread makes no other call and touches no
                // memory until `wait_for_close` below has seen the child
                // execute a program or exit, so the child's use of the
                // shared memory never runs beside this thread's, and
                // `slot` and the stack outlive it (without CLONE_VM the
                // child runs on its own copy of both).
                Errno::result(unsafe {
                    libc::clone(
                        enter::<F>,
                        (stack as *mut u8).add(SPAWN_STACK) as *mut libc::c_void,
                        flags,
                        arg,
                    )
                })
            };
            let made = match clone(libc::CLONE_VM | libc::SIGCHLD) {
                Err(Errno::EINVAL) => clone(libc::SIGCHLD),
                made => made,
            };
            drop(done_by_child);
            if made.is_ok() {
                wait_for_close(&done);
            }
            made
        }
        Err(e) => Err(e),
    };
    // The child no longer runs on the stack (it executed a program,
    // exited, or was never made); nothing else refers to the mapping.
    let spawned = Spawned { stack, _done: done };
    pid.map(|pid| (Pid::from_raw(pid), spawned))
}

/// What [`spawn_sharing_memory`] leaves once its child has executed a
/// program or exited: the stack it ran on and the pipe's read end, which
/// nothing refers to any more. Dropping it unmaps and closes them.
pub struct Spawned {
    stack: *mut libc::c_void,
    /// Held only to be closed with the rest.
    _done: OwnedFd,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // SAFETY: the mapping `spawn_sharing_memory` made for its child,
        // which no longer runs on it; this is its only owner.
        unsafe { libc::munmap(self.stack, SPAWN_STACK) };
    }
}

/// A close-on-exec pipe (read end, write end), both numbered 3 or above.
fn exec_or_exit_pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let above_stdio = |fd: OwnedFd| -> nix::Result<OwnedFd> {
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        let raw = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
        // SAFETY: `raw` is the descriptor F_DUPFD_CLOEXEC just made, ours alone.
        Ok(unsafe { OwnedFd::from_raw_fd(raw) })
    };
    Ok((above_stdio(r)?, above_stdio(w)?))
}

/// Reads `done` until every write end has closed (EOF) or the read fails
/// otherwise; EINTR is read again.
fn wait_for_close(done: &OwnedFd) {
    let mut byte = [0u8; 1];
    while let Err(Errno::EINTR) | Ok(1..) = nix::unistd::read(done.as_raw_fd(), &mut byte) {}
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::{waitpid, WaitStatus};

    #[test]
    fn the_spawned_child_shares_memory_and_runs_before_the_caller_goes_on() {
        let mut written = 0u32;
        // Allocation-free child: safe even in the test harness's
        // multi-threaded process.
        let (pid, _spawned) = spawn_sharing_memory(|| {
            written = 7;
            exit_now(3)
        })
        .expect("spawn");
        // The caller waited for the child's exit: its write is ours.
        assert_eq!(written, 7);
        assert_eq!(waitpid(pid, None), Ok(WaitStatus::Exited(pid, 3)));
    }

    #[test]
    fn a_child_that_returns_exits_125() {
        let (pid, _spawned) = spawn_sharing_memory(|| {}).expect("spawn");
        assert_eq!(waitpid(pid, None), Ok(WaitStatus::Exited(pid, 125)));
    }
}
