//! Serving an open that resolved to a file the guest was handed as its
//! stdio (`crate::handed`): a fresh open of the supervisor's own
//! descriptor of it, as the invoker, with the guest's flags, when its
//! access lies within what the handed descriptors allowed.
//!
//! The rule: the guest may reopen what it was handed, never more. A read
//! needs a handed descriptor open for reading; a write, or a truncation,
//! one open for writing. Anything else is EACCES, even where the
//! invoker's own reopen would succeed natively (root's, of a stdin file
//! it owns, for writing). The open is made with the supervisor's own ids
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

/// Whether an open with `flags` asks for no more than `file`'s handed
/// descriptors gave.
pub(super) fn within(file: &HandedFile, flags: u64) -> bool {
    let access = flags & O_ACCMODE;
    let reads = access != libc::O_WRONLY as u64;
    let writes = access != libc::O_RDONLY as u64 || flags & O_TRUNC != 0;
    (!reads || file.read) && (!writes || file.write)
}

/// The served open of `file` with the guest's `flags` (without
/// `O_CLOEXEC`), or EACCES beyond its handed access. (Out of line: the
/// handler's common paths keep their code.)
#[cold]
#[inline(never)]
pub(super) fn open(g: &dyn Guest, file: &HandedFile, flags: i32) -> Result<OwnedFd, Errno> {
    if !within(file, flags as u64) {
        return Err(Errno::EACCES);
    }
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
    use std::os::fd::AsFd;

    #[test]
    fn no_more_than_the_handed_access() {
        let path = std::env::temp_dir().join(format!("handed-open-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let reader = std::fs::File::open(&path).unwrap();
        let writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let (r, w) = (libc::O_RDONLY as u64, libc::O_WRONLY as u64);
        let (rw, trunc, append) = (libc::O_RDWR as u64, O_TRUNC, libc::O_APPEND as u64);
        let read = HandedFile::of(reader.as_fd()).unwrap();
        assert!(within(&read, r));
        assert!(!within(&read, w) && !within(&read, rw) && !within(&read, r | trunc));
        assert!(!within(&read, O_ACCMODE));
        let written = HandedFile::of(writer.as_fd()).unwrap();
        assert!(within(&written, w) && within(&written, w | trunc) && within(&written, w | append));
        assert!(!within(&written, r) && !within(&written, rw));
        std::fs::remove_file(&path).unwrap();
    }
}
