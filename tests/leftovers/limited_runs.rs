//! The leftovers check with every cgroup limit set: after a run that
//! ends normally, fails at setup once the sandbox's cgroup exists (a
//! missing `--workdir`: the cgroup is made while init builds the view),
//! fails to exec (127), or is killed (`--timeout`), with `--report` (the
//! supervisor removes the cgroup) and without (the janitor does, after
//! the supervisor has exited), nothing is left: no cgroup directory (the
//! memory and pids ones beneath the test's safety cgroup, the cpu and
//! cpuacct ones beneath the test's own), no process in them (the janitor
//! included), no mount, no descriptor and no child of the test process.
//!
//! The test holds `crate::alone()` (tests/leftovers/main.rs), so no
//! other test of this binary opens fds or spawns children meanwhile. No
//! test asserts on timing; waits are bounded.

use crate::common;
use common::cgroups::{own_dir, SafetyCgroup};
use common::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMITS: &[&str] = &[
    "--memory=256m",
    "--pids=64",
    "--cpus=1",
    "--cpu-time=60",
    "--output-limit=1m",
    "--nofile=256",
];

/// What the test process holds: its fds and the mount table's length.
fn held() -> (usize, usize) {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map_or(0, |m| m.lines().count());
    (fds, mounts)
}

/// The sandbox's directories in the hierarchies the safety cgroup does
/// not cover (cpu, cpuacct: beneath the test's own cgroup there).
fn outside_dirs(supervisor_pid: u32) -> Vec<PathBuf> {
    ["cpu", "cpuacct"]
        .iter()
        .filter_map(|c| own_dir(c))
        .map(|d| d.join(format!("supervisor-{supervisor_pid}")))
        .collect()
}

/// The supervisor (started inside `cg`, by a shell that execs it: same
/// pid) with every limit, `extra` flags and `argv`.
fn supervisor_in(cg: &SafetyCgroup, extra: &[&str], argv: &[&str]) -> Command {
    let wrapped = cg.wrap(Run::new(argv));
    let mut command = Command::new(&wrapped.wrap[0]);
    command
        .args(&wrapped.wrap[1..])
        .arg(bin())
        .arg("run")
        .args(LIMITS)
        .args(extra)
        .arg("--")
        .args(argv)
        .current_dir("/")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Runs the supervisor (inside `cg`) with `extra` flags and `argv`;
/// returns its exit code and pid.
fn run(cg: &SafetyCgroup, extra: &[&str], argv: &[&str]) -> (Option<i32>, u32) {
    let mut child = supervisor_in(cg, extra, argv).spawn().unwrap();
    // The shell execs the supervisor: same pid.
    let pid = child.id();
    let status = child.wait().unwrap();
    (status.code(), pid)
}

/// Waits (bounded) until nothing of the run is left.
fn left_behind(cg: &SafetyCgroup, pid: u32) -> Option<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let outside: Vec<PathBuf> = outside_dirs(pid)
            .into_iter()
            .filter(|d| d.exists())
            .collect();
        if cg.children().is_empty() && cg.tasks() == 0 && outside.is_empty() {
            return None;
        }
        if Instant::now() > end {
            return Some(format!(
                "cgroups {:?} and {outside:?}, {} tasks",
                cg.children(),
                cg.tasks()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn runs_with_limits_leave_nothing_whatever_their_end() {
    let _alone = crate::alone();
    let Some(cg) = SafetyCgroup::new("cleanup", 2 << 30, 500) else {
        eprintln!("SKIP: no cgroup to make on this machine");
        return;
    };
    let report = std::env::temp_dir().join(format!("cleanup-limits-{}.json", std::process::id()));
    let report_flag = format!("--report={}", report.display());
    let cases: &[(&str, &[&str], &[&str], i32)] = &[
        ("normal", &[], &["/bin/true"], 0),
        ("exit code", &[], &["/bin/sh", "-c", "exit 3"], 3),
        (
            "setup fails",
            &["--workdir=/nonexistent-cleanup-limits"],
            &["/bin/true"],
            125,
        ),
        ("not found", &[], &["/nonexistent-cleanup-limits"], 127),
        ("timeout", &["--timeout=1"], &["/bin/sleep", "100"], 137),
    ];
    let before = held();
    for with_report in [false, true] {
        for (what, flags, argv, code) in cases {
            let mut flags = flags.to_vec();
            if with_report {
                flags.push(&report_flag);
            }
            let (got, pid) = run(&cg, &flags, argv);
            assert_eq!(
                got,
                Some(*code),
                "{what} (report: {with_report}): exit code"
            );
            if let Some(left) = left_behind(&cg, pid) {
                panic!("{what} (report: {with_report}): left behind: {left}");
            }
        }
    }
    let _ = std::fs::remove_file(&report);
    assert_eq!(held(), before, "the test's (fds, mounts) changed");
    // SAFETY: waitpid with WNOHANG on any child of ours only reports.
    let child = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
    assert_eq!(child, -1, "a child process of the test is left");
}

/// Whether process `pid` is stopped (state `T`).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(") ")?.1.starts_with('T')))
        .unwrap_or(false)
}

/// A supervisor killed as soon as its sandbox's cgroup exists (a pool
/// stopping a sandbox still setting up, a killed daemon) leaves no
/// directory behind: the janitor made them and removes them.
#[test]
fn a_supervisor_killed_as_its_cgroup_appears_leaves_nothing() {
    let _alone = crate::alone();
    let Some(cg) = SafetyCgroup::new("cleanup-killed", 2 << 30, 500) else {
        eprintln!("SKIP: no cgroup to make on this machine");
        return;
    };
    let mut child = supervisor_in(&cg, &[], &["/bin/true"])
        .env(sandbox::limits::STOP_AT_CGROUP_FOR_TESTS, "1")
        .spawn()
        .unwrap();
    let pid = child.id();
    let end = Instant::now() + Duration::from_secs(60);
    while !stopped(pid) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(stopped(pid), "the supervisor never stopped at its cgroup");
    assert!(
        !cg.children().is_empty(),
        "no cgroup beneath the test's while the supervisor is stopped"
    );
    let _ = child.kill();
    let _ = child.wait();
    if let Some(left) = left_behind(&cg, pid) {
        panic!("left behind: {left}");
    }
}
