//! The table itself: one `match` over every syscall, grouped by family.
//!
//! Reading guide: a call passes only when it acts on memory, time,
//! signals, futexes, scheduling, or descriptors the guest already holds,
//! or when the kernel resolves it inside the guest's own mount, pid, user,
//! uts and ipc namespaces, which hold nothing the guest may not see (see
//! ARCHITECTURE.md, "Why some path calls pass"). Every path-taking call
//! that the VFS must answer is serviced. Everything else is denied, and
//! any number not named here is denied with ENOSYS.

use nix::errno::Errno::{self, ENOSYS, EOPNOTSUPP, EPERM};
use syscalls::Sysno as S;

use super::{Cond, Fallback, Op, Rule};

/// Clone flags that would create namespaces (the guest gets none).
pub const NS_CLONE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// Terminal ioctls that inject input or take over a terminal.
const TERMINAL_INJECTION: &[u32] = &[
    libc::TIOCSTI as u32,
    libc::TIOCLINUX as u32,
    libc::TIOCSETD as u32,
    libc::TIOCCONS as u32,
];

/// Sockets the guest's kernel makes itself: local ones of the usual
/// types. Internet sockets are the netstack's (serviced); the rest is
/// denied by the socket handler.
const UNIX_SOCKET_TYPES: &[u32] = &[
    libc::SOCK_STREAM as u32,
    libc::SOCK_DGRAM as u32,
    libc::SOCK_SEQPACKET as u32,
];

const CLONE_WITHOUT_NS: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskClear(NS_CLONE_FLAGS),
}];
const IOCTL_SAFE: &[Cond] = &[Cond {
    arg: 1,
    op: Op::NotIn(TERMINAL_INJECTION),
}];
const UNIX_SOCKET: &[Cond] = &[
    Cond {
        arg: 0,
        op: Op::MaskedIn(u32::MAX, &[libc::AF_UNIX as u32]),
    },
    Cond {
        arg: 1,
        op: Op::MaskedIn(0xf, UNIX_SOCKET_TYPES),
    },
];
/// accept/accept4 without an address buffer: the kernel's accept is exact.
const NULL_ARG1: &[Cond] = &[Cond {
    arg: 1,
    op: Op::IsNull,
}];
/// init's sendmsg (sys/fd.rs: `send_with_fd`).
const NOSIGNAL_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskSet(libc::MSG_NOSIGNAL as u32),
}];
/// init's recvmsg (sys/fd.rs: `recv_with_fd`).
const CMSG_CLOEXEC_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskSet(libc::MSG_CMSG_CLOEXEC as u32),
}];
/// sendto/recvfrom without an address (send, recv).
const NULL_ARG4: &[Cond] = &[Cond {
    arg: 4,
    op: Op::IsNull,
}];
/// sendto without an address (send) of a non-empty buffer: an empty
/// send on a TCP socket whose peer closed is serviced (`dgram.rs`).
const NULL_ARG4_DATA_ARG2: &[Cond] = &[
    Cond {
        arg: 4,
        op: Op::IsNull,
    },
    Cond {
        arg: 2,
        op: Op::NotIn(&[0]),
    },
];
/// Open flags of which any one means the open can never be answered
/// with a file the sandbox serves (only plain reads of regular /proc
/// files are, `handlers/sysinfo.rs`): `O_PATH` (nothing to read, and
/// ADDFD cannot install it), write access (`O_WRONLY`, `O_RDWR` or the
/// ioctl-only mode 3) and `O_DIRECTORY` (no served file is a directory).
/// For every such open the handler's answer was CONTINUE: the kernel
/// opens (or creates) in the guest's own view with its credentials.
pub const OPEN_NEVER_SERVED: u32 = (libc::O_PATH | libc::O_ACCMODE | libc::O_DIRECTORY) as u32;
/// open's flags (arg 1) ask for a plain read: serviced.
const OPEN_READS_ARG1: &[Cond] = &[Cond {
    arg: 1,
    op: Op::MaskClear(OPEN_NEVER_SERVED),
}];
/// openat's flags (arg 2) ask for a plain read: serviced.
const OPEN_READS_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskClear(OPEN_NEVER_SERVED),
}];
/// The mark of a fast read: openat's fifth register (r8), which the
/// kernel ignores, holds this value when the guest's preload
/// (`supervisor/guest/fast_reads.c`) makes the call. Any guest code may
/// set it; what passes is what a guest racing the open handler's lookup
/// reaches anyway, and the guest's Landlock domain keeps such an open
/// off the kernel's procfs (ARCHITECTURE.md, "Fast reads").
pub const FAST_READ_MARK: u64 = 0xa5c3_9e4f_17b2_d860;
/// openat's flags ask for a plain read and the call is not marked as a
/// fast read: serviced.
const OPEN_READS_UNMARKED_ARG2: &[Cond] = &[
    Cond {
        arg: 2,
        op: Op::MaskClear(OPEN_NEVER_SERVED),
    },
    Cond {
        arg: 4,
        op: Op::Not64(FAST_READ_MARK),
    },
];
/// `unlinkat(dirfd, path, AT_REMOVEDIR)`: rmdir, serviced.
const REMOVEDIR_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskSet(libc::AT_REMOVEDIR as u32),
}];

