//! Admission: at most `--max-running` executions run at once and at most
//! `--max-queued` wait; past both, [`Admission::enter`] refuses at once
//! (the handler answers 429 with `Retry-After`), so a burst is never a
//! hang or a lost job. Waiters queue per tenant and are served round
//! robin across tenants: one tenant's burst waits behind itself, not in
//! front of everyone else.
//!
//! A [`Permit`] is a running place, given back when dropped; a waiter
//! that goes away (its client disconnected) leaves the queue, and a
//! permit sent to a waiter that has just gone is given back by the
//! channel dropping it.
//!
//! Does not own what runs under a permit.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::serve::auth::Tenant;

pub struct Admission {
    inner: Arc<Shared>,
}

struct Shared {
    max_running: usize,
    max_queued: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: usize,
    queued: usize,
    next_id: u64,
    /// Each tenant's waiters, oldest first.
    queues: HashMap<Tenant, VecDeque<(u64, oneshot::Sender<Permit>)>>,
    /// Tenants with waiters, in the order they are next served.
    turn: VecDeque<Tenant>,
}

/// A running place.
pub struct Permit {
    shared: Arc<Shared>,
}

/// Both the running places and the queue are full.
#[derive(Debug)]
pub struct Full;

impl Admission {
    pub fn new(max_running: usize, max_queued: usize) -> Admission {
        Admission {
            inner: Arc::new(Shared {
                max_running: max_running.max(1),
                max_queued,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// (running, queued).
    pub fn counts(&self) -> (usize, usize) {
        let s = self.inner.lock();
        (s.running, s.queued)
    }

    /// A running place, after waiting in `tenant`'s queue if need be.
    pub async fn enter(&self, tenant: &Tenant) -> Result<Permit, Full> {
        let (id, rx) = {
            let mut s = self.inner.lock();
            if s.running < self.inner.max_running && s.queued == 0 {
                s.running += 1;
                return Ok(Permit {
                    shared: self.inner.clone(),
                });
            }
            if s.queued >= self.inner.max_queued {
                return Err(Full);
            }
            let (tx, rx) = oneshot::channel();
            s.next_id += 1;
            let id = s.next_id;
            s.queued += 1;
            if !s.queues.contains_key(tenant) {
                s.turn.push_back(tenant.clone());
            }
            s.queues
                .entry(tenant.clone())
                .or_default()
                .push_back((id, tx));
            (id, rx)
        };
        let mut leave = LeaveOnDrop {
            shared: &self.inner,
            tenant,
            id,
            armed: true,
        };
        let permit = rx.await;
        leave.armed = false;
        permit.map_err(|_| Full)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives a running place back: to the next waiter, round robin.
    fn release(self: &Arc<Shared>) {
        let mut s = self.lock();
        s.running = s.running.saturating_sub(1);
        while s.running < self.max_running {
            let Some(tenant) = s.turn.pop_front() else {
                break;
            };
            let Some(queue) = s.queues.get_mut(&tenant) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                s.queues.remove(&tenant);
            } else {
                s.turn.push_back(tenant);
            }
            let Some((_, tx)) = next else { continue };
            s.queued = s.queued.saturating_sub(1);
            s.running += 1;
            if let Err(permit) = tx.send(Permit {
                shared: self.clone(),
            }) {
                // The waiter has gone: its place goes to the next one.
                std::mem::forget(permit);
                s.running -= 1;
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.shared.release();
    }
}

/// Takes a waiter out of its queue when its request goes away first.
struct LeaveOnDrop<'a> {
    shared: &'a Arc<Shared>,
    tenant: &'a Tenant,
    id: u64,
    armed: bool,
}

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut s = self.shared.lock();
        let mut removed = false;
        if let Some(queue) = s.queues.get_mut(self.tenant) {
            let before = queue.len();
            queue.retain(|(id, _)| *id != self.id);
            removed = queue.len() < before;
            if queue.is_empty() {
                s.queues.remove(self.tenant);
                s.turn.retain(|t| t != self.tenant);
            }
        }
        if removed {
            s.queued = s.queued.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str) -> Tenant {
        Tenant(name.into())
    }

    #[tokio::test]
    async fn past_running_and_queued_is_full() {
        let a = Admission::new(1, 1);
        let first = a.enter(&t("a")).await.unwrap();
        let waiting = {
            let a = &a;
            async move { a.enter(&t("a")).await }
        };
        tokio::pin!(waiting);
        assert!(futures_poll_once(waiting.as_mut()).await.is_none());
        assert_eq!(a.counts(), (1, 1));
        assert!(a.enter(&t("b")).await.is_err());
        drop(first);
        let second = waiting.await.unwrap();
        assert_eq!(a.counts(), (1, 0));
        drop(second);
        assert_eq!(a.counts(), (0, 0));
    }

    #[tokio::test]
    async fn tenants_take_turns() {
        let a = Arc::new(Admission::new(1, 10));
        let first = a.enter(&t("a")).await.unwrap();
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        for name in ["a", "a", "a", "b"] {
            let (a, done) = (a.clone(), done_tx.clone());
            tokio::spawn(async move {
                let p = a.enter(&t(name)).await.unwrap();
                done.send(name).unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                drop(p);
            });
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        drop(first);
        let mut order = vec![];
        for _ in 0..4 {
            order.push(done_rx.recv().await.unwrap());
        }
        // b's one waits behind a's first waiter, not behind all three.
        assert_eq!(order, ["a", "b", "a", "a"]);
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_frees_its_place() {
        let a = Admission::new(1, 1);
        let first = a.enter(&t("a")).await.unwrap();
        let tenant = t("a");
        {
            let waiting = a.enter(&tenant);
            tokio::pin!(waiting);
            assert!(futures_poll_once(waiting.as_mut()).await.is_none());
        }
        assert_eq!(a.counts(), (1, 0));
        drop(first);
        assert_eq!(a.counts(), (0, 0));
    }

    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        tokio::time::timeout(std::time::Duration::from_millis(20), f)
            .await
            .ok()
    }
}
