//! sched_getaffinity(2) for the caller itself under a cpu limit: the
//! thread's real mask cut to the first N CPUs (what nproc, Python's
//! `os.sched_getaffinity` and psutil count), with the kernel's own length
//! checks and errors; another task of the sandbox, its mask (read in the
//! view's procfs) cut the same way. Without a limit, any other pid is the
//! kernel's (CONTINUE).
//!
//! Does not own: the limit (`GuestLimits`, `procfs/limits.rs`), or what
//! /proc says of it (`Cpus_allowed` in `procfs/tasks.rs`).

use nix::errno::Errno;

use super::{live, value, Context, Res};
use crate::guest::{Guest, Reply};
use procfs::with_view_proc;

/// The largest mask asked of the kernel, in bytes: 65536 CPUs, more than
/// any kernel's NR_CPUS, so always at least its `cpumask_size()`.
const MASK_MAX: u32 = 8192;

/// sched_getaffinity(pid, len, user_mask_ptr) for the caller itself (pid
/// 0, its tid, or its pid): the kernel's mask of that host thread, with
/// only the first N CPUs set under a cpu limit, written back with the
/// kernel's semantics (kernel/sched/core.c): EINVAL when `len * 8` (an
/// unsigned int) is below `nr_cpu_ids` or `len` is not a multiple of
/// `sizeof(long)`; else `min(len, cpumask_size())` bytes are copied
/// (EFAULT) and that count returned.
pub fn sched_getaffinity(ctx: &Context, g: &dyn Guest, pid: i32, len: u32, addr: u64) -> Res {
    let host = if pid == 0 {
        g.tid()
    } else {
        let (tgid, tid) = g.ns_ids()?;
        if pid == tid {
            g.tid()
        } else if pid == tgid {
            g.host_tgid()?
        } else if let Some(n) = ctx.limits.cpus_limit() {
            return other_task(ctx, g, pid, len, addr, n);
        } else {
            // Without a limit the kernel answers, in the guest's pid
            // namespace (which names only sandbox tasks).
            return Ok(Reply::Continue);
        }
    };
    let mut mask = kernel_mask(host, len)?;
    if let Some(n) = ctx.limits.cpus_limit() {
        keep_first(&mut mask, n);
    }
    live(g)?;
    g.write_mem(addr, &mask)?;
    value(mask.len() as i64)
}

/// Another task of the sandbox under a cpu limit: its real mask (the
/// `Cpus_allowed` of its `status` in the view's procfs, which names it by
/// its sandbox pid) with only the first `n` CPUs, as the caller's own is
/// cut, so that `taskset -p PID` agrees with `nproc`. The length checks
/// and the bytes copied out depend on the length alone: the kernel's for
/// the caller. A pid the view does not hold (or a negative one) is the
/// kernel's to answer: ESRCH, after the same length checks.
fn other_task(ctx: &Context, g: &dyn Guest, pid: i32, len: u32, addr: u64, n: usize) -> Res {
    let status = (pid > 0)
        .then(|| with_view_proc(&ctx.fs, |proc| proc.read(&format!("{pid}/status"))))
        .flatten()
        .flatten();
    let allowed = status.as_deref().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed:"))
            .map(str::trim)
    });
    let Some(allowed) = allowed else {
        return Ok(Reply::Continue);
    };
    let mut mask = kernel_mask(g.tid(), len)?;
    fill_from_hex(&mut mask, allowed);
    keep_first(&mut mask, n);
    live(g)?;
    g.write_mem(addr, &mask)?;
    value(mask.len() as i64)
}

/// `mask` (the kernel's bitmap, little-endian bytes) set from procfs's
/// `%*pb` text: 32-bit hex words, most significant first, comma-separated.
/// Bits past `mask`'s length are dropped; a word that does not parse is 0.
fn fill_from_hex(mask: &mut [u8], text: &str) {
    mask.fill(0);
    let words = text.split(',').rev();
    for (chunk, word) in mask.chunks_mut(4).zip(words) {
        let bytes = u32::from_str_radix(word, 16).unwrap_or(0).to_le_bytes();
        for (b, v) in chunk.iter_mut().zip(bytes) {
            *b = v;
        }
    }
}

/// What the kernel would copy out for `sched_getaffinity(tid, len, ..)`,
/// or its EINVAL, without ever giving it more than [`MASK_MAX`] bytes.
fn kernel_mask(tid: i32, len: u32) -> Result<Vec<u8>, Errno> {
    if !len.is_multiple_of(std::mem::size_of::<libc::c_long>() as u32) {
        return Err(Errno::EINVAL);
    }
    // The kernel compares `len * BITS_PER_BYTE` with nr_cpu_ids in
    // unsigned int, which wraps: let it judge the length it compares.
    let judged = len.wrapping_mul(8) / 8;
    if judged != len && judged <= MASK_MAX {
        vfs::sys::sched_getaffinity(tid, &mut vec![0u8; judged as usize])?;
    }
    // With `len` above MASK_MAX, `min(len, cpumask_size())` is
    // `cpumask_size()`, which MASK_MAX bytes hold whole.
    let mut buf = vec![0u8; len.min(MASK_MAX) as usize];
    let n = vfs::sys::sched_getaffinity(tid, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// Clear every set bit of `mask` (the kernel's bitmap of longs, on a
/// little-endian machine: bit i is bit i%8 of byte i/8) but the first `n`.
fn keep_first(mask: &mut [u8], n: usize) {
    let mut seen = 0;
    for byte in mask.iter_mut() {
        for bit in 0..8 {
            if *byte & (1 << bit) != 0 {
                if seen >= n {
                    *byte &= !(1 << bit);
                }
                seen += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bits() {
        let mut m = [0b1010_1100u8, 0xff, 0, 0, 0, 0, 0, 0];
        keep_first(&mut m, 3);
        assert_eq!(m, [0b0010_1100, 0, 0, 0, 0, 0, 0, 0]);
        let mut m = [0xffu8; 8];
        keep_first(&mut m, 0);
        assert_eq!(m, [0; 8]);
    }

    #[test]
    fn masks_from_procfs_text() {
        let mut m = [0xaau8; 8];
        fill_from_hex(&mut m, "3");
        assert_eq!(m, [3, 0, 0, 0, 0, 0, 0, 0]);
        fill_from_hex(&mut m, "00000001,80000f00");
        assert_eq!(m, [0, 0x0f, 0, 0x80, 1, 0, 0, 0]);
        let mut short = [0u8; 4];
        fill_from_hex(&mut short, "ff,00000001");
        assert_eq!(short, [1, 0, 0, 0]);
        fill_from_hex(&mut short, "zz");
        assert_eq!(short, [0; 4]);
    }
}
