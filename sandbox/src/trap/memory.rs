//! Reading and writing a trapped thread's memory.
//!
//! Owns: `process_vm_readv`/`process_vm_writev` on the guest, with the
//! rules that make a hostile pointer harmless: any short transfer is
//! EFAULT, strings are read page by page so an unmapped page after the NUL
//! does not fail the read, and writes honour page protections (unlike
//! `/proc/<pid>/mem`). Does not own: checking that the thread is still in
//! the call (see `NotifGuest::still_valid`).

use std::io::{IoSlice, IoSliceMut};

use nix::errno::Errno;
use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;

const PAGE: u64 = 4096;
/// Bytes read first when looking for a string's NUL.
const FIRST_PIECE: usize = 256;

/// Reads exactly `buf.len()` bytes at `addr` of thread `tid`.
pub fn read(tid: i32, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    if buf.is_empty() {
        return Ok(());
    }
    addr.checked_add(buf.len() as u64).ok_or(Errno::EFAULT)?;
    let remote = [RemoteIoVec {
        base: addr as usize,
        len: buf.len(),
    }];
    let want = buf.len();
    let n = process_vm_readv(Pid::from_raw(tid), &mut [IoSliceMut::new(buf)], &remote)
        .map_err(fault)?;
    if n == want {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// Writes all of `data` at `addr` of thread `tid`.
pub fn write(tid: i32, addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    addr.checked_add(data.len() as u64).ok_or(Errno::EFAULT)?;
    let remote = [RemoteIoVec {
        base: addr as usize,
        len: data.len(),
    }];
    let n = process_vm_writev(Pid::from_raw(tid), &[IoSlice::new(data)], &remote).map_err(fault)?;
    if n == data.len() {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// Writes each `(addr, data)` at its address of thread `tid`, in order,
/// with one `process_vm_writev` (which stops at the first fault: EFAULT,
/// what came before it written, as separate writes would leave it).
pub fn write_all(tid: i32, parts: &[(u64, &[u8])]) -> Result<(), Errno> {
    let parts: Vec<_> = parts.iter().filter(|(_, d)| !d.is_empty()).collect();
    let mut remote = Vec::with_capacity(parts.len());
    for (addr, data) in &parts {
        addr.checked_add(data.len() as u64).ok_or(Errno::EFAULT)?;
        remote.push(RemoteIoVec {
            base: *addr as usize,
            len: data.len(),
        });
    }
    if remote.is_empty() {
        return Ok(());
    }
    let local: Vec<_> = parts.iter().map(|(_, d)| IoSlice::new(d)).collect();
    let want: usize = remote.iter().map(|r| r.len).sum();
    let n = process_vm_writev(Pid::from_raw(tid), &local, &remote).map_err(fault)?;
    if n == want {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// Reads a NUL-terminated string of at most `max` bytes (NUL included).
/// EFAULT for a bad pointer, ENAMETOOLONG when no NUL comes in time.
///
/// The hot path (a path shorter than [`FIRST_PIECE`]) costs one
/// `process_vm_readv` straight into the returned vector and one
/// allocation, with room for the NUL the caller adds (`CString::new`
/// then does not reallocate).
pub fn read_cstr(tid: i32, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::with_capacity(FIRST_PIECE + 1);
    let mut at = addr;
    // Most paths are short: copy a small first piece, then whole pages.
    let mut want = FIRST_PIECE;
    while out.len() < max {
        let to_page_end = (PAGE - at % PAGE) as usize;
        let len = to_page_end.min(max - out.len()).min(want);
        want = PAGE as usize;
        let start = out.len();
        out.resize(start + len, 0);
        read(tid, at, &mut out[start..])?;
        if let Some(nul) = out[start..].iter().position(|&b| b == 0) {
            out.truncate(start + nul);
            return Ok(out);
        }
        at = at.checked_add(len as u64).ok_or(Errno::EFAULT)?;
    }
    Err(Errno::ENAMETOOLONG)
}

/// A vanished thread (ESRCH) or unreadable page both mean the pointer is
/// unusable; the notification check decides which.
fn fault(e: Errno) -> Errno {
    match e {
        Errno::ESRCH | Errno::EPERM => Errno::ESRCH,
        _ => Errno::EFAULT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_tid() -> i32 {
        nix::unistd::gettid().as_raw()
    }

    #[test]
    fn writes_every_part_in_one_transfer() {
        let (mut addr, mut len) = ([0u8; 16], [0u8; 4]);
        let (a, l) = (addr.as_mut_ptr() as u64, len.as_mut_ptr() as u64);
        write_all(own_tid(), &[(a, &[7u8; 16]), (l, &16u32.to_ne_bytes())]).unwrap();
        // Read back through the host, not the references (which the
        // compiler may take as unchanged).
        let (mut back, mut n) = ([0u8; 16], [0u8; 4]);
        read(own_tid(), a, &mut back).unwrap();
        read(own_tid(), l, &mut n).unwrap();
        assert_eq!((back, u32::from_ne_bytes(n)), ([7u8; 16], 16));
        // An empty part is skipped, whatever its address.
        write_all(own_tid(), &[(0, &[]), (l, &4u32.to_ne_bytes())]).unwrap();
        read(own_tid(), l, &mut n).unwrap();
        assert_eq!(u32::from_ne_bytes(n), 4);
    }

    #[test]
    fn a_bad_part_is_efault_after_the_ones_before_it() {
        let mut first = [0u8; 4];
        let f = first.as_mut_ptr() as u64;
        let bad = write_all(own_tid(), &[(f, &[1, 2, 3, 4]), (8, &[9; 4])]);
        assert_eq!(bad, Err(Errno::EFAULT));
        let mut back = [0u8; 4];
        read(own_tid(), f, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4]);
        assert_eq!(
            write_all(own_tid(), &[(u64::MAX - 1, &[1, 2, 3])]),
            Err(Errno::EFAULT)
        );
    }
}
