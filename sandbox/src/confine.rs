//! The supervisor's own seccomp filter (defence in depth, as runsc does
//! for its Sentry): once the sandbox is launched and the workers serve,
//! every thread of the supervisor may make only the calls listed here.
//!
//! Owns: compiling the filters from the allow list and the kill list
//! (`confine/lists.rs`), and installing them on all threads
//! (`SECCOMP_FILTER_FLAG_TSYNC`; threads started later inherit it). Does not own: the BPF compiler (`policy::bpf::compile_actions`)
//! or the raw `seccomp` call (`sys::seccomp`).
//!
//! Listed calls pass; calls a compromised supervisor would want and never
//! makes legitimately (exec, ptrace, mounts, namespaces, modules, bpf,
//! io_uring, internet sockets, ...) kill the whole process; anything else
//! fails with EPERM, so a rare legitimate path the list missed costs one
//! failed call (logged by the kernel: `SECCOMP_FILTER_FLAG_LOG`), not the
//! sandbox.
//!
//! The refusals the supervisor meets on every run are not news and are
//! not logged: glibc tries `clone3` at each thread it starts and falls
//! back to `clone` on ENOSYS; with egress, glibc's resolver tries a
//! netlink socket and copes with EAFNOSUPPORT. Those come from a filter
//! of their own without the log flag ([`quiet_program`]), which the
//! logged one lets them through to: the kernel runs every filter, takes
//! the strictest answer, and logs only if the filter that gave it asked
//! to. With one filter every sandbox wrote a line or more to the host's
//! kernel log (an audit record per thread started after confinement).

use sandbox_syscalls::policy::bpf::{
    self, Action, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS,
};
use sysno::Sysno as S;

use crate::launch::privs::to_sock_filter;
use crate::sys::seccomp;
pub use lists::{ALLOWED, EGRESS_ALLOWED, KILLED};
use lists::{IOCTLS, THREAD_ONLY, UNIX_ONLY, UNIX_OR_INET};

mod lists;

/// What every call not listed gets.
const EPERM: u32 = SECCOMP_RET_ERRNO | libc::EPERM as u32;

/// What clone3 gets ([`expected_refusals`]).
const CLONE3_REFUSED: u32 = SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

/// The refusals the supervisor meets on every run, for the filter the
/// kernel does not log ([`quiet_program`]): glibc tries clone3 at each
/// thread it starts (clone3's flags sit in memory, out of BPF's reach:
/// ENOSYS makes glibc fall back to clone, whose flags [`program`]
/// checks); with egress, glibc's resolver (the DNS stub's host lookups)
/// opens a NETLINK_ROUTE socket to sort several addresses and copes with
/// EAFNOSUPPORT (other families fail so instead of killing).
fn expected_refusals(egress: bool) -> Vec<(S, Action)> {
    let mut refusals = vec![(S::clone3, Action::Ret(CLONE3_REFUSED))];
    if egress {
        let other_family = SECCOMP_RET_ERRNO | libc::EAFNOSUPPORT as u32;
        let socket = Action::If(UNIX_OR_INET, SECCOMP_RET_ALLOW, other_family);
        refusals.push((S::socket, socket));
    }
    refusals
}

/// The logged filter; `egress`: `--allow-net` was given. The calls of
/// [`expected_refusals`] pass it: the quiet filter, installed before it,
/// answers them.
pub fn program(egress: bool) -> Vec<bpf::Insn> {
    let denied = EPERM;
    let extra = if egress { EGRESS_ALLOWED } else { &[] };
    let left_to_quiet = expected_refusals(egress)
        .into_iter()
        .map(|(s, _)| (s, Action::Ret(SECCOMP_RET_ALLOW)));
    let allow = ALLOWED
        .iter()
        .chain(extra.iter())
        .map(|s| (*s, Action::Ret(SECCOMP_RET_ALLOW)));
    let kill = KILLED
        .iter()
        .map(|s| (*s, Action::Ret(SECCOMP_RET_KILL_PROCESS)));
    let special = [
        (S::ioctl, Action::If(IOCTLS, SECCOMP_RET_ALLOW, denied)),
        (S::clone, Action::If(THREAD_ONLY, SECCOMP_RET_ALLOW, denied)),
        // Without egress (with it, the quiet filter has socket).
        (
            S::socket,
            Action::If(UNIX_ONLY, SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS),
        ),
    ];
    // A call listed twice keeps its first action: the quiet filter's
    // calls pass first.
    let list: Vec<_> = left_to_quiet
        .chain(special)
        .chain(allow)
        .chain(kill)
        .collect();
    bpf::compile_actions(&list, denied)
}

