//! Serving an open that resolved to a file the guest was handed as its
//! stdio (`crate::handed`): a fresh open of the supervisor's own
//! descriptor of it, as the invoker, with the guest's flags, when its
//! access lies within what the handed descriptors allowed.
//!
//! The rule: the guest may reopen what it was handed, never more. A read
//! needs a handed descriptor open for reading; a write, or a truncation,
//! one open for writing. Anything else is EACCES, even where the
//! invoker's own reopen would succeed natively (root's, of a stdin file
//! it owns, for writing), but for one: an `O_RDWR | O_TRUNC` open of a
//! file handed for writing only (Go's `os.Create("/dev/stdout")`) is
//! served write-only. It empties the file, so natively its read half
//! would show only what was written after; the guest knows its own
//! writes, and another writer's are not its to read. Its reads fail
//! EBADF, as a host stdio file's do under runsc (which keeps the host
//! descriptor's access). The open is made with the supervisor's own ids
//! (`Guest::with_own_ids`): the invoker opened the file for the guest,
//! and natively the guest would be the invoker.
//!
//! Owns: that rule and the open. Does not own: recognising the file
//! (`crate::handed`), deciding that an open reached it (`decide.rs`).

use std::os::fd::OwnedFd;

use nix::errno::Errno;

use super::how::{O_ACCMODE, O_TRUNC};
use crate::guest::Guest;
use crate::handed::HandedFile;

/// The flags of the guest's open that the served one keeps: its access
/// mode and status flags. `O_CREAT` finds the file there already; the
/// resolution honoured `O_NOFOLLOW` and `O_DIRECTORY`; ours is
/// close-on-exec whatever the guest asked (the install flag is its).
const KEPT: i32 = libc::O_ACCMODE
    | libc::O_APPEND
    | libc::O_TRUNC
    | libc::O_NONBLOCK
    | libc::O_DSYNC
    | libc::O_SYNC
    | libc::O_DIRECT
    | vfs::sys::O_LARGEFILE
    | libc::O_NOCTTY
    | libc::O_NOATIME;

/// The flags an open with `flags` is served with: the guest's, with
/// `O_WRONLY` for the access of an `O_RDWR | O_TRUNC` open of a file
/// handed for writing only; `None` when it asks for more than `file`'s
/// handed descriptors gave.
pub(super) fn served(file: &HandedFile, flags: u64) -> Option<u64> {
    let truncates = flags & O_TRUNC != 0;
    let read_write = flags & O_ACCMODE == libc::O_RDWR as u64;
    let flags = if read_write && truncates && !file.read {
        flags & !O_ACCMODE | libc::O_WRONLY as u64
    } else {
        flags
    };
    let access = flags & O_ACCMODE;
    let reads = access != libc::O_WRONLY as u64;
    let writes = access != libc::O_RDONLY as u64 || truncates;
    ((!reads || file.read) && (!writes || file.write)).then_some(flags)
}

/// The served open of `file` with the guest's `flags` (without
/// `O_CLOEXEC`; [`served`]), or EACCES beyond its handed access. (Out of
/// line: the handler's common paths keep their code.)
#[cold]
#[inline(never)]
pub(super) fn open(g: &dyn Guest, file: &HandedFile, flags: i32) -> Result<OwnedFd, Errno> {
    let flags = served(file, flags as u64).ok_or(Errno::EACCES)? as i32;
    let mut opened = None;
    g.with_own_ids(&mut || {
        opened = Some(vfs::sys::reopen(file.fd(), flags & KEPT)?);
        Ok(())
    })?;
    opened.ok_or(Errno::EACCES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::fd::AsFd;

    #[test]
    fn no_more_than_the_handed_access() {
        let path = std::env::temp_dir().join(format!("handed-open-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let reader = std::fs::File::open(&path).unwrap();
        let writer = OpenOptions::new().write(true).open(&path).unwrap();
        let (r, w) = (libc::O_RDONLY as u64, libc::O_WRONLY as u64);
        let (rw, trunc, append) = (libc::O_RDWR as u64, O_TRUNC, libc::O_APPEND as u64);
        let read = HandedFile::of(reader.as_fd()).unwrap();
        assert_eq!(served(&read, r), Some(r));
        for beyond in [w, rw, r | trunc, rw | trunc, O_ACCMODE] {
            assert_eq!(served(&read, beyond), None, "{beyond:#o}");
        }
        let written = HandedFile::of(writer.as_fd()).unwrap();
        for within in [w, w | trunc, w | append, w | trunc | append] {
            assert_eq!(served(&written, within), Some(within), "{within:#o}");
        }
        assert_eq!(served(&written, rw | trunc), Some(w | trunc));
        assert_eq!(
            served(&written, rw | trunc | append),
            Some(w | trunc | append)
        );
        assert_eq!(served(&written, r), None);
        assert_eq!(served(&written, rw), None);
        assert_eq!(served(&written, rw | append), None);
        let both = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let both = HandedFile::of(both.as_fd()).unwrap();
        assert_eq!(served(&both, rw | trunc), Some(rw | trunc));
        std::fs::remove_file(&path).unwrap();
    }
}
