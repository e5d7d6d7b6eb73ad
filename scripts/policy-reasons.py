#!/usr/bin/python3
"""The per-call table of docs/policy.md ("Every call the filter passes"):
each syscall `supervisor policy` counts as reachable, with two references
and a reason. Reads `supervisor policy` on stdin, prints Markdown.

References, read from their sources (not guessed):
- runsc: the host calls gVisor's Sentry makes (runsc/boot/filter/config:
  config_main.go's allowedSyscalls, config_amd64.go, the control server's,
  the directfs filters (directfs is on by default), and the systrap
  platform's, pkg/sentry/platform/systrap/filters.go); "args" where that
  filter restricts arguments.
- Docker: moby's profiles/seccomp/default.json with the default
  capabilities (so the CAP_SYS_CHROOT rule counts, CAP_SYS_ADMIN and
  CAP_SYS_NICE rules do not); "args" where the profile tests arguments.
"""
import re
import sys

RUNSC = set("""clock_gettime close dup epoll_create1 epoll_ctl exit exit_group
fallocate fchmod fstat fsync fdatasync ftruncate getpid getrandom gettid
gettimeofday io_setup io_destroy io_getevents io_submit lseek madvise mincore
mlock mprotect munlock munmap nanosleep ppoll pread64 preadv preadv2 pwrite64
pwritev pwritev2 read restart_syscall rt_sigaction rt_sigprocmask rt_sigreturn
sched_yield setitimer sigaltstack sync_file_range timer_delete write wait4
getdents64 fstatfs readlinkat newfstatat mkdirat mknodat symlinkat fgetxattr
flistxattr fremovexattr fsetxattr""".split())
RUNSC_ARGS = set("""dup3 epoll_pwait eventfd2 fcntl futex getcpu getsockopt ioctl
membarrier memfd_create mmap prctl recvmsg recvmmsg sendmmsg sendmsg shutdown
statx tee timer_create timer_settime utimensat writev clone accept4 listen
tgkill fchownat fchmodat unlinkat openat linkat renameat2 ptrace
setpriority""".split())

DOCKER = set("""accept accept4 access adjtimex alarm bind brk capget capset chdir
chmod chown clock_adjtime clock_getres clock_gettime clock_nanosleep close
close_range connect copy_file_range creat dup dup2 dup3 epoll_create
epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat
faccessat2 fadvise64 fallocate fanotify_mark fchdir fchmod fchmodat fchown
fchownat fcntl fdatasync fgetxattr flistxattr flock fork fremovexattr
fsetxattr fstat fstatfs fsync ftruncate futex futex_waitv futimesat getcpu
getcwd getdents getdents64 getegid geteuid getgid getgroups getitimer
getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid
getresuid getrlimit get_robust_list getrusage getsid getsockname getsockopt
get_thread_area gettid gettimeofday getuid getxattr inotify_add_watch
inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy
io_getevents io_pgetevents ioprio_get ioprio_set io_setup io_submit
io_uring_enter io_uring_register io_uring_setup kill landlock_add_rule
landlock_create_ruleset landlock_restrict_self lchown lgetxattr link linkat
listen listxattr llistxattr lremovexattr lseek lsetxattr lstat madvise
membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat
mlock mlock2 mlockall mmap mprotect mq_getsetattr mq_notify mq_open
mq_timedreceive mq_timedsend mq_unlink mremap msgctl msgget msgrcv msgsnd
msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat open
openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc
pkey_free pkey_mprotect poll ppoll prctl pread64 preadv preadv2 prlimit64
process_mrelease pselect6 pwrite64 pwritev pwritev2 read readahead readlink
readlinkat readv recvfrom recvmmsg recvmsg remap_file_pages removexattr
rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction
rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend
rt_sigtimedwait rt_tgsigqueueinfo sched_getaffinity sched_getattr
sched_getparam sched_get_priority_max sched_get_priority_min
sched_getscheduler sched_rr_get_interval sched_setaffinity sched_setattr
sched_setparam sched_setscheduler sched_yield seccomp select semctl semget
semop semtimedop sendfile sendmmsg sendmsg sendto setfsgid setfsuid setgid
setgroups setitimer setpgid setpriority setregid setresgid setresuid
setreuid setrlimit set_robust_list setsid setsockopt set_thread_area
set_tid_address setuid setxattr shmat shmctl shmdt shmget shutdown
sigaltstack signalfd signalfd4 socketpair splice stat statfs statx symlink
symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create
timer_delete timer_getoverrun timer_gettime timer_settime timerfd_create
timerfd_gettime timerfd_settime times tkill truncate umask uname unlink
unlinkat utime utimensat utimes vfork vmsplice wait4 waitid write writev
process_vm_readv process_vm_writev ptrace arch_prctl modify_ldt
chroot""".split())
DOCKER_ARGS = {"socket", "personality", "clone"}

