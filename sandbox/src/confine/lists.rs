//! What the supervisor's own filter lets through and what it kills: the
//! calls it makes after launch ([`ALLOWED`], and [`EGRESS_ALLOWED`] with
//! `--allow-net`), the calls an attacker who took it over would reach for
//! ([`KILLED`]), and the argument checks of the calls it makes only in
//! part (its ioctls, clone as threads, the socket families).
//!
//! Owns the lists and why each call is on them. Does not own compiling
//! or installing the filter (`confine.rs`).

use sandbox_syscalls::policy::{Cond, Op, NS_CLONE_FLAGS};
use sysno::Sysno as S;

/// Calls the supervisor makes after launch: the handlers and the VFS
/// (resolution, metadata, directory changes), the trap (listener ioctls,
/// guest memory, pidfds, /proc reads), the main thread's wait and the
/// signal thread, the report, and the Rust runtime (memory, threads,
/// signals, time).
pub const ALLOWED: &[S] = &[
    // Descriptors and plain I/O.
    S::read,
    S::write,
    S::pread64,
    S::pwrite64,
    S::readv,
    S::writev,
    S::lseek,
    S::close,
    S::dup,
    S::dup3,
    S::fcntl,
    S::getdents64,
    S::poll,
    S::ppoll,
    // Files, resolved by the VFS (openat2 in the view's root).
    S::openat,
    S::openat2,
    S::fstat,
    S::newfstatat,
    S::statx,
    S::fstatfs,
    S::readlink,
    S::readlinkat,
    S::unlinkat,
    S::renameat,
    S::renameat2,
    S::linkat,
    S::symlinkat,
    S::fchmod,
    S::fchmodat,
    S::fchmodat2,
    S::fchown,
    S::fchownat,
    // The guest's extended attributes (syscalls/src/handlers/xattr.rs).
    S::setxattr,
    S::fsetxattr,
    // Device nodes the guest asks for (trap/nodes.rs: the one thread
    // that holds CAP_MKNOD) and those the workers refuse by the kernel.
    S::mknodat,
    S::ftruncate,
    S::inotify_add_watch,
    // Flushing --rw sources once the guest has ended (launch/flush.rs),
    // and the guest's sync (syscalls/src/handlers/sync.rs).
    S::syncfs,
    // The synthetic /proc files under limits (sealed with fcntl).
    S::memfd_create,
    // The trap: guest memory, guest descriptors, the guest's pid.
    S::process_vm_readv,
    S::process_vm_writev,
    S::pidfd_open,
    S::pidfd_getfd,
    // Limits: the watchdog's kill (a pidfd: never a reused pid).
    S::pidfd_send_signal,
    // The netstack: the guest's TCP/UDP sockets are AF_UNIX sockets the
    // handlers create, bind, connect, accept on and name.
    S::bind,
    S::connect,
    S::accept4,
    S::getsockname,
    S::getpeername,
    S::sendto,
    // Serviced waits read the socket's SO_RCVTIMEO/SO_SNDTIMEO; a
    // connect's stand-in (egress, or a loopback backlog that is full)
    // shrinks its send buffer.
    S::getsockopt,
    S::setsockopt,
    // Relays (egress, --publish): splice through a pipe, half-close; the
    // DNS stub's and --publish's datagram sockets.
    S::shutdown,
    S::splice,
    S::pipe2,
    S::recvfrom,
    // Waiting for the guest, forwarding signals, the control channel.
    S::recvmsg,
    // The OCI monitor: handing `exec` requests (accepted with the
    // netstack's accept4 above) to init.
    S::sendmsg,
    S::wait4,
    S::kill,
    S::getrusage,
    // Memory.
    S::mmap,
    S::munmap,
    S::mremap,
    S::madvise,
    S::mprotect,
    S::brk,
    // Threads: the pool grows when a serviced call blocks.
    S::futex,
    S::set_robust_list,
    S::rseq,
    S::sigaltstack,
    S::prctl,
    S::sched_getaffinity,
    S::sysinfo,
    S::sched_yield,
    S::capget,
    S::capset,
    S::gettid,
    S::getpid,
    S::exit,
    S::exit_group,
    // Signals, time, randomness, ids.
    S::rt_sigaction,
    S::rt_sigprocmask,
    S::rt_sigreturn,
    S::tgkill,
    S::clock_gettime,
    // The answers to a guest's clock_getres, times and priority range
    // (syscalls/src/handlers/clock.rs, task_stat.rs).
    S::clock_getres,
    S::times,
    S::sched_get_priority_max,
    S::sched_get_priority_min,
    S::clock_nanosleep,
    S::nanosleep,
    // A sleep interrupted by a stop (SIGSTOP/SIGCONT, a debugger) is
    // resumed by the kernel through restart_syscall; without it the
    // watchdog's sleep fails with EPERM and std panics.
    S::restart_syscall,
    S::getrandom,
    S::getuid,
    S::getgid,
    S::geteuid,
    S::getegid,
    // A worker taking a caller's ids (trap/creds.rs: only with a range
    // of ids mapped; otherwise the workers hold no CAP_SETUID/SETGID).
    S::setfsuid,
    S::setfsgid,
    S::setgroups,
    // ...and the groups it acts with, to take them back after an open
    // made with the supervisor's own (`creds::with_own`).
    S::getgroups,
];

