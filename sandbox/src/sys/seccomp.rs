//! Installing a seccomp filter: the guest's (with a notification listener)
//! and the supervisor's own (on all its threads).

use std::os::fd::{FromRawFd, OwnedFd};

use nix::errno::Errno;

pub const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
pub const FLAG_NEW_LISTENER: libc::c_uint = 1 << 3;
pub const FLAG_WAIT_KILLABLE_RECV: libc::c_uint = 1 << 5;

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, prog)`; with
/// `FLAG_NEW_LISTENER` the kernel returns the listener descriptor.
/// The caller must have set no_new_privs (or hold CAP_SYS_ADMIN).
pub fn install_filter(
    prog: &[libc::sock_filter],
    flags: libc::c_uint,
) -> nix::Result<Option<OwnedFd>> {
    let ret = Errno::result(seccomp_set_mode_filter(prog, flags)?)?;
    if flags & FLAG_NEW_LISTENER == 0 {
        return Ok(None);
    }
    // SAFETY: with NEW_LISTENER the return value is a fresh descriptor
    // that nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(ret as libc::c_int) }))
}

pub const FLAG_TSYNC: libc::c_uint = 1;
pub const FLAG_LOG: libc::c_uint = 1 << 1;

/// Installs `prog` on every thread of this process (`FLAG_TSYNC`, plus
/// the other `flags`), setting no_new_privs first. Errors come back as
/// one line (the kernel names a thread it could not synchronise).
pub fn install_filter_all_threads(
    prog: &[libc::sock_filter],
    flags: libc::c_uint,
) -> Result<(), String> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {}", e.desc()))?;
    // Without NEW_LISTENER no descriptor comes back.
    let ret = seccomp_set_mode_filter(prog, flags | FLAG_TSYNC)
        .map_err(|_| "filter too long".to_string())?;
    match ret {
        0 => Ok(()),
        tid if tid > 0 => Err(format!("thread {tid} cannot take the filter")),
        _ => Err(Errno::last().desc().to_string()),
    }
}

/// The raw `seccomp(SECCOMP_SET_MODE_FILTER, flags, prog)`: the kernel's
/// return value, or E2BIG for a program longer than a `sock_fprog` holds.
fn seccomp_set_mode_filter(
    prog: &[libc::sock_filter],
    flags: libc::c_uint,
) -> nix::Result<libc::c_long> {
    let len = u16::try_from(prog.len()).map_err(|_| Errno::E2BIG)?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points at `len` valid instructions that outlive the
    // call; the kernel copies the program before returning.
    Ok(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    })
}
