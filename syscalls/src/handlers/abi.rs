//! The x86_64 layouts of the structs the file handlers read and write:
//! `struct stat` (144 bytes), `struct statx` (256), `struct statfs` (120),
//! and the time arguments of the utime family.
//!
//! Owns: serialising fields into byte arrays at their documented offsets
//! and parsing guest bytes, in safe code. Does not own: the host calls
//! that produce the values (`vfs::sys`) or guest memory access.

use nix::errno::Errno;
use vfs::IdMap;

use crate::guest::Guest;

/// Size of `struct stat`.
pub const STAT_SIZE: usize = 144;

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// `struct stat` for the guest, owners mapped through `ids`.
pub fn stat_bytes(st: &libc::stat, ids: &IdMap) -> [u8; STAT_SIZE] {
    let mut b = [0u8; STAT_SIZE];
    put(&mut b, 0, &st.st_dev.to_ne_bytes());
    put(&mut b, 8, &st.st_ino.to_ne_bytes());
    put(&mut b, 16, &st.st_nlink.to_ne_bytes());
    put(&mut b, 24, &st.st_mode.to_ne_bytes());
    put(&mut b, 28, &ids.uid_to_guest(st.st_uid).to_ne_bytes());
    put(&mut b, 32, &ids.gid_to_guest(st.st_gid).to_ne_bytes());
    // 36: padding
    put(&mut b, 40, &st.st_rdev.to_ne_bytes());
    put(&mut b, 48, &st.st_size.to_ne_bytes());
    put(&mut b, 56, &st.st_blksize.to_ne_bytes());
    put(&mut b, 64, &st.st_blocks.to_ne_bytes());
    put(&mut b, 72, &st.st_atime.to_ne_bytes());
    put(&mut b, 80, &st.st_atime_nsec.to_ne_bytes());
    put(&mut b, 88, &st.st_mtime.to_ne_bytes());
    put(&mut b, 96, &st.st_mtime_nsec.to_ne_bytes());
    put(&mut b, 104, &st.st_ctime.to_ne_bytes());
    put(&mut b, 112, &st.st_ctime_nsec.to_ne_bytes());
    // 120..144: reserved
    b
}

/// Offsets of `stx_uid` and `stx_gid` in `struct statx`.
const STATX_UID_AT: usize = 20;
const STATX_GID_AT: usize = 24;
const STATX_INO_AT: usize = 32;
const STATX_SIZE_AT: usize = 40;
const STATX_DEV_MAJOR_AT: usize = 136;
const STATX_DEV_MINOR_AT: usize = 140;

fn get_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_ne_bytes)
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The device of the file a raw `struct statx` describes (always
/// filled, whatever the mask).
pub fn statx_dev(buf: &[u8]) -> u64 {
    libc::makedev(
        get_u32(buf, STATX_DEV_MAJOR_AT),
        get_u32(buf, STATX_DEV_MINOR_AT),
    )
}

/// A `struct statx`'s size replaced by `f(dev, ino, size)`.
pub fn map_statx_size(buf: &mut [u8], f: impl FnOnce(u64, u64, u64) -> u64) {
    let dev = statx_dev(buf);
    let size = f(dev, get_u64(buf, STATX_INO_AT), get_u64(buf, STATX_SIZE_AT));
    put(buf, STATX_SIZE_AT, &size.to_ne_bytes());
}

/// Map the owners of a raw `struct statx` through `ids`, in place.
pub fn map_statx(buf: &mut [u8], ids: &IdMap) {
    let uid = ids.uid_to_guest(get_u32(buf, STATX_UID_AT));
    let gid = ids.gid_to_guest(get_u32(buf, STATX_GID_AT));
    put(buf, STATX_UID_AT, &uid.to_ne_bytes());
    put(buf, STATX_GID_AT, &gid.to_ne_bytes());
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;
    use std::os::fd::AsFd;

    #[test]
    fn stat_offsets_match_libc() {
        assert_eq!(std::mem::size_of::<libc::stat>(), STAT_SIZE);
        let f = std::fs::File::open("/").unwrap();
        let st = vfs::sys::fstat(f.as_fd()).unwrap();
        let b = stat_bytes(&st, &IdMap::new(st.st_uid, st.st_gid));
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        assert_eq!(u64_at(offset_of!(libc::stat, st_dev)), st.st_dev);
        assert_eq!(u64_at(offset_of!(libc::stat, st_ino)), st.st_ino);
        assert_eq!(u64_at(offset_of!(libc::stat, st_nlink)), st.st_nlink);
        assert_eq!(u32_at(offset_of!(libc::stat, st_mode)), st.st_mode);
        assert_eq!(u32_at(offset_of!(libc::stat, st_uid)), st.st_uid);
        assert_eq!(u32_at(offset_of!(libc::stat, st_gid)), st.st_gid);
        assert_eq!(u64_at(offset_of!(libc::stat, st_rdev)), st.st_rdev);
        assert_eq!(u64_at(offset_of!(libc::stat, st_size)) as i64, st.st_size);
        assert_eq!(
            u64_at(offset_of!(libc::stat, st_blksize)) as i64,
            st.st_blksize
        );
        assert_eq!(
            u64_at(offset_of!(libc::stat, st_blocks)) as i64,
            st.st_blocks
        );
        assert_eq!(u64_at(offset_of!(libc::stat, st_atime)) as i64, st.st_atime);
        assert_eq!(
            u64_at(offset_of!(libc::stat, st_atime_nsec)) as i64,
            st.st_atime_nsec
        );
        assert_eq!(u64_at(offset_of!(libc::stat, st_mtime)) as i64, st.st_mtime);
        assert_eq!(
            u64_at(offset_of!(libc::stat, st_mtime_nsec)) as i64,
            st.st_mtime_nsec
        );
        assert_eq!(u64_at(offset_of!(libc::stat, st_ctime)) as i64, st.st_ctime);
        assert_eq!(
            u64_at(offset_of!(libc::stat, st_ctime_nsec)) as i64,
            st.st_ctime_nsec
        );
        let other = stat_bytes(&st, &IdMap::new(st.st_uid + 1, st.st_gid + 1));
        assert_eq!(&other[28..32], &65534u32.to_ne_bytes());
        assert_eq!(&other[32..36], &65534u32.to_ne_bytes());
    }

    #[test]
    fn statx_owner_offsets() {
        assert_eq!(offset_of!(libc::statx, stx_uid), STATX_UID_AT);
        assert_eq!(offset_of!(libc::statx, stx_ino), STATX_INO_AT);
        assert_eq!(offset_of!(libc::statx, stx_size), STATX_SIZE_AT);
        assert_eq!(offset_of!(libc::statx, stx_dev_major), STATX_DEV_MAJOR_AT);
        assert_eq!(offset_of!(libc::statx, stx_dev_minor), STATX_DEV_MINOR_AT);
        assert_eq!(offset_of!(libc::statx, stx_gid), STATX_GID_AT);
        let mut b = [0u8; 256];
        b[20..24].copy_from_slice(&7u32.to_ne_bytes());
        b[24..28].copy_from_slice(&8u32.to_ne_bytes());
        map_statx(&mut b, &IdMap::new(7, 9));
        assert_eq!(&b[20..24], &7u32.to_ne_bytes());
        assert_eq!(&b[24..28], &65534u32.to_ne_bytes());
    }
}