/// `lseek(fd, 0, SEEK_SET)`: a rewind, which re-serves a synthetic /proc
/// file (`handlers/rewind.rs`). The offset is a 64-bit `off_t` (IsNull
/// tests the whole register); `whence` an `unsigned int`.
const REWIND: &[Cond] = &[
    Cond {
        arg: 1,
        op: Op::IsNull,
    },
    Cond {
        arg: 2,
        op: Op::MaskedIn(u32::MAX, &[libc::SEEK_SET as u32]),
    },
];

const fn deny(e: Errno) -> Rule {
    Rule::Deny(e)
}

/// The rule for one syscall where the guest may not mark fast reads: a
/// guest without the fence (no Landlock), whose marked opens would reach
/// the kernel's procfs, or one traced (`--trace` shows every open).
pub fn rule_without_fast_reads(nr: S) -> Rule {
    match nr {
        S::openat => Rule::ServiceIf(OPEN_READS_ARG2),
        _ => rule_for(nr),
    }
}

/// The rule for one syscall.
pub fn rule_for(nr: S) -> Rule {
    use Rule::{Pass, PassIf, Service, ServiceIf};
    match nr {
        // ---- Paths: serviced against the VFS. ----------------------------
        // Only a plain read may be answered with a served file; every
        // other open (O_PATH, writing, creating, O_DIRECTORY: flags in a
        // register) was CONTINUEd after the VFS's lookup, which a guest
        // racing the path could dodge anyway, so it passes: the kernel
        // opens in the guest's own view with its own credentials.
        // creat always writes. openat2's flags are in memory: serviced.
        // A plain read marked as a fast read passes too: the guest's
        // preload marks it and serves itself a file of procfs or the
        // covers again unmarked; only a fenced guest gets this rule
        // ([`rule_without_fast_reads`]).
        S::open => ServiceIf(OPEN_READS_ARG1),
        S::openat => ServiceIf(OPEN_READS_UNMARKED_ARG2),
        S::creat => Pass,
        S::openat2 => Service,
        // Path stats pass: `stat(path)` tells the guest nothing that
        // `open(path, O_PATH)` (which passes, above) and `fstat` (which
        // passes) do not, and the kernel answers it in the guest's own
        // view with its own credentials — what the handler answered, at
        // native speed. The covers keep the served /proc files' host
        // sizes out of that view (`launch/proc_view.rs`).
        S::stat | S::lstat | S::newfstatat | S::statx => Pass,
        // The same holds of `access` (the kernel checks the guest's own
        // ids in its own view; it has no capabilities to lend the check)
        // and of `readlink`: a link's text, or a magic link's path printed
        // from the guest's own root, which the handler could only
        // approximate by stripping its root from a path printed from the
        // host's. Every dynamic exec asks `access("/etc/ld.so.preload")`,
        // glibc's `realpath` a readlink of each component.
        S::access | S::faccessat | S::faccessat2 => Pass,
        S::readlink | S::readlinkat => Pass,
        // Making a directory or a node passes: the handler resolved the
        // parent and made the kernel's own call there as the guest (its
        // ids, no capabilities), with `mode & !umask` read from
        // /proc/<tid>/status. The kernel does that natively, and better:
        // under a default ACL it applies the ACL, not the umask (the
        // handler's mode lost group bits the ACL grants), and it lets any
        // user make a socket inode or a whiteout (char 0:0), which the
        // handler refused (EPERM); other devices need CAP_MKNOD in the
        // initial namespace, which the guest never holds (EPERM either
        // way), and overlayfs refuses whiteouts made through it. Nothing
        // is cached against a name made: a new name changes no path that
        // resolved, the plain paths' verdict holds for a directory, file
        // or FIFO of the layer in a removed name's place (only a symlink
        // leads away: serviced, `names_added`), and a name made at the
        // root changes the root's times, which the fence watches. `tar x`,
        // `pip install`, `git clone`, `make` make many directories.
        S::mkdir | S::mkdirat | S::mknod | S::mknodat => Pass,
        // Removing a name that is not a directory passes: the kernel
        // removes it in the guest's own view with its own credentials,
        // what the handler did; the cache of resolved directories keeps
        // only paths through no symlink, which such a removal cannot
        // change (vfs/src/resolve.rs, `cached_dir`). Removing a
        // directory changes cached paths: serviced, the cache starts over.
        S::unlink => Pass,
        S::unlinkat => ServiceIf(REMOVEDIR_ARG2),
        S::rmdir => Service,
        S::rename | S::renameat | S::renameat2 => Service,
        S::link | S::linkat | S::symlink | S::symlinkat => Service,
        // chmod and chown change who may search a directory: serviced,
        // the resolution caches start over (`Resolver::changed`). No
        // procfs mode changes (`handlers/attr.rs`).
        S::chmod | S::fchmodat | S::fchmodat2 => Service,
        S::chown | S::lchown | S::fchownat => Service,
        // Times, size and the file system under a path pass: each handler
        // resolved the path to an `O_PATH` descriptor (an open that passes)
        // and made the kernel's own call on it as the guest, with its ids
        // and no capabilities (`statfs` is `fstatfs`, which passes, of that
        // descriptor; `truncate` checks write permission as the caller).
        // None served a file: a cover's `statfs` says tmpfs either way.
        // None started the resolution caches over: times and size change
        // neither how a path resolves nor who may search a directory. The
        // kernel's errnos were copied in its order (EFAULT, EINVAL for a
        // negative length or bad nanoseconds, both UTIME_OMIT answering 0
        // before any lookup), which the kernel now gives itself.
        S::utime | S::utimes | S::futimesat | S::utimensat => Pass,
        S::truncate | S::statfs => Pass,
        S::inotify_add_watch => Service,

        // ---- Paths the kernel resolves in the guest's own view. ----------
        // exec, chdir and getcwd need the real view anyway (ELF
        // interpreter, #! lines), and a decision taken before CONTINUE
        // could not be trusted; see ARCHITECTURE.md.
        S::execve | S::execveat | S::chdir | S::fchdir | S::getcwd => Pass,

        // Extended attributes by path: the handler resolved the path and
        // answered CONTINUE (the kernel, acting as the guest in its own
        // user namespace, translates the ids in ACLs and file
        // capabilities), a lookup a racing guest could dodge: they pass,
        // as the opens that cannot be served a file do.
        S::setxattr | S::lsetxattr | S::getxattr | S::lgetxattr => Pass,
        S::listxattr | S::llistxattr | S::removexattr | S::lremovexattr => Pass,

        // ---- Descriptors the guest holds. --------------------------------
        S::read | S::write | S::close | S::fstat | S::pread64 | S::pwrite64 => Pass,
        // A rewind may ask a served /proc file for fresh figures (vmstat 1,
        // top -d); every other seek passes.
        S::lseek => ServiceIf(REWIND),
        S::readv | S::writev | S::preadv | S::pwritev | S::preadv2 | S::pwritev2 => Pass,
        S::dup | S::dup2 | S::dup3 | S::fcntl | S::flock | S::close_range => Pass,
        S::fsync | S::fdatasync | S::syncfs | S::sync | S::sync_file_range => Pass,
        S::ftruncate | S::fallocate | S::fadvise64 | S::readahead => Pass,
        // A descriptor's fchmod is serviced: it must not reach a host-wide
        // procfs file, whose mode is the same in every procfs on the host
        // (`handlers/attr.rs`). Giving read to all takes nothing away and
        // still loosens: a root guest's `fchmod(fd, 0444)` of the host's
        // 0400 /proc/slabinfo or /proc/kpageflags made it readable to
        // every user in every procfs mounted after (until 2026-12-01).
        S::fchmod => Service,
        S::fchown | S::fstatfs | S::getdents64 => Pass,
        S::fsetxattr | S::fgetxattr | S::flistxattr | S::fremovexattr => Pass,
        S::sendfile | S::splice | S::tee | S::vmsplice | S::copy_file_range => Pass,
        S::pipe | S::pipe2 | S::memfd_create | S::eventfd | S::eventfd2 => Pass,
        S::signalfd | S::signalfd4 | S::timerfd_create | S::timerfd_settime => Pass,
        S::timerfd_gettime | S::inotify_init | S::inotify_init1 | S::inotify_rm_watch => Pass,
        S::ioctl => PassIf(IOCTL_SAFE, Fallback::Deny(EPERM)),
        S::getdents => deny(ENOSYS),

        // ---- Polling and waiting. ----------------------------------------
        S::poll | S::ppoll | S::select | S::pselect6 => Pass,
        S::epoll_create | S::epoll_create1 | S::epoll_ctl | S::epoll_wait => Pass,
        S::epoll_pwait | S::epoll_pwait2 => Pass,
        S::io_setup | S::io_destroy | S::io_getevents | S::io_submit | S::io_cancel => Pass,
        S::io_pgetevents => Pass,

        // ---- Sockets: internet ones are the netstack's (handlers/net). ---
        // Every call that carries or reports an address or an IP-level
        // option is serviced (CONTINUE for the guest's own AF_UNIX
        // sockets); data calls without addresses pass.
        S::socket => PassIf(UNIX_SOCKET, Fallback::Service),
        S::bind | S::connect | S::getsockname | S::getpeername => Service,
        S::setsockopt | S::getsockopt => Service,
        S::accept | S::accept4 => PassIf(NULL_ARG1, Fallback::Service),
        S::sendto => PassIf(NULL_ARG4_DATA_ARG2, Fallback::Service),
        S::recvfrom => PassIf(NULL_ARG4, Fallback::Service),
        // listen: TCP autobinds an unbound socket (CONTINUE after that).
        S::listen => Service,
        S::socketpair | S::shutdown => Pass,
        // init hands the listener over (sendmsg with MSG_NOSIGNAL, recvmsg
        // with MSG_CMSG_CLOEXEC) after its filter is on, before any worker
        // runs: those flags pass unchecked, as do the mmsg calls. On a
        // netstack socket they know only AF_UNIX names, and Landlock's
        // abstract-socket scope keeps the guest from the supervisor's.
        S::sendmsg => PassIf(NOSIGNAL_ARG2, Fallback::Service),
        S::recvmsg => PassIf(CMSG_CLOEXEC_ARG2, Fallback::Service),
        S::sendmmsg | S::recvmmsg => Pass,

        // ---- Memory. -----------------------------------------------------
        S::mmap | S::mprotect | S::munmap | S::brk | S::mremap | S::msync => Pass,
        S::mincore | S::madvise | S::mlock | S::mlock2 | S::munlock => Pass,
        S::mlockall | S::munlockall | S::remap_file_pages | S::membarrier => Pass,
        S::mbind | S::set_mempolicy | S::get_mempolicy | S::set_mempolicy_home_node => Pass,
        S::pkey_mprotect | S::pkey_alloc | S::pkey_free | S::map_shadow_stack => Pass,
        S::cachestat => Pass,

        // ---- Signals. ----------------------------------------------------
        S::rt_sigaction | S::rt_sigprocmask | S::rt_sigreturn | S::rt_sigpending => Pass,
        S::rt_sigtimedwait | S::rt_sigqueueinfo | S::rt_sigsuspend | S::sigaltstack => Pass,
        S::rt_tgsigqueueinfo | S::kill | S::tkill | S::tgkill | S::pause => Pass,
        S::pidfd_open | S::pidfd_send_signal => Pass,

        // ---- Time and timers. --------------------------------------------
        S::nanosleep | S::clock_nanosleep | S::clock_gettime | S::clock_getres => Pass,
        S::gettimeofday | S::time | S::times | S::getitimer | S::setitimer | S::alarm => Pass,
        S::timer_create | S::timer_settime | S::timer_gettime | S::timer_getoverrun => Pass,
        S::timer_delete => Pass,

        // ---- Futexes and threads. ----------------------------------------
        S::futex | S::futex_waitv | S::futex_wake | S::futex_wait | S::futex_requeue => Pass,
        S::set_tid_address | S::set_robust_list | S::get_robust_list | S::rseq => Pass,
        S::arch_prctl | S::prctl | S::gettid | S::restart_syscall => Pass,

        // ---- Processes. --------------------------------------------------
        S::clone => PassIf(CLONE_WITHOUT_NS, Fallback::Deny(EPERM)),
        // ENOSYS: libc then falls back to clone, whose flags BPF can see.
        S::clone3 => deny(ENOSYS),
        S::fork | S::vfork | S::exit | S::exit_group | S::wait4 | S::waitid => Pass,
        S::seccomp => Pass,
        S::landlock_create_ruleset | S::landlock_add_rule | S::landlock_restrict_self => Pass,

        // ---- Identity and limits: answered by the guest's user, uts and
        // pid namespaces, which hold the sandbox's own ids and names. -----
        S::getpid | S::getppid | S::getuid | S::geteuid | S::getgid | S::getegid => Pass,
        S::getresuid | S::getresgid | S::getgroups | S::getpgrp | S::getpgid => Pass,
        S::getsid | S::setsid | S::setpgid | S::uname | S::umask | S::personality => Pass,
        S::setuid | S::setgid | S::setreuid | S::setregid | S::setresuid | S::setresgid => Pass,
        S::setfsuid | S::setfsgid | S::setgroups | S::capget | S::capset => Pass,
        S::getrlimit | S::setrlimit | S::prlimit64 | S::getrusage => Pass,
        // Memory figures of the sandbox under --memory (sysinfo_call.rs).
        S::sysinfo => Service,
        S::getpriority | S::setpriority | S::getcpu | S::getrandom => Pass,
        S::sched_yield | S::sched_setparam | S::sched_getparam => Pass,
        S::sched_setscheduler | S::sched_getscheduler | S::sched_get_priority_max => Pass,
        S::sched_get_priority_min | S::sched_rr_get_interval => Pass,
        S::sched_setaffinity | S::sched_setattr | S::sched_getattr => Pass,
        // The caller's own mask is cut to the guest's cpu limit (nproc,
        // OpenBLAS); other tasks' masks are the kernel's.
        S::sched_getaffinity => Service,
        S::ioprio_set | S::ioprio_get => Pass,
        S::sethostname | S::setdomainname => deny(EPERM),

        // ---- System V and POSIX IPC: the guest's own ipc namespace. ------
        S::shmget | S::shmat | S::shmctl | S::shmdt => Pass,
        S::semget | S::semop | S::semctl | S::semtimedop => Pass,
        S::msgget | S::msgsnd | S::msgrcv | S::msgctl => Pass,
        S::mq_open | S::mq_unlink | S::mq_timedsend | S::mq_timedreceive => Pass,
        S::mq_notify | S::mq_getsetattr => Pass,

        // ---- Denied: mounts and namespaces. ------------------------------
        S::mount | S::umount2 | S::pivot_root | S::chroot => deny(EPERM),
        S::open_tree | S::move_mount | S::fsopen | S::fsconfig | S::fsmount => deny(EPERM),
        S::fspick | S::mount_setattr | S::statmount | S::listmount => deny(EPERM),
        S::unshare | S::setns => deny(EPERM),
        S::name_to_handle_at | S::open_by_handle_at => deny(EPERM),

        // ---- Denied: reaching into other processes. ----------------------
        S::ptrace | S::process_vm_readv | S::process_vm_writev | S::kcmp => deny(EPERM),
        S::pidfd_getfd | S::process_madvise | S::process_mrelease => deny(EPERM),
        S::migrate_pages | S::move_pages => deny(EPERM),

        // ---- Denied: kernel attack surface with no place in a sandbox. ---
        S::bpf | S::perf_event_open | S::userfaultfd => deny(EPERM),
        S::io_uring_setup | S::io_uring_enter | S::io_uring_register => deny(ENOSYS),
        S::keyctl | S::add_key | S::request_key => deny(ENOSYS),
        S::fanotify_init | S::fanotify_mark => deny(EPERM),
        S::memfd_secret => deny(ENOSYS),
        S::lsm_get_self_attr | S::lsm_set_self_attr | S::lsm_list_modules => deny(EOPNOTSUPP),

        // ---- Denied: the machine itself. ---------------------------------
        S::kexec_load | S::kexec_file_load | S::init_module | S::finit_module => deny(EPERM),
        S::delete_module | S::create_module | S::query_module => deny(EPERM),
        S::get_kernel_syms => deny(ENOSYS),
        S::reboot | S::swapon | S::swapoff | S::acct | S::quotactl | S::quotactl_fd => deny(EPERM),
        S::syslog => deny(EPERM),
        S::iopl | S::ioperm | S::modify_ldt => deny(EPERM),
        S::settimeofday | S::clock_settime | S::clock_adjtime | S::adjtimex => deny(EPERM),
        S::vhangup | S::lookup_dcookie | S::nfsservctl | S::uselib => deny(EPERM),
        S::_sysctl | S::sysfs | S::ustat => deny(ENOSYS),
        S::set_thread_area | S::get_thread_area => deny(ENOSYS),
        S::epoll_ctl_old | S::epoll_wait_old => deny(ENOSYS),
        S::vserver | S::tuxcall | S::security | S::afs_syscall => deny(ENOSYS),
        S::getpmsg | S::putpmsg => deny(ENOSYS),

        // Anything else, present or future, is denied.
        _ => deny(ENOSYS),
    }
}
