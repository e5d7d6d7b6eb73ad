//! Runs leave nothing behind on the host: 200 runs in a row
//! (`many_runs`), and runs with every cgroup limit set whatever their
//! end (`limited_runs`). Both compare this process's own state (its
//! descriptors, its children, the mount table) before and after, so no
//! other test may open descriptors or start children meanwhile: that is
//! why they are a test binary of their own, and each holds [`alone`]
//! for its whole run, so the two never overlap either.

use std::sync::{Mutex, MutexGuard};

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod limited_runs;
mod many_runs;

/// Held by every test of this binary for its whole run: one test at a
/// time, whatever the harness's thread count.
fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    // A failed test poisons the lock; the next one still runs.
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}
