//! The device-node maker: the one supervisor thread that keeps CAP_MKNOD,
//! making the character and block nodes a guest asks for in the sandbox's
//! own `nodev` file systems (`sandbox_syscalls::DeviceNodes`; which nodes,
//! and where, is `syscalls/src/handlers/mknod.rs`'s decision).
//!
//! Why a thread of its own: the workers drop every capability (a worker a
//! hostile guest took over cannot raise one again), so none can make a
//! node. This thread keeps CAP_MKNOD and, to act as the caller,
//! CAP_SETUID and CAP_SETGID, in its effective and permitted sets, and
//! nothing else: no CAP_DAC_OVERRIDE nor CAP_FOWNER, so the kernel checks
//! the parent directory's permissions as the caller's. For each request it
//! takes the calling guest thread's file-system ids and groups as the
//! host's kernel reports them (`/proc/<tid>/status`, read from the host's
//! side: the sandbox's id mapping applied, whatever it is; `creds.rs`),
//! raises CAP_MKNOD again (a change of the file-system uid from 0 clears
//! it from the effective set) and makes the node, which is then the
//! caller's. It exists only when the supervisor holds CAP_MKNOD (run as
//! root); an unprivileged supervisor's guest gets the kernel's EPERM.
//!
//! Owns: the thread, its capabilities and its requests. Does not own:
//! reading or switching ids (`creds.rs`).

use std::ffi::{CStr, CString};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use caps::{CapSet, Capability};
use nix::errno::Errno;
use parking_lot::Mutex;
use sandbox_syscalls::DeviceNodes;

use super::creds;

/// One node to make, and where to send the answer.
struct Request {
    tid: i32,
    dir: OwnedFd,
    name: CString,
    mode: u32,
    dev: u32,
    answer: mpsc::SyncSender<Result<(), Errno>>,
}

/// The handle the handlers hold; the thread ends when it is dropped.
#[derive(Debug)]
pub struct Maker {
    requests: Mutex<mpsc::Sender<Request>>,
}

/// The capabilities the maker keeps.
fn kept() -> caps::CapsHashSet {
    [
        Capability::CAP_MKNOD,
        Capability::CAP_SETUID,
        Capability::CAP_SETGID,
    ]
    .into()
}

/// Starts the maker when this thread holds what it needs to keep
/// (CAP_MKNOD, CAP_SETUID, CAP_SETGID); `None` otherwise.
pub fn start() -> Option<Arc<Maker>> {
    let held = caps::read(None, CapSet::Effective).ok()?;
    if !kept().is_subset(&held) {
        return None;
    }
    let (requests, received) = mpsc::channel();
    let (ready, started) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("mknod".into())
        .spawn(move || serve(&received, &ready))
        .ok()?;
    started.recv().ok()?.then(|| {
        Arc::new(Maker {
            requests: Mutex::new(requests),
        })
    })
}

/// The thread: keeps only its capabilities, then serves until the handle
/// is gone. Reports on `ready` whether it could drop the rest.
fn serve(requests: &mpsc::Receiver<Request>, ready: &mpsc::SyncSender<bool>) {
    let kept = kept();
    let dropped = caps::set(None, CapSet::Effective, &kept)
        .and_then(|()| caps::set(None, CapSet::Permitted, &kept))
        .and_then(|()| caps::set(None, CapSet::Inheritable, &caps::CapsHashSet::new()));
    if dropped.is_err() {
        let _ = ready.send(false);
        return;
    }
    let mut acting = creds::Acting::new();
    let _ = ready.send(true);
    for r in requests {
        let made = make(&mut acting, &r);
        let _ = r.answer.send(made);
    }
    acting.restore();
}

/// Makes one node as its caller.
fn make(acting: &mut creds::Acting, r: &Request) -> Result<(), Errno> {
    let ids = creds::of_caller(r.tid)?;
    acting.take(&ids)?;
    caps::raise(None, CapSet::Effective, Capability::CAP_MKNOD).map_err(|_| Errno::EPERM)?;
    use std::os::fd::AsFd;
    vfs::sys::mknodat(r.dir.as_fd(), &r.name, r.mode, r.dev)
}

impl DeviceNodes for Maker {
    fn make(
        &self,
        tid: i32,
        dir: BorrowedFd<'_>,
        name: &CStr,
        mode: u32,
        dev: u32,
    ) -> Result<(), Errno> {
        let (answer, answered) = mpsc::sync_channel(1);
        let request = Request {
            tid,
            dir: dir.try_clone_to_owned().map_err(|_| Errno::EMFILE)?,
            name: name.to_owned(),
            mode,
            dev,
            answer,
        };
        self.requests
            .lock()
            .send(request)
            .map_err(|_| Errno::EPERM)?;
        answered.recv().unwrap_or(Err(Errno::EPERM))
    }
}
