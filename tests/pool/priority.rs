//! The pool's set-ups and the priority of its commands: a root pool sets
//! its sandboxes up at nice 19 and gives every task of a sandbox its own
//! nice value back before the sandbox is ready (or, while a client waits,
//! at once). A command run through it sees, on every thread and in its
//! children, the nice value it sees natively under the pool's; a pool
//! that cannot restore a priority (no CAP_SYS_NICE) sets up at its own,
//! and a restore that fails fails the set-up, not the command.

use crate::common;

use std::process::{Child, Command, Stdio};

use common::pool::Pool;
use common::*;

/// The nice value of the guest's main thread, of each of its threads (one
/// of them started by the script), and of a child process.
const NICES: &str = r#"
import os, subprocess, threading
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
tasks = sorted(os.listdir('/proc/self/task'))
print(os.nice(0), len(tasks), [open(f'/proc/self/task/{t}/stat').read().rsplit(')', 1)[1].split()[16] for t in tasks])
ev.set()
t.join()
print(subprocess.run(['/bin/cut', '-d ', '-f19', '/proc/self/stat'], capture_output=True, text=True).stdout.strip())
"#;

fn nices() -> Run {
    Run::new(&["/usr/bin/python3", "-c", NICES])
}

/// `nice -n D`, where D makes the nice value `nice` from the test's own
/// (the tests may run niced; root may lower it).
fn at_nice(nice: i32) -> Vec<String> {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
    let own: i32 = procfs::StatLine::parse(&stat)
        .and_then(|l| l.number(19))
        .expect("field 19");
    [
        "/usr/bin/nice".into(),
        "-n".into(),
        (nice - own).to_string(),
    ]
    .into()
}

/// The same script natively, at nice `nice`.
fn native_at(nice: i32) -> String {
    let mut argv = at_nice(nice);
    argv.extend(["/usr/bin/python3".into(), "-c".into(), NICES.into()]);
    Run::new(&argv).native().ok("native").stdout
}

/// A pool of `size` started at nice `nice`.
fn pool_at(nice: i32, size: &str) -> Pool {
    let wrapper = at_nice(nice);
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    Pool::start_under(&wrapper, &["--size", size])
}

/// `count` clients at once: more than the pool's sandboxes, so some wait
/// for a set-up (which the daemon then runs at its own priority).
fn burst(pool: &Pool, count: usize) -> Vec<String> {
    let clients: Vec<Child> = (0..count)
        .map(|_| {
            Command::new(bin())
                .args(["run", "--pool"])
                .arg(&pool.socket)
                .args(["--", "/usr/bin/python3", "-c", NICES])
                .stdout(Stdio::piped())
                .spawn()
                .expect("client")
        })
        .collect();
    clients
        .into_iter()
        .map(|c| {
            let guard = kill_after(c.id(), TIMEOUT);
            let out = c.wait_with_output().expect("wait");
            drop(guard);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect()
}

#[test]
fn a_command_has_the_pool_s_priority_on_every_thread_as_natively() {
    if !is_root() {
        skip!("needs root (a pool that can restore priorities)");
    }
    for nice in [0, 5] {
        let native = native_at(nice);
        assert!(native.starts_with(&format!("{nice} 2 ")), "{native}");
        let pool = pool_at(nice, "2");
        // The first sandboxes, then their replacements (ten: a restore
        // that races init's fork of the guest lost about one run in 40).
        for _ in 0..10 {
            let pooled = nices().sup(&pool.flag()).supervised().ok("pooled");
            assert_eq!(pooled.stdout, native, "pool at nice {nice}");
        }
        for pooled in burst(&pool, 6) {
            assert_eq!(pooled, native, "burst, pool at nice {nice}");
        }
    }
}

#[test]
fn a_pool_at_the_lowest_priority_keeps_it() {
    if !is_root() {
        skip!("needs root (to set nice values)");
    }
    let native = native_at(19);
    let pool = pool_at(19, "1");
    let pooled = nices().sup(&pool.flag()).supervised().ok("pooled");
    assert_eq!(pooled.stdout, native);
}

#[test]
fn a_pool_that_cannot_restore_priorities_sets_up_at_its_own() {
    if !is_root() || !have("setpriv") {
        skip!("needs root and setpriv");
    }
    let mut wrapper = at_nice(0);
    wrapper.extend(["/usr/bin/setpriv".into(), "--bounding-set=-sys_nice".into()]);
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let pool = Pool::start_under(&wrapper, &["--size", "2"]);
    let native = native_at(0);
    for pooled in burst(&pool, 4) {
        assert_eq!(pooled, native);
    }
}

/// `supervisor pool-sandbox` as the daemon starts it (at nice 19), by
/// hand: its stdin is no daemon's socket, so it ends once set up.
fn sandbox_at_19(wrapper: &[&str]) -> Out {
    let bin = bin();
    let lowest = at_nice(19);
    let mut argv: Vec<&str> = lowest.iter().map(String::as_str).collect();
    argv.extend_from_slice(wrapper);
    argv.extend_from_slice(&[
        bin.to_str().expect("utf-8 path"),
        "pool-sandbox",
        "--socket",
        "/nonexistent/pool.sock",
        "--restore-nice=0",
    ]);
    Run::new(&argv).native()
}

#[test]
fn a_restore_that_fails_fails_the_set_up() {
    if !is_root() || !have("setpriv") {
        skip!("needs root and setpriv");
    }
    let why = "supervisor: pool: restoring the sandbox's priority:";
    // It may not raise its priority again: no sandbox, one line.
    let out = sandbox_at_19(&["/usr/bin/setpriv", "--bounding-set=-sys_nice"]);
    assert_eq!(out.code, Some(125), "{}", out.dump());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(out.stderr.starts_with(why), "{}", out.dump());
    // With CAP_SYS_NICE the restore passes: the set-up goes on.
    let out = sandbox_at_19(&[]);
    assert!(!out.stderr.contains(why), "{}", out.dump());
}
