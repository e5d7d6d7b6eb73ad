//! sysinfo(2) of the sandbox: its uptime (as its /proc/uptime), no load
//! (as its /proc/loadavg), its tasks, and under `--memory` its memory
//! figures, not the host's (glibc's `sysconf(_SC_PHYS_PAGES)` and
//! `_SC_AVPHYS_PAGES`, hence Python's `os.sysconf`, read them).
//!
//! Owns: the host's answer rewritten — uptime, loads and the task count
//! the sandbox's (counted cheaply: one stat of each process's `task`
//! directory in the view's procfs the census keeps open, whose link
//! count procfs makes two more than the process's threads; no file of
//! the census read); under a memory limit total RAM is the limit, free RAM
//! the limit less the sandbox's usage, shared RAM the cgroup's `shmem`
//! and no buffer RAM, as its /proc/meminfo's Shmem and Buffers (where the
//! cgroup's memory.stat cannot be read, the host's, capped), no swap, no
//! high memory (without one, the host's memory figures) — and
//! written to the guest's `struct sysinfo` (the x86_64 layout, 112
//! bytes).

use super::{live, value, Context, Res};
use crate::guest::Guest;
use procfs::{sandbox_tasks, CgroupMemory};

/// Size of `struct sysinfo` on x86_64, and the offsets of its fields.
const SIZE: usize = 112;
const UPTIME: usize = 0;
const TOTALRAM: usize = 32;
const FREERAM: usize = 40;
const SHAREDRAM: usize = 48;
const BUFFERRAM: usize = 56;
const TOTALSWAP: usize = 64;
const FREESWAP: usize = 72;
const PROCS: usize = 80;
const TOTALHIGH: usize = 88;
const FREEHIGH: usize = 96;
const MEM_UNIT: usize = 104;

/// What the sandbox, not the host, answers.
struct Own {
    uptime: u64,
    tasks: u16,
}

pub fn sysinfo(ctx: &Context, g: &dyn Guest, addr: u64) -> Res {
    let host = vfs::sys::sysinfo()?;
    let usage = ctx.limits.memory_usage.as_ref().and_then(|f| f());
    let own = Own {
        uptime: ctx.synthetic.uptime() as u64,
        tasks: u16::try_from(sandbox_tasks(&ctx.proc())).unwrap_or(u16::MAX),
    };
    let limit = ctx.limits.memory_limit();
    let cgroup = limit.and_then(|_| ctx.limits.cgroup_memory());
    let out = encode(&host, limit, cgroup.as_ref(), usage, &own);
    live(g)?;
    g.write_mem(addr, &out)?;
    value(0)
}

/// The guest's `struct sysinfo`: the host's, with the sandbox's uptime,
/// no load, its tasks, and the memory figures of a sandbox limited to
/// `limit` bytes (if any) that uses `usage` (when known), its shared and
/// buffer RAM its `cgroup`'s (when its memory.stat was read).
fn encode(
    host: &libc::sysinfo,
    limit: Option<u64>,
    cgroup: Option<&CgroupMemory>,
    usage: Option<u64>,
    own: &Own,
) -> [u8; SIZE] {
    let unit = u64::from(host.mem_unit.max(1));
    let bytes = |v: u64| v.saturating_mul(unit);
    let total = limit.map_or(bytes(host.totalram), |l| l.min(bytes(host.totalram)));
    let used = usage.unwrap_or_else(|| bytes(host.totalram).saturating_sub(bytes(host.freeram)));
    let free = total.saturating_sub(used);
    let swap = |v: u64| if limit.is_some() { 0 } else { bytes(v) };
    let mut out = [0u8; SIZE];
    let put = |out: &mut [u8; SIZE], at: usize, v: u64| {
        out[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    };
    put(&mut out, UPTIME, own.uptime);
    // The three loads (8..32) stay 0.
    // In bytes: mem_unit 1 (the values fit in 64 bits).
    put(&mut out, TOTALRAM, total);
    put(&mut out, FREERAM, free);
    let (shared, buffers) = match cgroup {
        Some(c) => (c.line("Shmem").unwrap_or(0), 0),
        None => (bytes(host.sharedram), bytes(host.bufferram)),
    };
    put(&mut out, SHAREDRAM, shared.min(total));
    put(&mut out, BUFFERRAM, buffers.min(total - free));
    put(&mut out, TOTALSWAP, swap(host.totalswap));
    put(&mut out, FREESWAP, swap(host.freeswap));
    out[PROCS..PROCS + 2].copy_from_slice(&own.tasks.to_ne_bytes());
    put(&mut out, TOTALHIGH, 0);
    put(&mut out, FREEHIGH, 0);
    out[MEM_UNIT..MEM_UNIT + 4].copy_from_slice(&1u32.to_ne_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(out: &[u8; SIZE], at: usize) -> u64 {
        u64::from_ne_bytes(out[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn memory_figures_are_the_sandbox_s() {
        let host = vfs::sys::sysinfo().unwrap();
        let own = Own {
            uptime: 7,
            tasks: 3,
        };
        let out = encode(&host, Some(512 << 20), None, Some(100 << 20), &own);
        assert_eq!(field(&out, UPTIME), 7);
        assert_eq!(field(&out, 8), 0);
        assert_eq!(&out[PROCS..PROCS + 2], &3u16.to_ne_bytes());
        assert_eq!(field(&out, TOTALRAM), 512 << 20);
        assert_eq!(field(&out, FREERAM), 412 << 20);
        assert_eq!(field(&out, TOTALSWAP), 0);
        assert!(field(&out, SHAREDRAM) <= 512 << 20);
        assert!(field(&out, BUFFERRAM) <= 100 << 20);
        assert_eq!(
            u32::from_ne_bytes(out[MEM_UNIT..MEM_UNIT + 4].try_into().unwrap()),
            1
        );
        // Over the limit: nothing free, never a wrap-around.
        let out = encode(&host, Some(512 << 20), None, Some(600 << 20), &own);
        assert_eq!(field(&out, FREERAM), 0);
        // No limit: the host's memory, the sandbox's uptime.
        let out = encode(&host, None, None, None, &own);
        let unit = u64::from(host.mem_unit);
        assert_eq!(field(&out, TOTALRAM), host.totalram * unit);
        assert_eq!(field(&out, TOTALSWAP), host.totalswap * unit);
        assert_eq!(field(&out, UPTIME), 7);
    }

    #[test]
    fn shared_and_buffer_ram_are_the_cgroup_s() {
        let host = vfs::sys::sysinfo().unwrap();
        let own = Own {
            uptime: 1,
            tasks: 1,
        };
        let stat = "anon 104857600\nfile 52428800\nshmem 20971520\n";
        let cgroup = CgroupMemory::new(stat).unwrap();
        let out = encode(&host, Some(512 << 20), Some(&cgroup), Some(160 << 20), &own);
        assert_eq!(field(&out, SHAREDRAM), 20 << 20);
        assert_eq!(field(&out, BUFFERRAM), 0);
        // Never above the limit.
        let out = encode(&host, Some(10 << 20), Some(&cgroup), Some(160 << 20), &own);
        assert_eq!(field(&out, SHAREDRAM), 10 << 20);
    }
}
