//! [`Guest`] over one seccomp notification: the trapped thread as the
//! handlers see it.
//!
//! Owns: mapping each `Guest` method onto host calls against the
//! caller's tid — guest memory through `memory`, descriptors through
//! `/proc/<tid>/fd` and `pidfd_getfd` (pidfds cached in `pidfds`), ids
//! and umask from `/proc/<tid>/status` (the pid-namespace ids kept in
//! `pidfds`; a process leader's from its pidfd's `fdinfo`). Does not
//! own: what the handlers do with them.

use std::fs::{self, OpenOptions};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use nix::errno::Errno;
use sandbox_syscalls::guest::PATH_MAX;
use sandbox_syscalls::Guest;

use super::{ioctl, memory, pidfds, signals};

/// One trapped call of one guest thread.
pub struct NotifGuest<'a> {
    pub listener: BorrowedFd<'a>,
    pub id: u64,
    pub tid: i32,
    /// Called before a handler blocks: another worker takes over receiving.
    pub on_block: &'a dyn Fn(),
}

impl Guest for NotifGuest<'_> {
    fn tid(&self) -> i32 {
        self.tid
    }

    fn read_mem(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        memory::read(self.tid, addr, buf)
    }

    fn write_mem(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        memory::write(self.tid, addr, data)
    }

    fn write_mems(&self, parts: &[(u64, &[u8])]) -> Result<(), Errno> {
        memory::write_all(self.tid, parts)
    }

    fn read_path(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        memory::read_cstr(self.tid, addr, PATH_MAX)
    }

    fn still_valid(&self) -> bool {
        ioctl::id_valid(self.listener, self.id)
    }

    fn fd_path(&self, fd: i32) -> Result<OwnedFd, Errno> {
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        open_proc(&format!("/proc/{}/fd/{fd}", self.tid), 0).map_err(|e| match e {
            Errno::ENOENT => Errno::EBADF,
            e => e,
        })
    }

    fn fd_link(&self, fd: i32) -> Result<Vec<u8>, Errno> {
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        match fs::read_link(format!("/proc/{}/fd/{fd}", self.tid)) {
            Ok(p) => Ok(std::os::unix::ffi::OsStringExt::into_vec(
                p.into_os_string(),
            )),
            Err(e) => Err(match e.raw_os_error() {
                Some(libc::ENOENT) => Errno::EBADF,
                Some(n) => Errno::from_raw(n),
                None => Errno::EIO,
            }),
        }
    }

    fn dup_fd(&self, fd: i32) -> Result<OwnedFd, Errno> {
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        pidfds::getfd(self.tid, fd)
    }

    fn cwd(&self) -> Result<OwnedFd, Errno> {
        open_proc(&format!("/proc/{}/cwd", self.tid), libc::O_DIRECTORY)
    }

    fn umask(&self) -> Result<u32, Errno> {
        let v = status_field(self.tid, "Umask:")?;
        u32::from_str_radix(v.trim(), 8).map_err(|_| Errno::EIO)
    }

    fn may_block(&self) {
        (self.on_block)()
    }

    fn signal_pending(&self) -> bool {
        signals::catchable_pending(self.tid)
    }

    fn raise_sigpipe(&self) {
        // A thread that has just died takes no signal: nothing to do.
        let _ = pidfds::signal(self.tid, nix::sys::signal::Signal::SIGPIPE);
    }

    fn install_fd(&self, fd: OwnedFd, cloexec: bool) -> Result<i32, (Errno, OwnedFd)> {
        ioctl::add_fd_and_answer(self.listener, self.id, fd.as_fd(), cloexec).map_err(|e| (e, fd))
    }

    fn replace_fd(&self, target: i32, fd: &OwnedFd) -> Result<(), Errno> {
        let cloexec = signals::fd_cloexec(self.tid, target)?;
        ioctl::add_fd_at(self.listener, self.id, fd.as_fd(), target, cloexec)
    }

    fn ns_ids(&self) -> Result<(i32, i32), Errno> {
        ns_ids_of(self.tid)
    }

    fn host_tgid(&self) -> Result<i32, Errno> {
        tgid_of(self.tid)
    }

    fn with_caller_caps(
        &self,
        wanted: u64,
        act: &mut dyn FnMut() -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let (before, permitted) = crate::sys::caps::current()?;
        // A worker that may raise none of them need not read the caller's.
        if wanted & permitted == 0 {
            return Err(Errno::EPERM);
        }
        let raise = caller_caps(self.tid) & wanted & permitted;
        if raise == 0 || !self.still_valid() {
            return Err(Errno::EPERM);
        }
        crate::sys::caps::set_effective(before | raise)?;
        let r = act();
        if crate::sys::caps::set_effective(before).is_err() {
            eprintln!("supervisor: a worker cannot lower its capabilities");
            std::process::abort();
        }
        r
    }

    fn with_own_ids(&self, act: &mut dyn FnMut() -> Result<(), Errno>) -> Result<(), Errno> {
        super::creds::with_own(act)?
    }
}

/// Thread `tid`'s (tgid, tid) in the sandbox's pid namespace: kept in
/// `pidfds`, else read (a leader's from its pidfd's `fdinfo`, another
/// thread's from its status) and kept. Needs no trapped call: a sandbox
/// that waits for its command reads its main process's ahead
/// ([`super::Trap::warm_process`]).
pub(super) fn ns_ids_of(tid: i32) -> Result<(i32, i32), Errno> {
    pidfds::ns_ids(tid, |pidfd| {
        pidfd
            .and_then(|p| leader_ns_ids(tid, p))
            .map_or_else(|| read_ns_ids(tid), Ok)
    })
}

