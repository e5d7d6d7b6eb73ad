//! sysinfo(2) under `--memory`: the memory figures of the sandbox, not
//! the host's (glibc's `sysconf(_SC_PHYS_PAGES)` and
//! `_SC_AVPHYS_PAGES`, hence Python's `os.sysconf`, read them).
//!
//! Owns: the host's answer rewritten — total RAM is the limit, free RAM
//! the limit less the sandbox's usage, shared and buffer RAM capped, no
//! swap, no high memory — and written to the guest's `struct sysinfo`
//! (the x86_64 layout, 112 bytes). Without a memory limit the kernel
//! answers (CONTINUE). Uptime, loads and the process count stay the
//! host's, as in /proc/uptime and /proc/loadavg.

use super::{live, value, Context, Res};
use crate::guest::{Guest, Reply};

/// Size of `struct sysinfo` on x86_64, and the offsets of its fields.
const SIZE: usize = 112;
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

pub fn sysinfo(ctx: &Context, g: &dyn Guest, addr: u64) -> Res {
    let Some(limit) = ctx.limits.memory_limit else {
        return Ok(Reply::Continue);
    };
    let host = vfs::sys::sysinfo()?;
    let usage = ctx.limits.memory_usage.as_ref().and_then(|f| f());
    let out = encode(&host, limit, usage);
    live(g)?;
    g.write_mem(addr, &out)?;
    value(0)
}

/// The guest's `struct sysinfo`: the host's, with the memory figures of a
/// sandbox limited to `limit` bytes that uses `usage` (when known).
fn encode(host: &libc::sysinfo, limit: u64, usage: Option<u64>) -> [u8; SIZE] {
    let unit = u64::from(host.mem_unit.max(1));
    let bytes = |v: u64| v.saturating_mul(unit);
    let total = limit.min(bytes(host.totalram));
    let used = usage.unwrap_or_else(|| bytes(host.totalram).saturating_sub(bytes(host.freeram)));
    let free = total.saturating_sub(used);
    let mut out = [0u8; SIZE];
    let put = |out: &mut [u8; SIZE], at: usize, v: u64| {
        out[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    };
    put(&mut out, 0, host.uptime as u64);
    for (i, load) in host.loads.iter().enumerate() {
        put(&mut out, 8 + 8 * i, *load);
    }
    // In bytes: mem_unit 1 (the values fit in 64 bits).
    put(&mut out, TOTALRAM, total);
    put(&mut out, FREERAM, free);
    put(&mut out, SHAREDRAM, bytes(host.sharedram).min(total));
    put(&mut out, BUFFERRAM, bytes(host.bufferram).min(total - free));
    put(&mut out, TOTALSWAP, 0);
    put(&mut out, FREESWAP, 0);
    out[PROCS..PROCS + 2].copy_from_slice(&host.procs.to_ne_bytes());
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
        let out = encode(&host, 512 << 20, Some(100 << 20));
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
        let out = encode(&host, 512 << 20, Some(600 << 20));
        assert_eq!(field(&out, FREERAM), 0);
    }
}
