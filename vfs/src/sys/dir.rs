//! Listing a directory: `getdents64` and the names of the records it
//! fills.
//!
//! Part of [`crate::sys`], which owns every `unsafe` block of the crate.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

use super::check_long;

/// `getdents64(fd, buf)`: the next directory entries of `fd` (opened
/// for reading, not `O_PATH`) as `struct linux_dirent64` records into
/// `buf`; returns the bytes filled, 0 at the end. [`dirent_names`] walks
/// them.
pub fn getdents64(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `buf` is writable for its length, which is passed exactly;
    // the kernel writes whole records and returns how many bytes.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    check_long(n).map(|n| n as usize)
}

/// The names of the `struct linux_dirent64` records that [`getdents64`]
/// put in `filled` (a record: inode u64, offset i64, length u16, type u8,
/// then the NUL-terminated name), in order; a record that runs past the
/// bytes ends the walk.
pub fn dirent_names(filled: &[u8]) -> impl Iterator<Item = &[u8]> {
    const NAME: usize = 19;
    let mut rest = filled;
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_ne_bytes([*rest.get(16)?, *rest.get(17)?]));
        let record = rest.get(..len).filter(|_| len > NAME)?;
        rest = &rest[len..];
        let name = &record[NAME..];
        Some(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn getdents_lists_what_std_lists() {
        let d = std::env::temp_dir().join(format!("vfs-getdents-{}", std::process::id()));
        std::fs::create_dir(&d).unwrap();
        // More names than one small buffer holds, of every length.
        let mut made: Vec<Vec<u8>> = (1..200)
            .map(|i| "n".repeat(i % 60 + 1) + &i.to_string())
            .map(String::into_bytes)
            .collect();
        for name in &made {
            std::fs::write(d.join(std::str::from_utf8(name).unwrap()), b"").unwrap();
        }
        let dir = std::fs::File::open(&d).unwrap();
        let mut listed = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            let n = getdents64(dir.as_fd(), &mut buf).unwrap();
            if n == 0 {
                break;
            }
            listed.extend(dirent_names(&buf[..n]).map(<[u8]>::to_vec));
        }
        listed.retain(|n| n != b"." && n != b"..");
        listed.sort();
        made.sort();
        assert_eq!(listed, made);
        // A record cut short ends the walk.
        assert_eq!(dirent_names(&buf[..10]).count(), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
