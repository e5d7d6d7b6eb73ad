//! The view's procfs as a directory descriptor, for the census of the
//! sandbox's tasks: its numbered entries, and the files and directories
//! below it, each opened or stat'ed relative to the descriptor.
//!
//! Relative calls walk only the names given. A path through
//! `/proc/self/fd/N` (what `std::fs` needs) costs the kernel a magic-link
//! walk and a ptrace check at every call: the census of `/proc/stat` and
//! sysinfo(2) made one per task.
//!
//! Owns: reading the directory. Does not own: what the census counts
//! (`tasks.rs`) or finding the view's procfs (`texts::with_view_proc`).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use super::sealed;

/// Room for one `getdents64` of a directory: the view's /proc root (about
/// 60 names and the pids) or a process's `task` or `fd` in one read.
const DIRENT_ROOM: usize = 32 * 1024;

/// A descriptor of a procfs directory (an `O_PATH` one will do).
pub struct ProcDir {
    fd: OwnedFd,
}

impl ProcDir {
    pub fn new(fd: OwnedFd) -> ProcDir {
        ProcDir { fd }
    }

    /// The numbered entries of the directory `rel` ("." for this one),
    /// in the order procfs lists them; none if it cannot be read.
    pub fn numbered(&self, rel: &str) -> Vec<u32> {
        let mut numbers = Vec::new();
        self.each_name(rel, |name| numbers.extend(name.parse::<u32>().ok()));
        numbers
    }

    /// How many entries the directory `rel` has, "." and ".." aside.
    pub fn entry_count(&self, rel: &str) -> Option<usize> {
        let mut count = 0;
        self.each_name(rel, |_| count += 1)?;
        Some(count)
    }

    /// The link count of `rel` (not followed if a symlink).
    pub fn link_count(&self, rel: &str) -> Option<u64> {
        let name = CString::new(rel).ok()?;
        let st = vfs::sys::fstatat(self.fd.as_fd(), &name, libc::AT_SYMLINK_NOFOLLOW).ok()?;
        Some(st.st_nlink)
    }

    /// The text of the file `rel`, a task's `stat` or `status` (one
    /// open, [`sealed::read_record`]: a single read where the text fits).
    pub fn read(&self, rel: &str) -> Option<String> {
        let name = CString::new(rel).ok()?;
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        let file = vfs::sys::openat(self.fd.as_fd(), &name, flags, 0).ok()?;
        sealed::read_record(file).ok()
    }

    /// Calls `f` with each name in the directory `rel`, "." and ".."
    /// aside (borrowed: no name is copied); `None` if it cannot be read.
    ///
    /// `getdents64` on the descriptor itself: an open, the reads and a
    /// close (a `DIR` stream would add an `fstat`, two `fcntl`s and, at
    /// its end, an `lseek`: four calls more per listing of a census).
    fn each_name(&self, rel: &str, mut f: impl FnMut(&str)) -> Option<()> {
        let name = CString::new(rel).ok()?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let dir = vfs::sys::openat(self.fd.as_fd(), &name, flags, 0).ok()?;
        let mut buf = vec![0u8; DIRENT_ROOM];
        loop {
            let n = match vfs::sys::getdents64(dir.as_fd(), &mut buf) {
                Ok(0) => return Some(()),
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return None,
            };
            for name in vfs::sys::dirent_names(&buf[..n]) {
                match std::str::from_utf8(name) {
                    Ok("." | "..") | Err(_) => {}
                    Ok(name) => f(name),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_procfs() -> ProcDir {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        ProcDir::new(
            vfs::sys::openat(std::fs::File::open("/").unwrap().as_fd(), c"proc", flags, 0).unwrap(),
        )
    }

    #[test]
    fn reads_the_host_procfs_as_std_does() {
        let proc = this_procfs();
        let me = std::process::id();
        assert!(proc.numbered(".").contains(&me));
        let threads = proc.numbered(&format!("{me}/task"));
        assert!(threads.contains(&me));
        // procfs makes a task directory's link count its threads plus two.
        let links = proc.link_count(&format!("{me}/task")).unwrap();
        assert!(links >= 3, "{links}");
        let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
        let counted = proc.entry_count(&format!("{me}/fd")).unwrap();
        assert!(counted.abs_diff(fds) <= 2, "{counted} against {fds}");
        let status = proc.read(&format!("{me}/status")).unwrap();
        assert!(status.starts_with("Name:"), "{status}");
        assert_eq!(proc.read("no-such-file"), None);
        assert_eq!(proc.numbered("no-such-dir"), Vec::<u32>::new());
        assert_eq!(proc.link_count("bad\0name"), None);
    }
}
