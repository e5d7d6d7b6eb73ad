//! sched_getaffinity(2) for the caller itself under a cpu limit: the
//! thread's real mask cut to the first N CPUs (what nproc, Python's
//! `os.sched_getaffinity` and psutil count), with the kernel's own length
//! checks and errors. Any other pid is the kernel's (CONTINUE).
//!
//! Does not own: the limit (`GuestLimits`, `sysinfo.rs`), or what
//! /proc says of it (`Cpus_allowed` in `procfiles.rs`).

use nix::errno::Errno;

use super::{live, value, Context, Res};
use crate::guest::{Guest, Reply};

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
        } else {
            // Any other task: the kernel answers, in the guest's pid
            // namespace (which names only sandbox tasks), with that task's
            // real mask, not cut to the cpu limit.
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
}
