//! Tests that launch real sandboxes (as root and, run by hand with
//! `runuser -u USER -- <test binary>`, as an unprivileged user).
//!
//! This file has its own harness (`harness = false`): `launch` forks the
//! calling process, which is safe only while it has one thread — in a
//! multi-threaded test runner the child could inherit an allocator lock
//! another test thread held, and hang. So the tests run one after another
//! on the main thread, and the summary line is the plain
//! "N passed, N failed" that CI reads.
//!
//! Most use a filter that allows every call, because nothing here serves
//! notifications; one uses the real policy with a static program that
//! makes only passed calls, and one checks that a serviced call traps.
//!
//! This file holds the harness and what the tests share; the tests are
//! in its siblings: `lifecycle.rs` (exit codes, errors, signals, leaks),
//! `view.rs` (what the guest sees) and `filter.rs` (the real policy).

mod filter;
mod lifecycle;
mod view;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use sandbox::launch::*;

use filter::*;
use lifecycle::*;
use view::*;

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory under /tmp, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("launch-test-{}-{n}-{tag}", std::process::id()));
        fs::create_dir_all(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn config(cmd: &[&str]) -> LaunchConfig {
    let mut cfg = LaunchConfig::new(cmd.iter().map(OsString::from).collect(), allow_all_filter());
    cfg.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    cfg
}

fn run(cfg: &LaunchConfig) -> Result<Outcome, LaunchError> {
    let _g = serial();
    let sandbox = launch(cfg)?;
    sandbox.start()?;
    sandbox.wait()
}

fn main() {
    let tests: &[(&str, fn())] = &[
        ("exit_codes", exit_codes),
        ("exec_failures", exec_failures),
        ("setup_failures", setup_failures),
        (
            "a_step_that_fails_after_init_reports_init_s_reason",
            a_step_that_fails_after_init_reports_init_s_reason,
        ),
        ("kill_and_forward", kill_and_forward),
        ("view_contents", view_contents),
        ("root_is_the_view", root_is_the_view),
        (
            "the_old_root_is_detached_at_launch",
            the_old_root_is_detached_at_launch,
        ),
        ("real_filter", real_filter),
        ("fifty_launches_leave_nothing", fifty_launches_leave_nothing),
        (
            "guest_dies_with_the_supervisor",
            guest_dies_with_the_supervisor,
        ),
    ];
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        match std::panic::catch_unwind(test) {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 101 });
}
