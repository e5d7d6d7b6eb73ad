//! The socket factory's own seccomp filter: once it has joined the
//! sandbox's namespaces and dropped its privileges, the factory only
//! reads requests, makes `AF_UNIX` sockets, answers and closes its
//! copies. Everything else kills it.
//!
//! Owns: the factory's allow list and installing it. Does not own: the
//! BPF compiler (`policy::bpf::compile_actions`), the raw `seccomp` call
//! (`sys::seccomp`), or the supervisor's own filter (`confine.rs`, which
//! the factory never gets: it is forked before the supervisor confines
//! itself).
//!
//! Default: SECCOMP_RET_KILL_PROCESS. A factory that makes any other call
//! (a file open, an exec, a connect, a ptrace) is dead at once; the
//! supervisor then sees end of file on the channel and the guest's
//! `socket()` fails with ENOBUFS.

use sandbox_syscalls::policy::bpf::{self, Action, SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS};
use sandbox_syscalls::policy::{Cond, Op};
use sysno::Sysno as S;

use crate::launch::privs::to_sock_filter;
use crate::sys::seccomp;

/// Calls the factory's loop makes: the channel (`recvmsg`, `sendmsg`),
/// dropping sockets (`close`), the allocator (`brk`, `munmap`,
/// `mremap`, `madvise`; `mmap` and `mprotect` below), and ending.
const ALLOWED: &[S] = &[
    S::recvmsg,
    S::sendmsg,
    S::close,
    S::brk,
    S::munmap,
    S::mremap,
    S::madvise,
    S::rt_sigreturn,
    S::restart_syscall,
    S::exit,
    S::exit_group,
];

/// `socket` and `socketpair`: `AF_UNIX` only.
const UNIX_ONLY: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskedIn(u32::MAX, &[libc::AF_UNIX as u32]),
}];

/// `mmap`, `mprotect` (malloc's arenas): never executable memory.
const NO_EXEC: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskClear(libc::PROT_EXEC as u32),
}];

/// The factory's filter program.
pub fn program() -> Vec<bpf::Insn> {
    let kill = SECCOMP_RET_KILL_PROCESS;
    let special = [
        (S::socket, Action::If(UNIX_ONLY, SECCOMP_RET_ALLOW, kill)),
        (
            S::socketpair,
            Action::If(UNIX_ONLY, SECCOMP_RET_ALLOW, kill),
        ),
        (S::mmap, Action::If(NO_EXEC, SECCOMP_RET_ALLOW, kill)),
        (S::mprotect, Action::If(NO_EXEC, SECCOMP_RET_ALLOW, kill)),
    ];
    let allow = ALLOWED.iter().map(|s| (*s, Action::Ret(SECCOMP_RET_ALLOW)));
    let list: Vec<_> = special.into_iter().chain(allow).collect();
    bpf::compile_actions(&list, kill)
}

/// Installs [`program`] on the factory (single-threaded; no_new_privs is
/// already set by the privilege drop, and set again here).
pub fn install() -> Result<(), nix::errno::Errno> {
    nix::sys::prctl::set_no_new_privs()?;
    seccomp::install_filter(&to_sock_filter(&program()), 0).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf::{evaluate, AUDIT_ARCH_X86_64};

    fn action(s: S, args: [u64; 6]) -> u32 {
        evaluate(&program(), AUDIT_ARCH_X86_64, s.id() as u32, args)
    }

    #[test]
    fn serves_and_nothing_else() {
        for s in ALLOWED {
            assert_eq!(action(*s, [0; 6]), SECCOMP_RET_ALLOW, "{}", s.name());
        }
        let unix = libc::AF_UNIX as u64;
        let inet = libc::AF_INET as u64;
        assert_eq!(action(S::socket, [unix, 1, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(
            action(S::socketpair, [unix, 5, 0, 0, 0, 0]),
            SECCOMP_RET_ALLOW
        );
        for family in [inet, libc::AF_INET6 as u64, libc::AF_NETLINK as u64] {
            let args = [family, 1, 0, 0, 0, 0];
            assert_eq!(action(S::socket, args), SECCOMP_RET_KILL_PROCESS);
            assert_eq!(action(S::socketpair, args), SECCOMP_RET_KILL_PROCESS);
        }
        let rw = (libc::PROT_READ | libc::PROT_WRITE) as u64;
        let rx = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        assert_eq!(action(S::mmap, [0, 4096, rw, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(
            action(S::mmap, [0, 4096, rx, 0, 0, 0]),
            SECCOMP_RET_KILL_PROCESS
        );
        for s in [
            S::openat,
            S::execve,
            S::connect,
            S::bind,
            S::ptrace,
            S::setns,
            S::clone,
            S::pidfd_getfd,
            S::kill,
        ] {
            assert_eq!(action(s, [0; 6]), SECCOMP_RET_KILL_PROCESS, "{}", s.name());
        }
    }
}
