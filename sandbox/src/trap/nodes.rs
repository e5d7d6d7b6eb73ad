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
//! Where the workers may lend a caller its capabilities (a range of ids
//! none of which is host root: `mod.rs`, `lends_caps`), the maker also
//! keeps CAP_DAC_OVERRIDE permitted, and raises it for one node when the
//! kernel refused the caller write access to a parent directory of the
//! guest's and the caller holds CAP_DAC_OVERRIDE in its own namespace.
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
use sandbox_syscalls::{DeviceNodes, Node};

use super::creds;

/// One node to make, and where to send the answer.
struct Request {
    tid: i32,
    dir: OwnedFd,
    name: CString,
    node: Node,
    dir_is_guests: bool,
    answer: mpsc::SyncSender<Result<(), Errno>>,
}

/// The handle the handlers hold; the thread ends when it is dropped.
#[derive(Debug)]
pub struct Maker {
    requests: Mutex<mpsc::Sender<Request>>,
}

/// The capabilities the maker keeps effective.
fn kept() -> caps::CapsHashSet {
    [
        Capability::CAP_MKNOD,
        Capability::CAP_SETUID,
        Capability::CAP_SETGID,
    ]
    .into()
}

/// Starts the maker when this thread holds what it needs to keep
/// (CAP_MKNOD, CAP_SETUID, CAP_SETGID); `None` otherwise. `lends`: it
/// may lend a caller its CAP_DAC_OVERRIDE (see the module doc).
pub fn start(lends: bool) -> Option<Arc<Maker>> {
    let held = caps::read(None, CapSet::Effective).ok()?;
    if !kept().is_subset(&held) {
        return None;
    }
    let lends = lends && held.contains(&Capability::CAP_DAC_OVERRIDE);
    let (requests, received) = mpsc::channel();
    let (ready, started) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("mknod".into())
        .spawn(move || serve(&received, &ready, lends))
        .ok()?;
    started.recv().ok()?.then(|| {
        Arc::new(Maker {
            requests: Mutex::new(requests),
        })
    })
}

/// The thread: keeps only its capabilities, then serves until the handle
/// is gone. Reports on `ready` whether it could drop the rest.
fn serve(requests: &mpsc::Receiver<Request>, ready: &mpsc::SyncSender<bool>, lends: bool) {
    let kept = kept();
    let mut permitted = kept.clone();
    if lends {
        permitted.insert(Capability::CAP_DAC_OVERRIDE);
    }
    let dropped = caps::set(None, CapSet::Effective, &kept)
        .and_then(|()| caps::set(None, CapSet::Permitted, &permitted))
        .and_then(|()| caps::set(None, CapSet::Inheritable, &caps::CapsHashSet::new()));
    if dropped.is_err() {
        let _ = ready.send(false);
        return;
    }
    let mut acting = creds::Acting::new();
    let _ = ready.send(true);
    for r in requests {
        let made = make(&mut acting, &r, lends);
        let _ = r.answer.send(made);
    }
    acting.restore();
}

/// Makes one node as its caller.
fn make(acting: &mut creds::Acting, r: &Request, lends: bool) -> Result<(), Errno> {
    use std::os::fd::AsFd;
    let ids = creds::of_caller(r.tid)?;
    acting.take(&ids)?;
    caps::raise(None, CapSet::Effective, Capability::CAP_MKNOD).map_err(|_| Errno::EPERM)?;
    let mknod = || vfs::sys::mknodat(r.dir.as_fd(), &r.name, r.node.mode, r.node.dev);
    match mknod() {
        Err(Errno::EACCES) if lends && r.dir_is_guests => {
            let held = super::guest::caller_caps(r.tid);
            if held & sandbox_syscalls::guest::CAP_DAC_OVERRIDE == 0 {
                return Err(Errno::EACCES);
            }
            caps::raise(None, CapSet::Effective, Capability::CAP_DAC_OVERRIDE)
                .map_err(|_| Errno::EACCES)?;
            let r = mknod();
            if caps::drop(None, CapSet::Effective, Capability::CAP_DAC_OVERRIDE).is_err() {
                eprintln!("supervisor: the device-node maker cannot lower a capability");
                std::process::abort();
            }
            r
        }
        r => r,
    }
}

impl DeviceNodes for Maker {
    fn make(
        &self,
        tid: i32,
        dir: BorrowedFd<'_>,
        name: &CStr,
        node: Node,
        dir_is_guests: bool,
    ) -> Result<(), Errno> {
        let (answer, answered) = mpsc::sync_channel(1);
        let request = Request {
            tid,
            dir: dir.try_clone_to_owned().map_err(|_| Errno::EMFILE)?,
            name: name.to_owned(),
            node,
            dir_is_guests,
            answer,
        };
        self.requests
            .lock()
            .send(request)
            .map_err(|_| Errno::EPERM)?;
        answered.recv().unwrap_or(Err(Errno::EPERM))
    }
}
