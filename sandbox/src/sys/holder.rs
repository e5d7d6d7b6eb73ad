//! A child that only holds new namespaces open (an idmapped copy's user
//! namespace) while the caller writes its maps and opens them, made with
//! `CLONE_VM` on a small stack of its own: the clone copies none of the
//! supervisor's page tables and the child's exit tears none down, where a
//! fork-like clone of the supervisor costs about 0.2 ms, and its exit as
//! much again. The child runs one function of raw system calls (no C
//! library code, so it never writes the `errno` it shares with the
//! caller's thread): close its copy of the pipe's write end, read until
//! the caller closes its own, exit.
//!
//! Owns that child and its stack. Not what the namespaces are for
//! (`launch/idmapped.rs`).

use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::wait::waitpid;
use nix::unistd::{pipe, Pid};

/// The holder's stack: its function makes three system calls and
/// nothing else.
const STACK_SIZE: usize = 16 * 1024;

/// A child in new namespaces, alive until [`Holder::release`] (or drop).
pub struct Holder {
    pid: Pid,
    /// The pipe's write end: closing it lets the child leave.
    hold: Option<OwnedFd>,
    /// The child's stack, in memory it shares with us: kept until the
    /// child is reaped.
    _stack: Box<[u8]>,
}

/// A released holder on its way out: dropping it reaps the child (at once,
/// if it has left by then) and only then frees its stack.
pub struct Leaving {
    _holder: Holder,
}

impl Holder {
    /// A child in the namespaces `flags` asks for (e.g. `CLONE_NEWUSER`).
    pub fn spawn(flags: CloneFlags) -> nix::Result<Holder> {
        let (rx, tx) = pipe()?;
        let mut stack = vec![0u8; STACK_SIZE].into_boxed_slice();
        // The two descriptors, for the child's function: both small
        // non-negative numbers.
        let fds = (rx.as_raw_fd() as u64) | ((tx.as_raw_fd() as u64) << 32);
        let top = stack.as_mut_ptr_range().end as usize & !15;
        let flags = flags.bits() | libc::CLONE_VM | libc::SIGCHLD;
        // SAFETY: the child runs `hold` on `stack`, which we own and keep
        // until the child is reaped (`Drop`), 16-byte aligned at its top as
        // the ABI asks. It shares our memory but touches only that stack:
        // `hold` makes raw system calls on its argument (a number, not a
        // pointer) and returns, after which the C library's clone makes
        // the exit call. Without CLONE_FILES its descriptors are a copy,
        // so what it closes stays open here.
        let pid = unsafe {
            libc::clone(
                hold,
                top as *mut libc::c_void,
                flags,
                fds as usize as *mut libc::c_void,
            )
        };
        let pid = Errno::result(pid)?;
        drop(rx);
        Ok(Holder {
            pid: Pid::from_raw(pid),
            hold: Some(tx),
            _stack: stack,
        })
    }

    /// The child's pid (for `/proc/PID/...`).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Lets the child leave; reap it by dropping what comes back, as late
    /// as suits (its exit then overlaps the caller's work).
    pub fn release(mut self) -> Leaving {
        self.hold = None;
        Leaving { _holder: self }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.hold = None;
        // ECHILD in a forked copy of the caller (the sandbox's init),
        // whose stack copy is then its own to free.
        // The stack goes after this, with the other fields.
        while waitpid(self.pid, None) == Err(Errno::EINTR) {}
    }
}

/// The child's whole life: close the write end, read to end of file, return
/// (the C library's clone then exits with 0).
extern "C" fn hold(arg: *mut libc::c_void) -> libc::c_int {
    let fds = arg as usize as u64;
    let (rx, tx) = ((fds & 0xffff_ffff) as i64, (fds >> 32) as i64);
    let mut byte = 0u8;
    raw_syscall3(libc::SYS_close, tx, 0, 0);
    loop {
        let got = raw_syscall3(libc::SYS_read, rx, &mut byte as *mut u8 as i64, 1);
        if got != -(libc::EINTR as i64) {
            return 0;
        }
    }
}

/// A system call without the C library: no `errno` written.
fn raw_syscall3(nr: i64, a: i64, b: i64, c: i64) -> i64 {
    let ret: i64;
    // SAFETY: `syscall` with the number in rax and three arguments in rdi,
    // rsi, rdx; the kernel clobbers rcx and r11 only. The callers pass
    // close and read of a descriptor, with a buffer on their own stack.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_ns_of(pid: &str) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/{pid}/ns/user")).unwrap()
    }

    #[test]
    fn a_holder_is_in_its_own_namespace_until_released_then_reaped() {
        let holder = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let pid = holder.pid();
        assert_ne!(user_ns_of(&pid.to_string()), user_ns_of("self"));
        // Still there, held: its maps can be written now.
        std::fs::write(format!("/proc/{pid}/setgroups"), "deny").unwrap();
        std::fs::write(
            format!("/proc/{pid}/uid_map"),
            format!("0 {} 1\n", nix::unistd::geteuid()),
        )
        .unwrap();
        let leaving = holder.release();
        drop(leaving);
        // Reaped: no longer our child.
        assert_eq!(waitpid(pid, None), Err(Errno::ECHILD));
    }

    #[test]
    fn a_dropped_holder_is_reaped() {
        let holder = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let pid = holder.pid();
        drop(holder);
        assert_eq!(waitpid(pid, None), Err(Errno::ECHILD));
    }
}
