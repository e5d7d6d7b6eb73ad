//! The view's procfs as a directory descriptor, for the census of the
//! sandbox's tasks: its numbered entries, and the files and directories
//! below it, each opened or stat'ed relative to the descriptor; and the
//! same kept open between serviced calls ([`KeptProc`]), for the census
//! behind the sandbox's global files.
//!
//! Relative calls walk only the names given. A path through
//! `/proc/self/fd/N` (what `std::fs` needs) costs the kernel a magic-link
//! walk and a ptrace check at every call: the census of `/proc/stat` and
//! sysinfo(2) made one per task.
//!
//! Kept open, the root is listed again after a rewind (no open of it,
//! no close), and each task file the census reads is read again with a
//! `pread` at offset 0, which makes procfs render a fresh text (a
//! `seq_file` restarts at a read from 0): one call where an open, a read
//! and a close were three. A kept file pins the kernel's `struct pid` of
//! its task, never a number: once that task is reaped its read fails
//! (ESRCH), and the number, listed again for another task, is opened
//! afresh. Files of numbers the root no longer lists are closed at the
//! next listing, and at most [`KEPT_FILES`] are kept.
//!
//! Owns: reading the directory, and which of its files are kept open.
//! Does not own: what the census counts (`tasks.rs`) or finding the
//! view's procfs (`texts::with_view_proc`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use vfs::resolve::flags::IN_ROOT;
use vfs::Resolver;

use super::sealed;

/// Room for one `getdents64` of a directory: the view's /proc root (about
/// 60 names and the pids) or a process's `task` or `fd` in one read.
const DIRENT_ROOM: usize = 32 * 1024;

/// How many task files a [`KeptProc`] keeps open: a census of 16
/// processes, each its `stat` and `schedstat` (or `status`). Each is a descriptor of the
/// supervisor's and a page of the kernel's; a larger sandbox's further
/// files are opened for each read, as before.
pub const KEPT_FILES: usize = 32;

/// Where procfs's root lists its first process: `proc_root_readdir`
/// lists its ~60 named entries up to offset 256 (`FIRST_PROCESS_ENTRY`),
/// then `self` and `thread-self`, and each process's number from 258
/// (`TGID_OFFSET`). A kept root is listed from there once a listing from
/// there was seen to give what a whole listing gives ([`Start`]).
const FIRST_PID_OFFSET: i64 = 258;

/// How many whole listings a kept root is checked against one from
/// [`FIRST_PID_OFFSET`] (a task that comes or goes between the two
/// spoils a check) before it is listed whole for good.
const START_CHECKS: u8 = 3;

/// Where a kept root's listing starts.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// At 0, and checked against [`FIRST_PID_OFFSET`] so many times more.
    Checking(u8),
    /// At [`FIRST_PID_OFFSET`]: the processes alone.
    Pids,
    /// At 0: no check agreed.
    Whole,
}

/// A descriptor of a procfs directory (an `O_PATH` one will do, unless
/// kept: [`ProcDir::kept`]).
#[derive(Debug)]
pub struct ProcDir {
    fd: OwnedFd,
    /// The files read, by their path under the directory, and where the
    /// root's listing starts, when kept.
    kept: Option<Kept>,
}

#[derive(Debug)]
struct Kept {
    files: RefCell<HashMap<String, OwnedFd>>,
    start: Cell<Start>,
}

impl ProcDir {
    pub fn new(fd: OwnedFd) -> ProcDir {
        ProcDir { fd, kept: None }
    }

    /// A directory kept open between uses (`fd` opened for reading, not
    /// `O_PATH`): listed after a rewind, its files kept open and read
    /// again from offset 0.
    pub fn kept(fd: OwnedFd) -> ProcDir {
        let kept = Some(Kept {
            files: RefCell::new(HashMap::new()),
            start: Cell::new(Start::Checking(START_CHECKS)),
        });
        ProcDir { fd, kept }
    }

    /// The numbered entries of the directory `rel` ("." for this one),
    /// in the order procfs lists them; none if it cannot be read.
    /// Listing a kept directory itself closes the kept files of numbers
    /// it no longer lists.
    pub fn numbered(&self, rel: &str) -> Vec<u32> {
        let numbers = match &self.kept {
            Some(kept) if rel == "." => self.own_numbers(kept),
            _ => {
                let mut numbers = Vec::new();
                self.each_name(rel, |name| numbers.extend(name.parse::<u32>().ok()));
                return numbers;
            }
        };
        let listed = |path: &String| {
            let first = path.split('/').next().and_then(|n| n.parse().ok());
            first.is_some_and(|n: u32| numbers.contains(&n))
        };
        if let Some(kept) = &self.kept {
            kept.files.borrow_mut().retain(|path, _| listed(path));
        }
        numbers
    }

