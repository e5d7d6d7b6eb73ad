//! A child that only holds namespaces open while the caller writes their
//! maps or opens them: an idmapped copy's new user namespace, or the
//! sandbox's network namespace, made in the sandbox's user namespace once
//! the child has joined it (`launch/netns.rs`). Made with `CLONE_VM` on a
//! small stack of its own: the clone copies none of the supervisor's page
//! tables and the child's exit tears none down, where a fork-like clone
//! of the supervisor costs about 0.2 ms, and its exit as much again. The
//! child runs one function of raw system calls (no C library code, so it
//! never writes the `errno` it shares with the caller's thread): join a
//! user namespace and unshare, if asked, and report how that went; close
//! every descriptor it was not given (its copy of the pipe's write end,
//! and any other holder's that the clone copied), read until the caller
//! closes its own, exit.
//!
//! Owns that child and its stack. Not what the namespaces are for
//! (`launch/idmapped.rs`, `launch/netns.rs`).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::sys::wait::waitpid;
use nix::unistd::{pipe2, Pid};

/// The holder's stack: its function makes a few system calls and
/// nothing else.
const STACK_SIZE: usize = 16 * 1024;

/// A child in new namespaces, alive until [`Holder::release`] (or drop).
pub struct Holder {
    pid: Pid,
    /// The pipe's write end: closing it lets the child leave.
    hold: Option<OwnedFd>,
    /// Where a joining child reports (`spawn_joining`); `None` once read.
    report: Option<OwnedFd>,
    /// What the child reads, and its stack, in memory it shares with us:
    /// kept until the child is reaped.
    _orders: Box<Orders>,
    _stack: Box<[u8]>,
}

/// The child's orders: descriptor numbers (-1: none) and flags.
#[repr(C)]
struct Orders {
    /// The pipe the child reads to its end, and the caller's end of it.
    rx: i32,
    tx: i32,
    /// Where the child writes its errno (0: done) after the two steps below.
    report: i32,
    /// A user namespace to join first.
    userns: i32,
    /// Then `unshare` these.
    unshare: i32,
}

/// A released holder on its way out: dropping it reaps the child (at once,
/// if it has left by then) and only then frees its stack.
pub struct Leaving {
    _holder: Holder,
}

impl Holder {
    /// A child in the namespaces `flags` asks for (e.g. `CLONE_NEWUSER`).
    pub fn spawn(flags: CloneFlags) -> nix::Result<Holder> {
        Holder::clone_child(flags.bits(), None, 0)
    }

    /// A child that joins `userns` and then unshares `flags` there (e.g.
    /// `CLONE_NEWNET`: a network namespace that user namespace owns),
    /// while the caller goes on; [`Holder::ready`] waits for it.
    pub fn spawn_joining(userns: BorrowedFd<'_>, flags: CloneFlags) -> nix::Result<Holder> {
        Holder::clone_child(0, Some(userns), flags.bits())
    }

    fn clone_child(
        clone_flags: i32,
        userns: Option<BorrowedFd<'_>>,
        unshare: i32,
    ) -> nix::Result<Holder> {
        let (rx, tx) = pipe2(OFlag::O_CLOEXEC)?;
        let (report_rx, report_tx) = match userns {
            Some(_) => {
                let (r, w) = pipe2(OFlag::O_CLOEXEC)?;
                (Some(r), Some(w))
            }
            None => (None, None),
        };
        let orders = Box::new(Orders {
            rx: rx.as_raw_fd(),
            tx: tx.as_raw_fd(),
            report: report_tx.as_ref().map_or(-1, AsRawFd::as_raw_fd),
            userns: userns.map_or(-1, |u| u.as_raw_fd()),
            unshare,
        });
        let mut stack = vec![0u8; STACK_SIZE].into_boxed_slice();
        let top = stack.as_mut_ptr_range().end as usize & !15;
        let flags = clone_flags | libc::CLONE_VM | libc::SIGCHLD;
        let arg = &*orders as *const Orders as *mut libc::c_void;
        // SAFETY: the child runs `hold` on `stack`, which we own and keep
        // until the child is reaped (`Drop`), 16-byte aligned at its top as
        // the ABI asks. It shares our memory but touches only that stack
        // and reads `orders`, kept as long: `hold` makes raw system calls
        // and returns, after which the C library's clone makes the exit
        // call. Without CLONE_FILES its descriptors are a copy, so what it
        // closes stays open here.
        let pid = unsafe { libc::clone(hold, top as *mut libc::c_void, flags, arg) };
        let pid = Errno::result(pid)?;
        drop((rx, report_tx));
        Ok(Holder {
            pid: Pid::from_raw(pid),
            hold: Some(tx),
            report: report_rx,
            _orders: orders,
            _stack: stack,
        })
    }

