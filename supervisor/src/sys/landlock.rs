//! Landlock's abstract-unix-socket scope (Linux 6.12, ABI 6): a process
//! in the domain cannot connect or send to an abstract `AF_UNIX` socket
//! created outside it.
//!
//! The guest's TCP/UDP sockets are the supervisor's `AF_UNIX` sockets in
//! the supervisor's network namespace. Calls on them whose address is of
//! `AF_UNIX` form (a `sendmmsg`, or a `connect` CONTINUEd for the guest's
//! own socket while another thread `dup2`s a netstack socket onto the
//! same number) would otherwise reach abstract names of the host's
//! namespace. Under this scope they fail with EPERM.

use std::os::fd::{FromRawFd, OwnedFd};

use nix::errno::Errno;

const CREATE_RULESET_VERSION: libc::c_uint = 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
/// The first ABI with scopes.
const ABI_SCOPES: libc::c_long = 6;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Whether the kernel has the abstract-unix-socket scope (Landlock ABI 6).
pub fn has_abstract_unix_scope() -> bool {
    landlock_abi() >= ABI_SCOPES
}

fn landlock_abi() -> libc::c_long {
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call
    // reads no memory and returns the ABI version (or -1).
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    }
}

/// Puts this process (and everything it starts) in a Landlock domain
/// that handles nothing but the abstract-unix-socket scope. Needs
/// no_new_privs. Err(EOPNOTSUPP) when the kernel has no scopes.
pub fn scope_abstract_unix_sockets() -> Result<(), Errno> {
    if !has_abstract_unix_scope() {
        return Err(Errno::EOPNOTSUPP);
    }
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPE_ABSTRACT_UNIX_SOCKET,
    };
    // SAFETY: `attr` is a live, initialised struct of the size passed;
    // the kernel copies it before returning.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    let fd = Errno::result(fd)?;
    // SAFETY: the kernel returned a fresh descriptor nothing else owns.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    // SAFETY: plain integer arguments; the ruleset fd is live.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            std::os::fd::AsRawFd::as_raw_fd(&ruleset),
            0u32,
        )
    };
    Errno::result(r).map(drop)
}