/// Calls allowed only when `--allow-net` gives egress: the host
/// resolver's (the DNS stub's lookups through getaddrinfo) batched
/// queries, and `uname` (its first query takes the host name's domain
/// as the default one). Until 2026-12-04 `uname` was refused, and
/// logged, at each lookup that asked a name server.
/// (A relayed connection's unix pair comes from the socket factory:
/// `socketpair` is EPERM here.) Also `listen`: an OCI container's guest
/// listeners are published on its network namespace as they open
/// (`network.rs`, `Listeners`), after the confinement.
pub const EGRESS_ALLOWED: &[S] = &[S::sendmmsg, S::uname, S::listen];

/// Calls that kill the supervisor (and with it, by PDEATHSIG, the
/// sandbox): what an attacker who took over the supervisor would reach
/// for, and what it never does once launched.
pub const KILLED: &[S] = &[
    S::execve,
    S::execveat,
    S::ptrace,
    S::process_madvise,
    S::mount,
    S::umount2,
    S::pivot_root,
    S::chroot,
    S::move_mount,
    S::open_tree,
    S::fsopen,
    S::fsconfig,
    S::fsmount,
    S::fspick,
    S::mount_setattr,
    S::setns,
    S::unshare,
    S::bpf,
    S::perf_event_open,
    S::userfaultfd,
    S::io_uring_setup,
    S::io_uring_enter,
    S::io_uring_register,
    S::kexec_load,
    S::kexec_file_load,
    S::init_module,
    S::finit_module,
    S::delete_module,
    S::reboot,
    S::swapon,
    S::swapoff,
    S::acct,
    S::iopl,
    S::ioperm,
    S::open_by_handle_at,
    S::name_to_handle_at,
    S::keyctl,
    S::add_key,
    S::request_key,
];

/// `ioctl` requests: the listener's, reading or setting a terminal's
/// modes and window size (the pseudo-terminal relay), and a caller's ids
/// (`PIDFD_GET_INFO`, trap/creds.rs), the bytes a socket holds
/// (`FIONREAD`). Never TIOCSTI.
pub(super) const IOCTLS: &[Cond] = &[Cond {
    arg: 1,
    op: Op::MaskedIn(
        u32::MAX,
        &[
            libc::SECCOMP_IOCTL_NOTIF_RECV as u32,
            libc::SECCOMP_IOCTL_NOTIF_SEND as u32,
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as u32,
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as u32,
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS as u32,
            libc::TCGETS as u32,
            libc::TCSETS as u32,
            libc::TCSETSW as u32,
            libc::TCSETSF as u32,
            libc::TIOCGWINSZ as u32,
            libc::TIOCSWINSZ as u32,
            crate::sys::pidfd::PIDFD_GET_INFO as u32,
            // The resolver sizes a name server's UDP answer by it.
            libc::FIONREAD as u32,
        ],
    ),
}];

/// `clone` makes threads only, in this process's namespaces.
pub(super) const THREAD_ONLY: &[Cond] = &[
    Cond {
        arg: 0,
        op: Op::MaskSet(libc::CLONE_THREAD as u32),
    },
    Cond {
        arg: 0,
        op: Op::MaskClear(NS_CLONE_FLAGS),
    },
];

/// Sockets: the netstack makes AF_UNIX ones; without egress internet
/// ones are an attacker's, as is any other family (killed).
pub(super) const UNIX_ONLY: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskedIn(u32::MAX, &[libc::AF_UNIX as u32]),
}];

/// With egress the supervisor dials allowed destinations itself: also
/// AF_INET and AF_INET6 (any other family is still killed).
pub(super) const UNIX_OR_INET: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskedIn(
        u32::MAX,
        &[
            libc::AF_UNIX as u32,
            libc::AF_INET as u32,
            libc::AF_INET6 as u32,
        ],
    ),
}];
