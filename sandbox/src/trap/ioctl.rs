//! The seccomp user-notification ioctls on the listener fd.
//!
//! Owns: the five `SECCOMP_IOCTL_NOTIF_*` calls, as safe functions over
//! plain structs. Does not own: deciding anything — see `super::worker`.
//! This is one of the few modules with `unsafe`; each block is one ioctl
//! on a descriptor we own, with a pointer to a local of the exact type.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (Linux 6.6): wake the answering
/// worker on the trapping thread's CPU.
const SYNC_WAKE_UP: u64 = 1;

/// One trapped call, as the kernel reports it.
#[derive(Clone, Copy, Debug)]
pub struct Notification {
    pub id: u64,
    /// Host thread id of the caller.
    pub pid: u32,
    pub nr: i32,
    pub arch: u32,
    pub args: [u64; 6],
}

/// Waits for the next trapped call (`SECCOMP_IOCTL_NOTIF_RECV`).
pub fn recv(listener: BorrowedFd<'_>) -> Result<Notification, Errno> {
    // SAFETY: all-zero is a valid `seccomp_notif` (plain integers); the
    // kernel requires it zeroed on input.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: `listener` is a live fd; `n` is a writable `seccomp_notif`,
    // the exact type the request number encodes.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
    Errno::result(r)?;
    Ok(Notification {
        id: n.id,
        pid: n.pid,
        nr: n.data.nr,
        arch: n.data.arch,
        args: n.data.args,
    })
}

/// Answers a call with a value or an error (`SECCOMP_IOCTL_NOTIF_SEND`).
/// `continue_call` lets the kernel run the call itself instead.
pub fn send(
    listener: BorrowedFd<'_>,
    id: u64,
    val: i64,
    error: i32,
    continue_call: bool,
) -> Result<(), Errno> {
    let flags = if continue_call {
        libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
    } else {
        0
    };
    let mut resp = libc::seccomp_notif_resp {
        id,
        val,
        error,
        flags,
    };
    // SAFETY: `resp` is a fully initialised `seccomp_notif_resp` that
    // outlives the call; the kernel only reads it.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp,
        )
    };
    Errno::result(r).map(drop)
}

/// Whether the call `id` is still waiting for its answer
/// (`SECCOMP_IOCTL_NOTIF_ID_VALID`).
pub fn id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: `id` is a live u64, the type the request encodes.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &mut id,
        )
    };
    r == 0
}

/// Installs `fd` in the caller's table and answers the call with its
/// number, atomically (`SECCOMP_IOCTL_NOTIF_ADDFD` with
/// `SECCOMP_ADDFD_FLAG_SEND`).
pub fn add_fd_and_answer(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
) -> Result<i32, Errno> {
    add_fd(
        listener,
        id,
        fd,
        libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        0,
        cloexec,
    )
}

/// Installs `fd` in the caller's table at number `target`, replacing
/// whatever is there (`SECCOMP_IOCTL_NOTIF_ADDFD` with
/// `SECCOMP_ADDFD_FLAG_SETFD`), without answering the call.
pub fn add_fd_at(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    target: i32,
    cloexec: bool,
) -> Result<(), Errno> {
    let target = u32::try_from(target).map_err(|_| Errno::EBADF)?;
    let flags = libc::SECCOMP_ADDFD_FLAG_SETFD as u32;
    add_fd(listener, id, fd, flags, target, cloexec).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` of `fd` for notification `id`, with the
/// `SECCOMP_ADDFD_FLAG_*` `flags` and (with `SETFD`) the number `newfd`;
/// the ioctl's result.
fn add_fd(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    flags: u32,
    newfd: u32,
    cloexec: bool,
) -> Result<i32, Errno> {
    let newfd_flags = if cloexec { libc::O_CLOEXEC as u32 } else { 0 };
    let mut add = libc::seccomp_notif_addfd {
        id,
        flags,
        srcfd: fd.as_raw_fd() as u32,
        newfd,
        newfd_flags,
    };
    // SAFETY: `add` is a fully initialised `seccomp_notif_addfd`; `fd` is
    // borrowed for the duration of the call, so the kernel dups a live fd.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &mut add,
        )
    };
    Errno::result(r)
}

/// Asks for synchronous wake-ups (Linux 6.6+). Returns whether the kernel
/// accepted.
pub fn set_sync_wake_up(listener: BorrowedFd<'_>) -> bool {
    // SAFETY: this request takes its flags by value in the argument
    // register (not through a pointer), so no memory is shared.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
            SYNC_WAKE_UP,
        )
    };
    r == 0
}