/// The quiet filter: [`expected_refusals`]; every other call passes it.
pub fn quiet_program(egress: bool) -> Vec<bpf::Insn> {
    bpf::compile_actions(&expected_refusals(egress), SECCOMP_RET_ALLOW)
}

/// The supervisor's two filters as the kernel takes them: [`program`]
/// (logged) and [`quiet_program`]. Compiled while init builds the view
/// (`launch_hooks.rs`), when this process would otherwise wait.
pub struct OwnFilters {
    logged: Vec<libc::sock_filter>,
    quiet: Vec<libc::sock_filter>,
}

/// Both filters for a run (`egress`: `--allow-net` was given).
pub fn compiled(egress: bool) -> OwnFilters {
    OwnFilters {
        logged: to_sock_filter(&program(egress)),
        quiet: to_sock_filter(&quiet_program(egress)),
    }
}

/// Installs the filters ([`compiled`]) on every thread of the supervisor:
/// the quiet one first (the logged one forbids `seccomp` itself), and the
/// logged one only if the quiet one is in (alone, it would let clone3
/// through). Call it once the signal thread runs, before the guest's
/// first call is served.
pub fn confine(filters: &OwnFilters) -> Result<(), String> {
    seccomp::install_filter_all_threads(&filters.quiet, 0)
        .and_then(|()| seccomp::install_filter_all_threads(&filters.logged, seccomp::FLAG_LOG))
        .map_err(|e| format!("cannot install the supervisor's own seccomp filter: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf::{evaluate, AUDIT_ARCH_X86_64};

    /// The action part of a seccomp return value, ordered as the kernel
    /// orders them (signed: KILL_PROCESS is the lowest).
    fn action_only(ret: u32) -> i32 {
        (ret & 0xffff_0000) as i32
    }

    /// What the kernel answers under both filters, and whether the answer
    /// is the logged filter's: it runs every filter, newest first, and
    /// keeps the first answer of the strictest action.
    fn kernel(egress: bool, nr: u32, args: [u64; 6]) -> (u32, bool) {
        let quiet = evaluate(&quiet_program(egress), AUDIT_ARCH_X86_64, nr, args);
        let logged = evaluate(&program(egress), AUDIT_ARCH_X86_64, nr, args);
        match action_only(quiet) < action_only(logged) {
            true => (quiet, false),
            false => (logged, true),
        }
    }

    fn action(s: S, args: [u64; 6]) -> u32 {
        kernel(false, s.id() as u32, args).0
    }

    fn with_egress(s: S, args: [u64; 6]) -> u32 {
        kernel(true, s.id() as u32, args).0
    }

    #[test]
    fn egress_opens_internet_sockets_and_no_pairs() {
        // Other families are refused (not killed: glibc's resolver tries
        // NETLINK_ROUTE).
        let (unix, inet, inet6) = (
            libc::AF_UNIX as u64,
            libc::AF_INET as u64,
            libc::AF_INET6 as u64,
        );
        for family in [unix, inet, inet6] {
            assert_eq!(
                with_egress(S::socket, [family, 1, 0, 0, 0, 0]),
                SECCOMP_RET_ALLOW
            );
        }
        let eafnosupport = SECCOMP_RET_ERRNO | libc::EAFNOSUPPORT as u32;
        for family in [libc::AF_PACKET, libc::AF_NETLINK] {
            let args = [family as u64, 3, 0, 0, 0, 0];
            assert_eq!(with_egress(S::socket, args), eafnosupport);
        }
        assert_eq!(with_egress(S::socketpair, [unix, 1, 0, 0, 0, 0]), EPERM);
        assert_eq!(with_egress(S::socketpair, [inet, 1, 0, 0, 0, 0]), EPERM);
        assert_eq!(action(S::socketpair, [unix, 1, 0, 0, 0, 0]), EPERM);
        assert_eq!(with_egress(S::sendmmsg, [0; 6]), SECCOMP_RET_ALLOW);
        assert_eq!(action(S::sendmmsg, [0; 6]), EPERM);
        assert_eq!(with_egress(S::setsockopt, [0; 6]), SECCOMP_RET_ALLOW);
        assert_eq!(with_egress(S::uname, [0; 6]), SECCOMP_RET_ALLOW);
        assert_eq!(action(S::uname, [0; 6]), EPERM);
        for s in [S::execve, S::ptrace, S::setns] {
            assert_eq!(with_egress(s, [0; 6]), SECCOMP_RET_KILL_PROCESS);
        }
    }

    #[test]
    fn lists_are_disjoint_and_compiled() {
        for s in ALLOWED {
            assert!(!KILLED.contains(s), "{}", s.name());
            assert_eq!(action(*s, [0; 6]), SECCOMP_RET_ALLOW, "{}", s.name());
        }
        for s in KILLED {
            assert_eq!(action(*s, [0; 6]), SECCOMP_RET_KILL_PROCESS, "{}", s.name());
        }
        assert_eq!(action(S::setuid, [0; 6]), EPERM);
        assert!(program(false).len() < 4096 && program(true).len() < 4096);
        assert!(quiet_program(true).len() < 64);
    }

    #[test]
    fn only_the_expected_refusals_go_unlogged() {
        let (inet, netlink) = (libc::AF_INET as u64, libc::AF_NETLINK as u64);
        let arg_sets = [[0u64; 6], [inet, 1, 0, 0, 0, 0], [netlink, 3, 0, 0, 0, 0]];
        for egress in [false, true] {
            let quiet = quiet_program(egress);
            for nr in 0..=S::last().id() as u32 {
                for args in arg_sets {
                    let (answer, logged) = kernel(egress, nr, args);
                    let by_quiet = evaluate(&quiet, AUDIT_ARCH_X86_64, nr, args);
                    let expected = expected_refusals(egress)
                        .iter()
                        .any(|(s, _)| s.id() as u32 == nr);
                    assert!(logged || expected, "nr {nr} {args:?} egress {egress}");
                    if by_quiet != SECCOMP_RET_ALLOW {
                        assert!(!logged, "nr {nr} {args:?}: {answer:#x}");
                    }
                }
            }
            assert_eq!(
                kernel(egress, S::clone3.id() as u32, [0; 6]),
                (CLONE3_REFUSED, false)
            );
        }
        let socket = S::socket.id() as u32;
        let nl = [netlink, 3, 0, 0, 0, 0];
        let eafnosupport = SECCOMP_RET_ERRNO | libc::EAFNOSUPPORT as u32;
        assert_eq!(kernel(true, socket, nl), (eafnosupport, false));
        // Without egress a netlink socket kills, and the kill is logged.
        assert_eq!(kernel(false, socket, nl), (SECCOMP_RET_KILL_PROCESS, true));
    }

    #[test]
    fn argument_checks() {
        let thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64;
        assert_eq!(action(S::clone, [thread, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        let fork = libc::SIGCHLD as u64;
        assert_eq!(action(S::clone, [fork, 0, 0, 0, 0, 0]), EPERM);
        let ns = thread | libc::CLONE_NEWNET as u64;
        assert_eq!(action(S::clone, [ns, 0, 0, 0, 0, 0]), EPERM);
        let recv = libc::SECCOMP_IOCTL_NOTIF_RECV;
        assert_eq!(action(S::ioctl, [3, recv, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        let fionread = libc::FIONREAD;
        assert_eq!(
            action(S::ioctl, [9, fionread, 0, 0, 0, 0]),
            SECCOMP_RET_ALLOW
        );
        let tiocsti = libc::TIOCSTI;
        assert_eq!(action(S::ioctl, [0, tiocsti, 0, 0, 0, 0]), EPERM);
        let inet = libc::AF_INET as u64;
        assert_eq!(
            action(S::socket, [inet, 1, 0, 0, 0, 0]),
            SECCOMP_RET_KILL_PROCESS
        );
        let unix = libc::AF_UNIX as u64;
        assert_eq!(action(S::socket, [unix, 1, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        let netlink = libc::AF_NETLINK as u64;
        assert_eq!(
            action(S::socket, [netlink, 2, 0, 0, 0, 0]),
            SECCOMP_RET_KILL_PROCESS
        );
    }
}
