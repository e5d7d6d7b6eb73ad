//! Per-thread filesystem ids and groups: the raw `setfsuid`, `setfsgid`
//! and `setgroups` system calls. They change only the calling thread's
//! credentials (glibc's `setgroups` wrapper changes every thread of the
//! process: it signals each one), which is what a trap worker acting for
//! one guest process needs.
//!
//! Owns only these three raw calls. Does not own when to make them
//! (`trap/creds.rs`).

use nix::errno::Errno;

/// The kernel's "leave unchanged" id, which makes `setfsuid` a query.
const QUERY: libc::c_long = -1;

/// Sets the calling thread's filesystem uid; EPERM if the kernel kept
/// another (setfsuid reports no error of its own).
pub fn set_fsuid(uid: u32) -> Result<(), Errno> {
    // SAFETY: integer arguments only; affects the calling thread alone.
    // The second call changes nothing and returns the current fsuid.
    let now = unsafe {
        libc::syscall(libc::SYS_setfsuid, uid as libc::c_long);
        libc::syscall(libc::SYS_setfsuid, QUERY)
    };
    match now == libc::c_long::from(uid) {
        true => Ok(()),
        false => Err(Errno::EPERM),
    }
}

/// The calling thread's filesystem uid and gid.
pub fn fs_ids() -> (u32, u32) {
    // SAFETY: integer arguments only; the "leave unchanged" id changes
    // nothing and returns the current one.
    let (uid, gid) = unsafe {
        (
            libc::syscall(libc::SYS_setfsuid, QUERY),
            libc::syscall(libc::SYS_setfsgid, QUERY),
        )
    };
    (uid as u32, gid as u32)
}

/// Sets the calling thread's filesystem gid, as [`set_fsuid`].
pub fn set_fsgid(gid: u32) -> Result<(), Errno> {
    // SAFETY: as in set_fsuid.
    let now = unsafe {
        libc::syscall(libc::SYS_setfsgid, gid as libc::c_long);
        libc::syscall(libc::SYS_setfsgid, QUERY)
    };
    match now == libc::c_long::from(gid) {
        true => Ok(()),
        false => Err(Errno::EPERM),
    }
}

/// The calling thread's supplementary groups.
pub fn set_groups(groups: &[u32]) -> Result<(), Errno> {
    // SAFETY: the kernel reads `groups.len()` gids from a live slice.
    let r = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    Errno::result(r).map(drop)
}
