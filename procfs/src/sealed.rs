//! The descriptors synthetic files are served in: a sealed, read-only
//! memfd holding the text, and reading a view's file whole.
//!
//! Owns: making and sealing the memfd, and reading a descriptor to its
//! end. Does not own: which files are served or their texts
//! (`served.rs` and its siblings).

use std::ffi::CStr;
use std::fs::OpenOptions;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::stat::{fchmod, Mode};
use vfs::resolve::flags::IN_ROOT;
use vfs::Resolver;

/// The text of the view's file at `path`.
pub fn read_view(fs: &Resolver, path: &CStr) -> Result<String, Errno> {
    let flags = (libc::O_RDONLY | libc::O_CLOEXEC) as u64;
    read_all(vfs::sys::openat2(fs.root(), path, flags, 0, IN_ROOT)?)
}

/// All of `fd`'s text (invalid UTF-8 replaced). Read into room for
/// 4 KiB from the start: procfs says a size of 0, and an empty buffer
/// would be filled in pieces of 32, 32, 64... bytes (eight reads for a
/// `status`). Plain `read`s until end of file, nothing else: std's
/// `read_to_end` on a file first asks its size and position (a `statx`
/// and an `lseek`, two calls more on every served /proc read).
pub fn read_all(fd: OwnedFd) -> Result<String, Errno> {
    read_text(fd, false)
}

/// The text of a procfs file of one record (a task's `stat`, `status`),
/// as [`read_all`] gives it, with one `read` fewer where it fits in 4 KiB:
/// procfs makes such a file's whole text at the first read (`single_open`)
/// and a read shorter than the room asked for has reached its end, so the
/// read that would answer 0 is not made. A text that fills the room is
/// read on to the end.
pub fn read_record(fd: OwnedFd) -> Result<String, Errno> {
    read_text(fd, true)
}

/// Reads `fd` to its end (`short_is_end`: or to the first read shorter
/// than the room it was given).
fn read_text(fd: OwnedFd, short_is_end: bool) -> Result<String, Errno> {
    let mut bytes = vec![0u8; 4096];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(len * 2, 0);
        }
        let room = bytes.len() - len;
        match nix::unistd::read(fd.as_raw_fd(), &mut bytes[len..]) {
            Ok(0) => break,
            Ok(n) if short_is_end && n < room => {
                len += n;
                break;
            }
            Ok(n) => len += n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(len);
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A memfd named `name` holding `data`, mode 0444 and sealed against any
/// change, reopened read-only with `extra` open flags (a fresh open file
/// description at offset 0).
pub fn sealed_file(name: &CStr, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
    let flags = MemFdCreateFlag::MFD_CLOEXEC | MemFdCreateFlag::MFD_ALLOW_SEALING;
    let mem = memfd_create(name, flags)?;
    let mut rest = data;
    while !rest.is_empty() {
        match nix::unistd::write(&mem, rest) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    fchmod(mem.as_raw_fd(), Mode::from_bits_truncate(0o444))?;
    let seals = SealFlag::F_SEAL_SEAL
        | SealFlag::F_SEAL_SHRINK
        | SealFlag::F_SEAL_GROW
        | SealFlag::F_SEAL_WRITE;
    fcntl(mem.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals))?;
    let path = vfs::sys::ProcFd::new(mem.as_fd());
    let path = std::ffi::OsStr::from_bytes(path.as_cstr().to_bytes());
    OpenOptions::new()
        .read(true)
        .custom_flags(extra)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(path: &str) -> OwnedFd {
        std::fs::File::open(path).unwrap().into()
    }

    #[test]
    fn a_record_reads_as_the_whole_file_does() {
        let status = read_record(opened("/proc/self/status")).unwrap();
        assert!(
            status.starts_with("Name:") && status.ends_with('\n'),
            "{status}"
        );
        // Its last line: the whole text, not the first read's part of it.
        assert!(status.contains("\nnonvoluntary_ctxt_switches:"), "{status}");
        let stat = read_record(opened("/proc/self/stat")).unwrap();
        assert_eq!(stat.lines().count(), 1, "{stat}");
        // A text past the first read's room is read on to its end.
        let path = std::env::temp_dir().join(format!("sealed-record-{}", std::process::id()));
        let long: String = (0..2000).map(|i| format!("{i:05}\n")).collect();
        std::fs::write(&path, &long).unwrap();
        assert_eq!(read_record(opened(path.to_str().unwrap())).unwrap(), long);
        assert_eq!(read_all(opened(path.to_str().unwrap())).unwrap(), long);
        std::fs::remove_file(&path).unwrap();
    }
}