    /// The numbered entries of the kept root itself, listed from where
    /// [`Start`] says (checking that start while it may).
    fn own_numbers(&self, kept: &Kept) -> Vec<u32> {
        match kept.start.get() {
            Start::Pids => self.numbers_from(FIRST_PID_OFFSET),
            Start::Whole => self.numbers_from(0),
            Start::Checking(left) => {
                let whole = self.numbers_from(0);
                let next = match self.numbers_from(FIRST_PID_OFFSET) == whole {
                    true => Start::Pids,
                    false if left > 1 => Start::Checking(left - 1),
                    false => Start::Whole,
                };
                kept.start.set(next);
                whole
            }
        }
    }

    /// The numbered entries of the kept root, listed from `offset` (no
    /// open of it, no close); none if it cannot be read.
    fn numbers_from(&self, offset: i64) -> Vec<u32> {
        let mut numbers = Vec::new();
        self.names_from(offset, |name| numbers.extend(name.parse::<u32>().ok()));
        numbers
    }

    /// Calls `f` with each name of the directory itself from `offset`.
    fn names_from(&self, offset: i64, f: impl FnMut(&str)) -> Option<()> {
        let whence = nix::unistd::Whence::SeekSet;
        nix::unistd::lseek(self.fd.as_raw_fd(), offset, whence).ok()?;
        names_of(self.fd.as_fd(), f)
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

    /// The text of the file `rel`, a task's `stat`, `schedstat` or `status` (one
    /// open, [`sealed::read_record`]: a single read where the text fits;
    /// in a kept directory one `pread` of the file kept open, which is
    /// opened and kept at its first read).
    pub fn read(&self, rel: &str) -> Option<String> {
        let Some(Kept { files, .. }) = &self.kept else {
            return sealed::read_record(self.open(rel)?).ok();
        };
        if let Some(file) = files.borrow().get(rel) {
            if let Ok(text) = sealed::read_record_again(file.as_fd()) {
                return Some(text);
            }
        }
        // Not kept yet, or its task reaped (ESRCH): the number's task now.
        files.borrow_mut().remove(rel);
        let file = self.open(rel)?;
        let text = sealed::read_record_again(file.as_fd()).ok()?;
        let mut files = files.borrow_mut();
        if files.len() < KEPT_FILES {
            files.insert(rel.to_owned(), file);
        }
        Some(text)
    }

    /// The file `rel` opened for reading.
    fn open(&self, rel: &str) -> Option<OwnedFd> {
        let name = CString::new(rel).ok()?;
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        vfs::sys::openat(self.fd.as_fd(), &name, flags, 0).ok()
    }

    /// Calls `f` with each name in the directory `rel`, "." and ".."
    /// aside (borrowed: no name is copied); `None` if it cannot be read.
    ///
    /// `getdents64` on the descriptor itself: an open, the reads and a
    /// close (a `DIR` stream would add an `fstat`, two `fcntl`s and, at
    /// its end, an `lseek`: four calls more per listing of a census).
    fn each_name(&self, rel: &str, f: impl FnMut(&str)) -> Option<()> {
        let name = CString::new(rel).ok()?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let dir = vfs::sys::openat(self.fd.as_fd(), &name, flags, 0).ok()?;
        names_of(dir.as_fd(), f)
    }
}

/// Calls `f` with each name `dir` lists from where its offset stands,
/// "." and ".." aside; `None` if it cannot be read.
fn names_of(dir: BorrowedFd<'_>, mut f: impl FnMut(&str)) -> Option<()> {
    let mut buf = vec![0u8; DIRENT_ROOM];
    loop {
        let n = match vfs::sys::getdents64(dir, &mut buf) {
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

/// The view's procfs kept open for the census of the sandbox's tasks
/// behind its global files (`/proc/stat`, `uptime`, `loadavg`): opened
/// at the first census, closed with the sandbox's handlers' context.
/// One census at a time reads it (they share the root's offset).
#[derive(Debug, Default)]
pub struct KeptProc(Mutex<Option<ProcDir>>);

impl KeptProc {
    /// `f` of the view's procfs (`fs`'s `/proc`), kept open; `None`
    /// when it cannot be opened.
    pub fn with<T>(&self, fs: &Resolver, f: impl FnOnce(&ProcDir) -> T) -> Option<T> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_none() {
            let flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
            let fd = vfs::sys::openat2(fs.root(), c"/proc", flags, 0, IN_ROOT).ok()?;
            *kept = Some(ProcDir::kept(fd));
        }
        kept.as_ref().map(f)
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
        // The test binary's other threads open and close descriptors
        // meanwhile: the two counts are taken again until they agree.
        let counts = || {
            let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
            (proc.entry_count(&format!("{me}/fd")).unwrap(), fds)
        };
        let mut seen = Vec::new();
        for _ in 0..20 {
            let (counted, fds) = counts();
            seen.push((counted, fds));
            if counted.abs_diff(fds) <= 2 {
                break;
            }
        }
        let (counted, fds) = seen[seen.len() - 1];
        assert!(
            counted.abs_diff(fds) <= 2,
            "counted against read_dir: {seen:?}"
        );
        let status = proc.read(&format!("{me}/status")).unwrap();
        assert!(status.starts_with("Name:"), "{status}");
        assert_eq!(proc.read("no-such-file"), None);
        assert_eq!(proc.numbered("no-such-dir"), Vec::<u32>::new());
        assert_eq!(proc.link_count("bad\0name"), None);
    }

    fn kept_names(proc: &ProcDir) -> Vec<String> {
        let kept = proc.kept.as_ref().unwrap().files.borrow();
        let mut names: Vec<String> = kept.keys().cloned().collect();
        names.sort();
        names
    }

    #[test]
    fn a_kept_procfs_reads_fresh_texts_and_forgets_reaped_tasks() {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let root = std::fs::File::open("/").unwrap();
        let proc = ProcDir::kept(vfs::sys::openat(root.as_fd(), c"proc", flags, 0).unwrap());
        let me = std::process::id();
        let mine = format!("{me}/stat");
        let utime = |text: String| crate::StatLine::parse(&text).unwrap().number::<u64>(14);
        let first = utime(proc.read(&mine).unwrap());
        // Busy until a fresh open tells more CPU time (a clock tick):
        // the kept file's next read tells at least as much.
        let fresh = || utime(std::fs::read_to_string(format!("/proc/{mine}")).unwrap());
        let guard = std::time::Instant::now();
        let mut spin = 0u64;
        while fresh() <= first && guard.elapsed() < std::time::Duration::from_secs(60) {
            for _ in 0..100_000 {
                spin = std::hint::black_box(spin.wrapping_add(1));
            }
        }
        let now = fresh();
        let again = utime(proc.read(&mine).unwrap());
        assert!(
            again >= now && now > first,
            "utime {first:?}, {now:?} then {again:?}"
        );
        assert_eq!(kept_names(&proc), vec![mine.clone()]);

        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let theirs = format!("{}/stat", child.id());
        let text = proc.read(&theirs).unwrap();
        assert!(text.starts_with(&format!("{} (", child.id())), "{text}");
        assert!(proc.numbered(".").contains(&child.id()));
        assert_eq!(kept_names(&proc).len(), 2);
        child.kill().unwrap();
        child.wait().unwrap();
        // Reaped: its kept file answers no more, and is not kept again.
        assert_eq!(proc.read(&theirs), None);
        assert!(!proc.numbered(".").contains(&child.id()));
        assert_eq!(kept_names(&proc), vec![mine]);
        // Listed from the first process's offset: the processes alone.
        let pids = proc.numbers_from(FIRST_PID_OFFSET);
        assert!(pids.contains(&me) && pids.contains(&1), "{pids:?}");
        let mut names = Vec::new();
        proc.names_from(FIRST_PID_OFFSET, |n| names.push(n.to_owned()));
        assert!(names.iter().all(|n| n.parse::<u32>().is_ok()), "{names:?}");
        assert!(names.len() >= pids.len() / 2, "{names:?} against {pids:?}");
        // At most KEPT_FILES are kept; the others are read all the same.
        let pids = proc.numbered(".");
        let stat = |pid: &&u32| proc.read(&format!("{pid}/stat")).is_some();
        let read = pids.iter().filter(stat).count();
        assert!(read > 0);
        assert_eq!(kept_names(&proc).len(), read.min(KEPT_FILES));
    }
}
