//! The x86_64 layouts of the time arguments of the utime family
//! (`struct timespec[2]`, `struct timeval[2]`, `struct utimbuf`).
//!
//! Owns: parsing those guest bytes, in safe code. Does not own: guest
//! memory access (the [`Guest`]) or `struct statfs`, which the host's
//! `fstatfs` fills and `vfs::sys` hands over as bytes.

use nix::errno::Errno;

use crate::guest::Guest;

/// Read two `(i64, i64)` pairs (timespec or timeval) from guest memory.
pub fn read_time_pairs(g: &dyn Guest, addr: u64) -> Result<[(i64, i64); 2], Errno> {
    let mut b = [0u8; 32];
    g.read_mem(addr, &mut b)?;
    let w = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i * 8..i * 8 + 8]);
        i64::from_ne_bytes(x)
    };
    Ok([(w(0), w(1)), (w(2), w(3))])
}

/// Read a `struct utimbuf` (actime, modtime) as two timespecs.
pub fn read_utimbuf(g: &dyn Guest, addr: u64) -> Result<[(i64, i64); 2], Errno> {
    let mut b = [0u8; 16];
    g.read_mem(addr, &mut b)?;
    let mut a = [0u8; 8];
    let mut m = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    m.copy_from_slice(&b[8..]);
    Ok([(i64::from_ne_bytes(a), 0), (i64::from_ne_bytes(m), 0)])
}
