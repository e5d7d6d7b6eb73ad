//! Serviced calls made with the caller's ids: when the sandbox maps a
//! range of ids (the OCI runtime as root, `process.user` or `exec --user`
//! other than root), the worker serving a call takes the calling guest
//! process's filesystem uid and gid and its supplementary groups for it,
//! so the kernel checks file access exactly as it would for that process,
//! and what it creates is that user's. Its real and effective uid stay
//! the supervisor's: as the owner of the sandbox's user namespace it may
//! still read the caller's memory and copy its descriptors (the kernel's
//! ptrace check), as with every caller.
//!
//! Owns: reading a caller's ids (once per process: `/proc/<tid>/status`,
//! kept with a pidfd of the thread, which `PIDFD_GET_INFO` checks is
//! still the same live thread on every use) and switching a worker
//! thread's ids (`sys::thread_ids`: per thread, never glibc's
//! process-wide calls). A worker keeps the ids it last took and switches
//! only when the next caller's differ: the common case (every caller
//! root, as the worker) costs one cache look-up and one ioctl. Does not
//! own: the worker loop (`mod.rs`).
//!
//! Why ids read once stay right: without a range of ids the guest holds
//! no capability and runs with the locked securebits, so nothing in it
//! can change its ids; init and the exec helpers switch a new process's
//! ids right after fork, before it makes any call the trap serves
//! (`launch/users.rs`). With a range, a guest root holds CAP_SETUID and
//! CAP_SETGID in its namespace and may change them: every use of a kept
//! entry checks the thread's filesystem uid and gid again
//! (`PIDFD_GET_INFO`), so a setuid or setgid is seen at its next call; a
//! setgroups alone is not (programs drop groups and then their gid and
//! uid, which is seen), and until then its calls are served with the
//! groups it had.
//!
//! The worker keeps CAP_SETUID and CAP_SETGID for this (they grant no
//! file access; setfsuid back to its real uid needs none); with one
//! mapped id it drops every capability as before.
//!
//! Calls whose service depends on no id of the caller's ([`needs_ids`]:
//! the names and options of sockets) skip all this where the worker
//! could have switched: no look-up, no `PIDFD_GET_INFO` (about 1.2 µs of
//! a 14–20 µs call, docs/trap.md).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, OnceLock};

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::sys::{pidfd, thread_ids};

/// A process's ids as the kernel checks them for file access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Ids {
    /// This thread's own ids.
    pub fn own() -> Ids {
        let groups = nix::unistd::getgroups()
            .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
            .unwrap_or_default();
        Ids {
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            groups,
        }
    }
}

/// Callers whose ids are kept (most recently used last).
const KEPT: usize = 64;

struct Entry {
    tid: i32,
    pidfd: Arc<OwnedFd>,
    ids: Arc<Ids>,
}

static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The ids of guest thread `tid`, which is waiting in a trapped call.
pub fn of_caller(tid: i32) -> Result<Arc<Ids>, Errno> {
    if let Some((pidfd, ids)) = cached(tid) {
        match pidfd::fs_ids(pidfd.as_fd()) {
            Ok((uid, gid)) if uid == ids.uid && gid == ids.gid => return Ok(ids),
            _ => forget(tid),
        }
    }
    let (pidfd, of_thread) = super::pidfds::open(tid)?;
    let ids = Arc::new(read_ids(tid)?);
    // The status read was of the thread the pidfd names only if that
    // thread still lives with those ids (its tid cannot have been reused
    // while it lives).
    match pidfd::fs_ids(pidfd.as_fd()) {
        Ok((uid, gid)) if uid == ids.uid && gid == ids.gid => {
            if of_thread {
                let pidfd = Arc::new(pidfd);
                super::pidfds::adopt(tid, &pidfd);
                keep(tid, pidfd, ids.clone());
            }
            Ok(ids)
        }
        Ok(_) => Err(Errno::ESRCH),
        // Kernels before 6.13 have no PIDFD_GET_INFO: read every time.
        Err(Errno::ENOTTY) | Err(Errno::EINVAL) => Ok(ids),
        Err(e) => Err(e),
    }
}