/// The effective capabilities thread `tid` holds in its own user
/// namespace (bit N: capability N; none when they cannot be read).
/// Read at each use, not from the ids' cache: a guest root may drop
/// capabilities without changing its ids. `capget` of the thread, the
/// sets its status prints, without rendering the rest of the status
/// (about 14 µs less on these VMs).
pub(super) fn caller_caps(tid: i32) -> u64 {
    crate::sys::caps::of_thread(tid).map_or(0, |(effective, _)| effective)
}

/// The (tgid, tid) in the innermost pid namespace of thread `tid`, when
/// it leads its process (its tid is its tgid, in every namespace), from
/// `pidfd`'s `fdinfo` (`NSpid:`, the pid in each namespace from this
/// process's down); `None` otherwise (another thread's tgid is not
/// there) or when either cannot be read. The kernel renders that text
/// from one `struct pid`, where a `status` text renders most of the
/// task (memory, signals, capabilities...): about half the cost of its
/// open, read and close on these VMs, on every process's first call that
/// names `/proc/self`.
fn leader_ns_ids(tid: i32, pidfd: BorrowedFd<'_>) -> Option<(i32, i32)> {
    let (pid, tgid) = crate::sys::pidfd::pid_tgid(pidfd).ok()?;
    if i64::from(pid) != i64::from(tid) || pid != tgid {
        return None;
    }
    let info = signals::fdinfo_start("self", pidfd.as_raw_fd()).ok()?;
    let host = field_of(&info, "Pid:")?.trim().parse::<i32>().ok()?;
    let inner = field_of(&info, "NSpid:")?
        .split_whitespace()
        .last()?
        .parse::<i32>()
        .ok()?;
    (host == tid && inner > 0).then_some((inner, inner))
}

/// Thread `tid`'s (tgid, tid) in the innermost pid namespace, from its
/// status text.
fn read_ns_ids(tid: i32) -> Result<(i32, i32), Errno> {
    let status = read_status(tid)?;
    let last = |field: &str| -> Result<i32, Errno> {
        field_of(&status, field)
            .and_then(|v| v.split_whitespace().last())
            .and_then(|s| s.parse().ok())
            .ok_or(Errno::EIO)
    };
    Ok((last("NStgid:")?, last("NSpid:")?))
}

/// An `O_PATH` descriptor for a `/proc/<tid>/...` magic link (std adds
/// `O_CLOEXEC`).
fn open_proc(path: &str, extra: i32) -> Result<OwnedFd, Errno> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | extra)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}

/// The thread-group id of thread `tid`.
pub(super) fn tgid_of(tid: i32) -> Result<i32, Errno> {
    status_field(tid, "Tgid:")?
        .trim()
        .parse()
        .map_err(|_| Errno::EIO)
}

/// `/proc/<tid>/status`; ESRCH when the thread is gone. Read into room
/// for the whole text (about 1.5 KiB): two reads, where
/// `fs::read_to_string` (procfs reports a size of 0) stats the file and
/// reads it in pieces of 32, 32, 64... bytes, ten calls.
pub(super) fn read_status(tid: i32) -> Result<String, Errno> {
    use std::io::Read;
    let mut f = fs::File::open(format!("/proc/{tid}/status")).map_err(|_| Errno::ESRCH)?;
    let mut text = vec![0u8; STATUS_ROOM];
    let mut len = 0;
    loop {
        if len == text.len() {
            text.resize(len * 2, 0);
        }
        match f.read(&mut text[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Errno::ESRCH),
        }
    }
    text.truncate(len);
    String::from_utf8(text).map_err(|_| Errno::EIO)
}

/// Bytes a status text is read into at first.
const STATUS_ROOM: usize = 4096;

/// The value of one `Field:` line of a status text.
pub(super) fn field_of<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(field))
}

/// The value of one `Field:` line of `/proc/<tid>/status`.
fn status_field(tid: i32, field: &str) -> Result<String, Errno> {
    let status = read_status(tid)?;
    field_of(&status, field)
        .map(str::to_string)
        .ok_or(Errno::EIO)
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::sys::pidfd;

    #[test]
    fn a_leaders_ids_from_its_pidfd_are_its_status_ones() {
        let me = std::process::id() as i32;
        let Ok(p) = pidfd::open(me, true) else {
            return; // a kernel before PIDFD_THREAD: the status is read
        };
        if pidfd::pid_tgid(p.as_fd()).is_err() {
            return; // a kernel before PIDFD_GET_INFO: the status is read
        }
        assert_eq!(leader_ns_ids(me, p.as_fd()), Some(read_ns_ids(me).unwrap()));
        // A pidfd that is not of the thread named is not taken.
        assert_eq!(leader_ns_ids(me + 1, p.as_fd()), None);
        // Another thread's tgid is not in its pidfd's fdinfo.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw()).unwrap();
            done_rx.recv().ok();
        });
        let tid = rx.recv().unwrap();
        let other = pidfd::open(tid, true).unwrap();
        assert_eq!(leader_ns_ids(tid, other.as_fd()), None);
        let (tgid, own) = read_ns_ids(tid).unwrap();
        assert_eq!((tgid, own), (read_ns_ids(me).unwrap().0, tid));
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