    /// Waits until a child of [`Holder::spawn_joining`] is in its
    /// namespaces: its errno if it could not get there. Once only.
    pub fn ready(&mut self) -> nix::Result<()> {
        let report = self.report.take().ok_or(Errno::EINVAL)?;
        let mut code = [0u8; 4];
        loop {
            match nix::unistd::read(report.as_raw_fd(), &mut code) {
                Err(Errno::EINTR) => continue,
                Ok(4) => break,
                // The child died before it reported.
                Ok(_) => return Err(Errno::ECHILD),
                Err(e) => return Err(e),
            }
        }
        match i32::from_ne_bytes(code) {
            0 => Ok(()),
            errno => Err(Errno::from_raw(errno)),
        }
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

/// The child's whole life: close all but its three descriptors; join and unshare as
/// ordered, and report; read to end of file, return (the C library's
/// clone then exits with 0).
extern "C" fn hold(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the `Orders` the caller keeps until this
    // child is reaped (`Holder::clone_child`); only read here.
    let orders = unsafe { &*(arg as *const Orders) };
    let mut byte = 0u8;
    // The clone copied every descriptor of the caller, its pipe's write
    // end included, and another thread's holder pipes made at that moment:
    // a copy of another holder's write end kept here would keep that
    // holder from its end of file until this one leaves (two such copies,
    // and each waits for the other forever).
    close_all_but([orders.rx, orders.report, orders.userns]);
    if orders.report >= 0 {
        let mut ret = 0;
        if orders.userns >= 0 {
            let user = libc::CLONE_NEWUSER.into();
            ret = raw_syscall3(libc::SYS_setns, orders.userns.into(), user, 0);
        }
        if ret == 0 && orders.unshare != 0 {
            ret = raw_syscall3(libc::SYS_unshare, orders.unshare.into(), 0, 0);
        }
        let code = (-ret) as i32;
        let ptr = &code as *const i32 as i64;
        raw_syscall3(libc::SYS_write, orders.report.into(), ptr, 4);
        raw_syscall3(libc::SYS_close, orders.report.into(), 0, 0);
    }
    let buf = &mut byte as *mut u8 as i64;
    loop {
        let got = raw_syscall3(libc::SYS_read, orders.rx.into(), buf, 1);
        if got != -(libc::EINTR as i64) {
            return 0;
        }
    }
}

/// Closes every descriptor but `keep`'s (-1: none), in at most four
/// `close_range` calls: no allocation, no C library (the child shares
/// the caller's memory and thread state). On a kernel without
/// `close_range` (before 5.9) nothing is closed.
fn close_all_but(mut keep: [i32; 3]) {
    keep.sort_unstable();
    let mut first: i64 = 0;
    for fd in keep {
        if fd < 0 {
            continue;
        }
        let fd = i64::from(fd);
        if fd > first {
            raw_syscall3(libc::SYS_close_range, first, fd - 1, 0);
        }
        first = fd + 1;
    }
    raw_syscall3(libc::SYS_close_range, first, i64::from(u32::MAX), 0);
}

/// A system call without the C library: no `errno` written.
fn raw_syscall3(nr: i64, a: i64, b: i64, c: i64) -> i64 {
    let ret: i64;
    // SAFETY: `syscall` with the number in rax and three arguments in rdi,
    // rsi, rdx; the kernel clobbers rcx and r11 only. The callers pass
    // close, read and write of a descriptor, with a buffer on their own
    // stack, and setns and unshare, which touch no memory of ours.
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
    use std::os::fd::AsFd;

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

    fn ns_of(pid: &str, kind: &str) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).unwrap()
    }

    #[test]
    fn a_joining_holder_makes_its_namespace_in_the_user_namespace_it_joins() {
        let owner = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let userns = std::fs::File::open(format!("/proc/{}/ns/user", owner.pid())).unwrap();
        let mut net = Holder::spawn_joining(userns.as_fd(), CloneFlags::CLONE_NEWNET).unwrap();
        net.ready().unwrap();
        let pid = net.pid().to_string();
        assert_eq!(ns_of(&pid, "user"), ns_of(&owner.pid().to_string(), "user"));
        assert_ne!(ns_of(&pid, "net"), ns_of("self", "net"));
        let net_pid = net.pid();
        drop(net.release());
        assert_eq!(waitpid(net_pid, None), Err(Errno::ECHILD));
    }

    #[test]
    fn a_joining_holder_reports_what_it_could_not_join() {
        // A network namespace is no user namespace: setns says EINVAL.
        let not_user = std::fs::File::open("/proc/self/ns/net").unwrap();
        let mut holder = Holder::spawn_joining(not_user.as_fd(), CloneFlags::CLONE_NEWNET).unwrap();
        assert_eq!(holder.ready(), Err(Errno::EINVAL));
        assert_eq!(holder.ready(), Err(Errno::EINVAL), "reported once");
    }

    /// A holder made while another is held gets a copy of the other's
    /// write end with the clone; it must not keep the other from leaving.
    /// (Two launches at once in one supervisor, a pool's or the serve
    /// daemon's, each wait for their holder at the end of the launch.)
    #[test]
    fn a_holder_leaves_while_a_later_one_is_held() {
        let first = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let second = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let pid = first.pid();
        let (done, gone) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(first.release());
            let _ = done.send(());
        });
        // Only a guard against a hang: the reap takes microseconds.
        let left = gone.recv_timeout(std::time::Duration::from_secs(60));
        assert!(
            left.is_ok(),
            "the first holder ({pid}) did not leave while the second was held"
        );
        assert_eq!(waitpid(pid, None), Err(Errno::ECHILD));
        drop(second);
    }

    #[test]
    fn a_dropped_holder_is_reaped() {
        let holder = Holder::spawn(CloneFlags::CLONE_NEWUSER).unwrap();
        let pid = holder.pid();
        drop(holder);
        assert_eq!(waitpid(pid, None), Err(Errno::ECHILD));
    }
}
