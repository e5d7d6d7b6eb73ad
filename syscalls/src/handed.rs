//! What the guest was handed: its stdin, stdout and stderr when they are
//! regular host files (`supervisor run -- prog < in.txt > out.txt`), so
//! that a reopen of one by name (`/dev/stdin`, `/dev/stdout`,
//! `/proc/self/fd/N`, `/dev/fd/N`) is served as the invoker's own reopen
//! natively is, within the access the handed descriptor gave.
//!
//! Why: such a file lies outside the view. The kernel's reopen through the
//! magic link meets the guest's Landlock domain (no grant covers a host
//! mount) and, for a root invoker, a guest whose ids are a range of its
//! own rather than the file's owner. The guest holds the file already, so
//! a fresh open of it within the handed access mode gives it nothing new;
//! anything else (another host file, more access than handed) stays the
//! kernel's refusal.
//!
//! Owns: recording each such file once, before the guest starts (its
//! device, inode, the mount it was opened through, its access mode, and a
//! descriptor of it the supervisor keeps), and recognising a resolved
//! object as one of them. Does not own: the open that serves it
//! (`handlers/open/handed.rs`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use nix::fcntl::{fcntl, FcntlArg};

/// The guest's stdio files, recorded once ([`Handed::record`]); read by
/// every worker.
#[derive(Debug, Default)]
pub struct Handed {
    files: OnceLock<Vec<HandedFile>>,
    /// Whether `files` holds any: the one load every served open pays.
    any: AtomicBool,
}

/// One regular file of the guest's stdio.
#[derive(Debug)]
pub struct HandedFile {
    dev: u64,
    ino: u64,
    /// The mount the descriptor reached it through: a host mount, never
    /// one of the view's (whose bind of the same directory is another).
    mount: u64,
    /// Whether the handed descriptors were opened for reading, writing.
    pub(crate) read: bool,
    pub(crate) write: bool,
    /// The supervisor's own descriptor of it (close-on-exec), reopened
    /// for each served open.
    pub(crate) fd: OwnedFd,
}

impl Handed {
    /// Records the regular files among `fds` (the guest's stdin, stdout
    /// and stderr, as it gets them). Only the first call counts: one
    /// guest's stdio per sandbox.
    pub fn record(&self, fds: [BorrowedFd<'_>; 3]) {
        self.files.get_or_init(|| {
            let mut files: Vec<HandedFile> = Vec::new();
            for fd in fds {
                let Some(file) = HandedFile::of(fd) else {
                    continue;
                };
                match files.iter_mut().find(|f| f.same_as(&file)) {
                    Some(known) => {
                        known.read |= file.read;
                        known.write |= file.write;
                    }
                    None => files.push(file),
                }
            }
            self.any.store(!files.is_empty(), Ordering::Release);
            files
        });
    }

    /// [`Handed::record`] of this process's own stdin, stdout and stderr,
    /// which the guest inherits (`run`), or which are the pool client's
    /// when its sandbox lets the guest go.
    pub fn record_own_stdio(&self) {
        let (i, o, e) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
        self.record([i.as_fd(), o.as_fd(), e.as_fd()]);
    }

    /// Whether any file was handed.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The handed file `object` (an object a guest path resolved to,
    /// `st` its stat) is, when it is one reached through the mount it
    /// was handed on. (Apart, and out of line: only a guest handed a
    /// file gets here, [`Handed::any`] first.)
    #[cold]
    #[inline(never)]
    pub(crate) fn find(&self, st: &libc::stat, object: BorrowedFd<'_>) -> Option<&HandedFile> {
        let files = self.files.get()?;
        let file = files
            .iter()
            .find(|f| f.dev == st.st_dev && f.ino == st.st_ino)?;
        (vfs::sys::mount_id(object).ok()? == file.mount).then_some(file)
    }
}

impl HandedFile {
    /// `fd` when it is a regular file open for reading or writing.
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Option<HandedFile> {
        let st = vfs::sys::fstat(fd).ok()?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL).ok()?;
        if flags & libc::O_PATH != 0 {
            return None;
        }
        let access = flags & libc::O_ACCMODE;
        Some(HandedFile {
            dev: st.st_dev,
            ino: st.st_ino,
            mount: vfs::sys::mount_id(fd).ok()?,
            read: access == libc::O_RDONLY || access == libc::O_RDWR,
            write: access == libc::O_WRONLY || access == libc::O_RDWR,
            fd: fd.try_clone_to_owned().ok()?,
        })
    }

    fn same_as(&self, other: &HandedFile) -> bool {
        (self.dev, self.ino, self.mount) == (other.dev, other.ino, other.mount)
    }

    /// The supervisor's descriptor of the file.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn records_regular_files_with_their_access() {
        let dir = std::env::temp_dir().join(format!("handed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        let read = std::fs::File::open(&path).unwrap();
        let write = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        let handed = Handed::default();
        handed.record([read.as_fd(), write.as_fd(), null.as_fd()]);
        assert!(handed.any());
        let st = vfs::sys::fstat(read.as_fd()).unwrap();
        let file = handed.find(&st, read.as_fd()).unwrap();
        assert!(file.read && file.write);
        let other = std::fs::File::open(&dir).unwrap();
        let st = vfs::sys::fstat(other.as_fd()).unwrap();
        assert!(handed.find(&st, other.as_fd()).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