fn cached(tid: i32) -> Option<(Arc<OwnedFd>, Arc<Ids>)> {
    let cache = CACHE.lock();
    cache
        .iter()
        .rev()
        .find(|e| e.tid == tid)
        .map(|e| (e.pidfd.clone(), e.ids.clone()))
}

fn forget(tid: i32) {
    CACHE.lock().retain(|e| e.tid != tid);
}

fn keep(tid: i32, pidfd: Arc<OwnedFd>, ids: Arc<Ids>) {
    let mut cache = CACHE.lock();
    cache.retain(|e| e.tid != tid);
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push(Entry { tid, pidfd, ids });
}

/// Whether serving call `nr` may depend on the caller's ids. Not for
/// getsockname, getpeername, getsockopt and setsockopt
/// (`handlers/net/names.rs`): they open no path and create nothing; what
/// they do on the host is a `pidfd_getfd` and `process_vm_readv/writev`
/// of the caller (checked against the worker's real ids, never the
/// filesystem ones it switches), calls on the copied socket and on the
/// netstack's own host sockets, which check no ids, and CONTINUE, which
/// the kernel runs with the caller's own credentials.
pub fn needs_ids(nr: i64) -> bool {
    !matches!(
        nr,
        libc::SYS_getsockname | libc::SYS_getpeername | libc::SYS_getsockopt | libc::SYS_setsockopt
    )
}

/// The filesystem uid and gid and the groups of `/proc/<tid>/status`.
fn read_ids(tid: i32) -> Result<Ids, Errno> {
    parse_status(&super::guest::read_status(tid)?).ok_or(Errno::EIO)
}

