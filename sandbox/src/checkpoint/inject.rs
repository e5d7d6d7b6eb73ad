//! Making a stopped, traced process run one system call of ours: its
//! registers are set to the call at an address holding a `syscall`
//! instruction (the gadget), it is stepped through the call's entry and
//! exit stops, and the result is read from `rax`. The call passes the
//! process's seccomp filter as any of its own would. Memory of the
//! process is read and written through /proc/PID/mem, which also writes
//! pages the process may not write itself.
//!
//! Owns injection; not which calls are made (`dump`, `restore`).

use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::unistd::Pid;

use crate::sys::ptrace::{self, Regs};

/// The bytes of x86-64's `syscall` instruction.
pub const SYSCALL_INSN: [u8; 2] = [0x0f, 0x05];

pub struct Injector {
    pub pid: Pid,
    /// The registers calls start from (all but the call's are kept).
    pub base: Regs,
    /// Where a `syscall` instruction is.
    pub gadget: u64,
    pub mem: File,
}

impl Injector {
    /// For the stopped `pid`, whose current registers are `base`.
    pub fn new(pid: Pid, base: Regs) -> Result<Injector, String> {
        let mem = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{pid}/mem"))
            .map_err(|e| format!("/proc/{pid}/mem: {e}"))?;
        Ok(Injector {
            pid,
            base,
            gadget: 0,
            mem,
        })
    }

    /// Runs `nr(args)` in the process; the raw result (a negative errno on failure).
    pub fn call(&self, nr: i64, args: [u64; 6]) -> Result<i64, String> {
        let mut r = self.base;
        r.rax = nr as u64;
        r.orig_rax = u64::MAX;
        (r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9) =
            (args[0], args[1], args[2], args[3], args[4], args[5]);
        r.rip = self.gadget;
        let pid = self.pid;
        let fail =
            |what: &str, e: nix::errno::Errno| format!("injecting call {nr}: {what}: {}", e.desc());
        ptrace::set_regs(pid, &r).map_err(|e| fail("set registers", e))?;
        ptrace::syscall_step(pid).map_err(|e| fail("step", e))?;
        ptrace::wait_next_stop(pid).map_err(|e| fail("entry", e))?;
        ptrace::syscall_step(pid).map_err(|e| fail("step", e))?;
        ptrace::wait_next_stop(pid).map_err(|e| fail("exit", e))?;
        let after = ptrace::get_regs(pid).map_err(|e| fail("get registers", e))?;
        Ok(after.rax as i64)
    }

    /// As [`call`](Self::call), an error naming `what` when the call fails.
    pub fn must(&self, what: &str, nr: i64, args: [u64; 6]) -> Result<u64, String> {
        let r = self.call(nr, args)?;
        if (-4095..0).contains(&r) {
            return Err(format!(
                "{what}: {}",
                nix::errno::Errno::from_raw(-r as i32).desc()
            ));
        }
        Ok(r as u64)
    }

    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.mem
            .read_exact_at(buf, addr)
            .map_err(|e| format!("reading the process's memory at {addr:#x}: {e}"))
    }

    pub fn write(&self, addr: u64, buf: &[u8]) -> Result<(), String> {
        self.mem
            .write_all_at(buf, addr)
            .map_err(|e| format!("writing the process's memory at {addr:#x}: {e}"))
    }

    /// Finds a `syscall` instruction: just before the stop when the
    /// process stopped in a call, else in the vDSO (`vdso`: its bounds).
    pub fn find_gadget(&mut self, vdso: Option<(u64, u64)>) -> Result<(), String> {
        let mut b = [0u8; 2];
        if self.read(self.base.rip.wrapping_sub(2), &mut b).is_ok() && b == SYSCALL_INSN {
            self.gadget = self.base.rip - 2;
            return Ok(());
        }
        if let Some((start, end)) = vdso {
            let mut text = vec![0u8; (end - start) as usize];
            self.read(start, &mut text)?;
            if let Some(i) = text.windows(2).position(|w| w == SYSCALL_INSN) {
                self.gadget = start + i as u64;
                return Ok(());
            }
        }
        Err("no syscall instruction found in the process".into())
    }
}
