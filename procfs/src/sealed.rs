//! The descriptors synthetic files are served in: a sealed, read-only
//! memfd holding the text, and reading a view's file whole.
//!
//! Owns: making and sealing the memfd, and reading a descriptor to its
//! end. Does not own: which files are served or their texts
//! (`served.rs` and its siblings).

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

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

/// [`read_record`] of a file kept open, from its start whatever its
/// offset (`pread`s: procfs renders a fresh text for a read at offset 0).
pub fn read_record_again(fd: BorrowedFd<'_>) -> Result<String, Errno> {
    read_from(
        |buf, at| nix::sys::uio::pread(fd, buf, at as libc::off_t),
        true,
    )
}

/// Reads `fd` to its end (`short_is_end`: or to the first read shorter
/// than the room it was given).
fn read_text(fd: OwnedFd, short_is_end: bool) -> Result<String, Errno> {
    read_from(
        |buf, _| nix::unistd::read(fd.as_raw_fd(), buf),
        short_is_end,
    )
}

/// The text `read` gives (called with the room left and the bytes read
/// so far) to its end, or to its first read shorter than the room
/// (`short_is_end`).
fn read_from(
    mut read: impl FnMut(&mut [u8], usize) -> Result<usize, Errno>,
    short_is_end: bool,
) -> Result<String, Errno> {
    let mut bytes = vec![0u8; 4096];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(len * 2, 0);
        }
        let room = bytes.len() - len;
        match read(&mut bytes[len..], len) {
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
    Ok(text_of(bytes))
}

/// `bytes` as text, invalid UTF-8 replaced: kept as they are when they
/// are valid (procfs's texts nearly always are), where
/// `String::from_utf8_lossy` walks them in chunks and then copies them.
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A memfd named `name` holding `data`, mode 0444 and sealed against any
/// change, reopened read-only with `extra` open flags (a fresh open file
/// description at offset 0).
pub fn sealed_file(name: &CStr, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
    read_only(&sealed_memfd(name, data)?, extra)
}

/// How many served texts [`LastSealed`] keeps, one per memfd name.
const LAST_SEALED: usize = 16;

/// The last sealed memfd made under each name (up to [`LAST_SEALED`]
/// names), with its text: a file served again with the same text (a
/// `/proc/uptime` read twice within its hundredth of a second, an empty
/// masked file, a mount table that did not change) is a fresh read-only
/// open of that memfd, with no memfd made, written, sealed and closed
/// (five calls, about 10 µs, the memfd's creation most of it). Two opens
/// then share an inode, as two opens of the procfs file do.
#[derive(Debug, Default)]
pub struct LastSealed(Mutex<Vec<Sealed>>);

#[derive(Debug)]
struct Sealed {
    name: CString,
    text: Vec<u8>,
    mem: OwnedFd,
}

impl LastSealed {
    /// [`sealed_file`], of the memfd kept for `name` when it holds
    /// `data` and is still mode 0444 (its owner may have changed that).
    pub fn file(&self, name: &CStr, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
        {
            let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = last.iter().position(|s| s.name.as_c_str() == name) {
                let kept = &last[i];
                if kept.text == data && read_only_mode(&kept.mem) {
                    return read_only(&kept.mem, extra);
                }
                last.swap_remove(i);
            }
        }
        let mem = sealed_memfd(name, data)?;
        let fd = read_only(&mem, extra)?;
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if last.len() >= LAST_SEALED {
            last.remove(0);
        }
        let (name, text) = (name.to_owned(), data.to_vec());
        last.push(Sealed { name, text, mem });
        Ok(fd)
    }
}

/// Whether `mem`'s mode is still 0444.
fn read_only_mode(mem: &OwnedFd) -> bool {
    vfs::sys::fstat(mem.as_fd()).is_ok_and(|st| st.st_mode & 0o7777 == 0o444)
}

/// A memfd named `name` holding `data`, mode 0444 and sealed against any
/// change (its descriptor open for writing: [`read_only`] makes the one
/// served).
fn sealed_memfd(name: &CStr, data: &[u8]) -> Result<OwnedFd, Errno> {
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
    Ok(mem)
}

/// `mem` opened afresh, read-only, with `extra` open flags (a new open
/// file description at offset 0).
fn read_only(mem: &OwnedFd, extra: i32) -> Result<OwnedFd, Errno> {
    super::own_fds::reopen(mem.as_fd(), libc::O_RDONLY | extra)
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

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(text_of(b"Name:\tsh\n".to_vec()), "Name:\tsh\n");
        assert_eq!(text_of(b"Name:\t\xffsh\n".to_vec()), "Name:\t\u{fffd}sh\n");
    }

    fn text_of_fd(fd: OwnedFd) -> (String, u64) {
        let st = vfs::sys::fstat(fd.as_fd()).unwrap();
        (read_all(fd).unwrap(), st.st_ino)
    }

    #[test]
    fn a_text_served_again_is_the_same_sealed_memfd() {
        let last = LastSealed::default();
        let (a, ino_a) = text_of_fd(last.file(c"uptime", b"1.00 2.00\n", 0).unwrap());
        let (b, ino_b) = text_of_fd(last.file(c"uptime", b"1.00 2.00\n", 0).unwrap());
        assert_eq!((a.as_str(), b.as_str()), ("1.00 2.00\n", "1.00 2.00\n"));
        assert_eq!(ino_a, ino_b);
        // Another text, another memfd; another name keeps its own.
        let (c, ino_c) = text_of_fd(last.file(c"uptime", b"1.01 2.00\n", 0).unwrap());
        assert_eq!((c.as_str(), ino_c == ino_a), ("1.01 2.00\n", false));
        let (d, ino_d) = text_of_fd(last.file(c"loadavg", b"1.01 2.00\n", 0).unwrap());
        assert_eq!((d.as_str(), ino_d == ino_c), ("1.01 2.00\n", false));
        // Its owner made it writable by mode: never served again.
        let fd = last
            .file(c"uptime", b"1.01 2.00\n", libc::O_NONBLOCK)
            .unwrap();
        let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL).unwrap();
        assert_eq!(
            flags & (libc::O_ACCMODE | libc::O_NONBLOCK),
            libc::O_RDONLY | libc::O_NONBLOCK
        );
        fchmod(fd.as_raw_fd(), Mode::from_bits_truncate(0o644)).unwrap();
        let (e, ino_e) = text_of_fd(last.file(c"uptime", b"1.01 2.00\n", 0).unwrap());
        assert_eq!((e.as_str(), ino_e == ino_c), ("1.01 2.00\n", false));
        // The served descriptor can never be written, nor its memfd grown.
        assert_eq!(nix::unistd::write(&fd, b"x"), Err(Errno::EBADF));
        for i in 0..LAST_SEALED + 2 {
            last.file(&CString::new(format!("n{i}")).unwrap(), b"", 0)
                .unwrap();
        }
        assert_eq!(last.0.lock().unwrap().len(), LAST_SEALED);
    }
}