# Why each reachable call passes, by family; every reachable call must
# have one (the script fails otherwise).
REASONS = [
    ("read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2 "
     "close fstat lseek", "I/O on a descriptor the guest holds; the hot path"),
    ("dup dup2 dup3 close_range flock", "its own descriptor table and locks"),
    ("fcntl", "by allowlist of commands (leases and write hints out)"),
    ("ioctl", "by allowlist of requests: terminals, FIO*, interface queries; the rest ENOTTY"),
    ("fsync fdatasync syncfs", "flushes a file system the guest's descriptor is on"),
    ("ftruncate fallocate fadvise64", "size, space and advice of its own files"),
    ("sendfile splice copy_file_range", "moves data between its own descriptors (splice: sendfile's cousin)"),
    ("pipe pipe2 memfd_create eventfd2 signalfd4 timerfd_create timerfd_settime "
     "timerfd_gettime inotify_init inotify_init1 inotify_rm_watch",
     "makes or uses a descriptor of its own"),
    ("fchown fstatfs getdents64 fsetxattr fgetxattr flistxattr fremovexattr",
     "acts on a descriptor it holds, in its own user namespace"),
    ("poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait "
     "epoll_pwait", "waits on its own descriptors"),
    ("socketpair shutdown", "AF_UNIX and netstack sockets it holds; no addresses"),
    ("socket sendto recvfrom",
     "passes only without an address (or AF_UNIX); else the netstack's"),
    ("setsockopt getsockopt",
     "passes marked, for SO_WIFI_STATUS only (a local connection's TCP_NODELAY, docs/network.md); else serviced"),
    ("open openat lseek unlinkat", "the common forms pass; the rare ones are serviced (a served /proc file, rmdir)"),
    ("openat2", "passes marked (the fast reads' opens through no symlink, docs/fast-reads.md); else serviced"),
    ("creat unlink mkdir mkdirat mknod mknodat", "the kernel makes or removes the name in the guest's own view, as the guest"),
    ("stat lstat newfstatat statx access faccessat faccessat2 readlink readlinkat",
     "lookups the kernel answers in the guest's own view (docs/policy.md)"),
    ("utime utimes futimesat utimensat truncate statfs",
     "the kernel's own call on the resolved file, as the guest (docs/policy.md)"),
    ("setxattr lsetxattr getxattr lgetxattr listxattr llistxattr removexattr lremovexattr",
     "the kernel checks the namespace and translates ids in ACLs and file capabilities"),
    ("execve execveat chdir fchdir getcwd", "the kernel resolves them in the guest's own view"),
    ("mmap mprotect munmap brk mremap msync membarrier", "its own address space"),
    ("madvise", "by allowlist of advice: DONTNEED and FREE in every allocator; KSM and poisoning out"),
    ("rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait "
     "rt_sigsuspend sigaltstack pause", "its own signal state"),
    ("kill tkill tgkill pidfd_open pidfd_send_signal",
     "signals within its pid namespace (tkill: musl's raise)"),
    ("nanosleep clock_nanosleep clock_gettime getitimer setitimer alarm "
     "timer_create timer_settime timer_gettime timer_getoverrun timer_delete",
     "its own timers and clocks"),
    ("futex set_tid_address set_robust_list rseq", "threads: glibc's and every runtime's"),
    ("arch_prctl gettid restart_syscall", "its own thread state"),
    ("prctl", "by allowlist of options (perf, TSC, KSM, dispatch out; PR_SET_MM for what needs no privilege)"),
    ("personality", "Docker's list; READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE refused"),
    ("clone", "without namespace flags (clone3: ENOSYS, glibc falls back)"),
    ("fork vfork exit exit_group wait4 waitid", "processes within its pid namespace"),
    ("seccomp", "a filter of its own only narrows what it reaches (Chrome, systemd, sshd)"),
    ("getpid getppid getuid geteuid getgid getegid getresuid getresgid getgroups "
     "getpgrp setsid setpgid uname umask",
     "answered by its own user, pid and uts namespaces"),
    ("setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid "
     "setgroups capget capset", "ids and capabilities within its own user namespace"),
    ("getrlimit setrlimit prlimit64 getrusage", "its own limits and usage"),
    ("getpriority setpriority getrandom", "its own priority; entropy"),
    ("sched_yield sched_setparam sched_setscheduler sched_rr_get_interval sched_setaffinity",
     "scheduling of its own tasks (no real-time without CAP_SYS_NICE)"),
    ("sched_getaffinity", "serviced for the caller under a cpu limit; passes for others"),
    ("shmget shmat shmctl shmdt semget semop semctl semtimedop",
     "its own ipc namespace (PostgreSQL, multiprocessing)"),
]


def main():
    text = sys.stdin.read()
    rows = {r.split("|")[1].strip(): r.split("|")[3] for r in text.splitlines()
            if r.startswith("| pass")}
    passed = [c.strip() for c in rows["pass"].split(",")]
    cond = {}
    for part in rows["pass if (BPF argument check)"].split(";"):
        m = re.match(r"\s*([a-z0-9_]+) \(", part)
        if m:
            cond[m.group(1)] = True
    reason = {}
    for names, why in REASONS:
        for n in names.split():
            reason.setdefault(n, why)
    out = ["| call | class | runsc's Sentry makes it | Docker's default allows it | why it reaches the kernel |",
           "|---|---|---|---|---|"]
    missing = []
    for call in sorted(set(passed) | set(cond)):
        cls = "pass if" if call in cond else "pass"
        runsc = "args" if call in RUNSC_ARGS else ("yes" if call in RUNSC else "no")
        docker = "args" if call in DOCKER_ARGS else ("yes" if call in DOCKER else "no")
        if call not in reason:
            missing.append(call)
        out.append(f"| {call} | {cls} | {runsc} | {docker} | {reason.get(call, '')} |")
    if missing:
        sys.exit(f"no reason for: {' '.join(missing)}")
    n = len(passed) + len(cond)
    in_runsc = sum(1 for c in set(passed) | set(cond) if c in RUNSC | RUNSC_ARGS)
    in_docker = sum(1 for c in set(passed) | set(cond) if c in DOCKER | DOCKER_ARGS)
    out.append("")
    out.append(f"{n} calls: runsc's Sentry makes {in_runsc} of them itself, "
               f"Docker's default profile allows {in_docker}.")
    print("\n".join(out))


main()
