//! The per-listener queue of accepted connections that could not be
//! installed (the caller died between accept and answer): the next
//! accept on that listener gets them first, so no connection is lost.
//! One atomic flag keeps the common case (nothing queued) lock-free.

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// Queued connections by listener inode.
#[derive(Default)]
pub(super) struct Pending {
    queues: Mutex<HashMap<u64, VecDeque<OwnedFd>>>,
    any: AtomicBool,
}

impl Pending {
    /// Queues an accepted connection the guest did not get.
    pub(super) fn requeue(&self, listener: u64, conn: OwnedFd) {
        self.queues
            .lock()
            .entry(listener)
            .or_default()
            .push_front(conn);
        self.any.store(true, Ordering::Release);
    }

    /// A queued connection of this listener, if any.
    pub(super) fn take(&self, listener: u64) -> Option<OwnedFd> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let mut queues = self.queues.lock();
        let conn = queues.get_mut(&listener).and_then(VecDeque::pop_front);
        queues.retain(|_, q| !q.is_empty());
        self.any.store(!queues.is_empty(), Ordering::Release);
        conn
    }

    /// Whether any listener has queued connections.
    pub(super) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }
}