/// Ids from a status text: the fourth (filesystem) field of `Uid:` and
/// `Gid:`, and `Groups:`.
fn parse_status(status: &str) -> Option<Ids> {
    let fs_id = |field: &str| -> Option<u32> {
        super::guest::field_of(status, field)?
            .split_whitespace()
            .nth(3)?
            .parse()
            .ok()
    };
    let groups = super::guest::field_of(status, "Groups:")?
        .split_whitespace()
        .map(|g| g.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    Some(Ids {
        uid: fs_id("Uid:")?,
        gid: fs_id("Gid:")?,
        groups,
    })
}

/// The supervisor's own ids, which workers act with between callers.
static OWN: OnceLock<Ids> = OnceLock::new();

/// Remembers this thread's ids as the supervisor's own: call it before
/// any worker starts (then no thread has taken a caller's ids yet).
pub fn remember_own() {
    OWN.get_or_init(Ids::own);
}

/// Runs `act` on this worker thread with the supervisor's own ids, then
/// takes back those the thread acted with (the caller's): for the one
/// open the handlers make as the invoker (a reopen of a file the guest
/// was handed, `Guest::with_own_ids`). A root supervisor's fsuid 0 brings
/// back the file capabilities its worker keeps permitted, for that open
/// alone. EPERM when the thread cannot switch; a thread that cannot take
/// the caller's ids back ends the supervisor, as [`Acting::restore`].
pub fn with_own<R>(act: impl FnOnce() -> R) -> Result<R, Errno> {
    let Some(own) = OWN.get() else {
        return Ok(act());
    };
    let (uid, gid) = thread_ids::fs_ids();
    let groups = nix::unistd::getgroups()
        .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
        .map_err(|_| Errno::EPERM)?;
    let now = Ids { uid, gid, groups };
    if now == *own {
        return Ok(act());
    }
    let switched = switch_to(own);
    let r = switched.map(|()| act());
    if switch_to(&now).is_err() {
        eprintln!("supervisor: a worker cannot take back its caller's ids");
        std::process::abort();
    }
    r
}

/// Sets this thread's groups, filesystem gid and uid to `ids` (what
/// [`Acting::take`] and [`with_own`] switch to).
fn switch_to(ids: &Ids) -> Result<(), Errno> {
    thread_ids::set_groups(&ids.groups)
        .and_then(|()| thread_ids::set_fsgid(ids.gid))
        .and_then(|()| thread_ids::set_fsuid(ids.uid))
}

/// One worker thread's ids: its own, and those it acts with now.
pub struct Acting {
    own: Ids,
    now: Ids,
    /// Whether it may take other ids (a root supervisor): an
    /// unprivileged one, whose guest maps a subordinate range, acts only
    /// for callers with its own ids and refuses the others (EPERM)
    /// rather than serve them with its own.
    can_switch: bool,
}

impl Acting {
    /// For the calling worker thread: sets its filesystem ids and groups
    /// to the supervisor's own (see [`remember_own`]; a worker started by
    /// another, mid-call, would inherit that one's caller's).
    pub fn new() -> Acting {
        let own = OWN.get_or_init(Ids::own).clone();
        let can_switch = nix::unistd::geteuid().is_root();
        if !can_switch {
            return Acting {
                now: own.clone(),
                own,
                can_switch,
            };
        }
        let mut acting = Acting {
            now: Ids {
                uid: u32::MAX,
                ..own.clone()
            },
            own,
            can_switch,
        };
        acting.restore();
        acting
    }

    /// Whether call `nr` must be served with its caller's ids: always
    /// for a worker that cannot switch (it refuses callers with other
    /// ids, whatever the call), else as [`needs_ids`] says.
    pub fn acts_for(&self, nr: i64) -> bool {
        !self.can_switch || needs_ids(nr)
    }

    /// Makes this thread act with `ids` (nothing to do if it already does).
    pub fn take(&mut self, ids: &Ids) -> Result<(), Errno> {
        if *ids == self.now {
            return Ok(());
        }
        if !self.can_switch {
            return Err(Errno::EPERM);
        }
        self.restore();
        if *ids == self.own {
            return Ok(());
        }
        match switch_to(ids) {
            Ok(()) => {
                self.now = ids.clone();
                Ok(())
            }
            Err(e) => {
                self.now = Ids {
                    uid: u32::MAX,
                    ..self.own.clone()
                };
                self.restore();
                Err(e)
            }
        }
    }

    /// Back to the thread's own ids. A worker that cannot return to them
    /// could serve the next caller with another's ids: it ends the
    /// supervisor instead (the kernel never refuses this: the real ids
    /// are still ours, and CAP_SETGID stays effective).
    pub fn restore(&mut self) {
        if self.now == self.own {
            return;
        }
        let own = &self.own;
        let back = thread_ids::set_fsuid(own.uid)
            .and_then(|()| thread_ids::set_fsgid(own.gid))
            .and_then(|()| thread_ids::set_groups(&own.groups));
        if let Err(e) = back {
            eprintln!("supervisor: a worker cannot take back its own ids: {e}");
            std::process::abort();
        }
        self.now = own.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_ids() {
        let status = "Name:\tsh\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t101\n\
                      Groups:\t10 20 \nNSpid:\t5\n";
        let ids = parse_status(status).unwrap();
        assert_eq!((ids.uid, ids.gid, ids.groups), (1000, 101, vec![10, 20]));
        let none = parse_status("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n").unwrap();
        assert!(none.groups.is_empty());
        assert!(parse_status("Uid:\t0\nGid:\t0\t0\t0\t0\nGroups:\n").is_none());
        assert!(parse_status("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\tx\n").is_none());
    }

    #[test]
    fn only_socket_names_and_options_go_without_ids() {
        let without: Vec<_> = (0..512).filter(|&nr| !needs_ids(nr)).collect();
        let names = [
            libc::SYS_getsockname,
            libc::SYS_getpeername,
            libc::SYS_getsockopt,
            libc::SYS_setsockopt,
        ];
        let mut names = names.to_vec();
        names.sort();
        assert_eq!(without, names);
    }
}
