//! Under `--cpus`, the trap's workers serve the guest from inside its cpu
//! cgroup (cgroup v1, cpu mounted alone), and leave it before it is
//! removed: a guest's serviced calls answer as natively, the worker thread
//! is in the sandbox's cpu group while the guest runs, the run ends with
//! the guest's own status and report (the cgroup's removal never signals
//! the supervisor itself), and the cgroup directory is gone afterwards.
//! No timing is asserted; every wait is bounded.

use crate::common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;

const PY: &str = "/usr/bin/python3";

/// Stats through serviced calls, prints them, says "ready", waits for a
/// line on stdin, then stats again.
const SCRIPT: &str = r#"import os, sys
def show():
    for p in ('/usr/bin', '/usr/bin/env', '/usr/lib/python3'):
        st = os.stat(p)
        print(p, oct(st.st_mode), st.st_uid, st.st_gid, st.st_nlink, flush=True)
show()
print('ready', flush=True)
sys.stdin.readline()
show()
"#;

/// Our directory in the v1 cpu hierarchy, when cpu is mounted alone.
fn cpu_alone_dir() -> Option<PathBuf> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        (ctrls == "cpu").then(|| path.trim_start_matches('/').to_string())
    })?;
    let dir = PathBuf::from("/sys/fs/cgroup/cpu").join(path);
    dir.join("cpu.cfs_quota_us").exists().then_some(dir)
}

/// The cpu cgroup path of each `trap-*` thread of process `pid`.
fn trap_thread_groups(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("trap"))
        })
        .filter_map(|t| {
            let cg = std::fs::read_to_string(t.path().join("cgroup")).ok()?;
            cg.lines()
                .find_map(|l| l.split_once(":cpu:").map(|(_, p)| p.to_string()))
        })
        .collect()
}

#[test]
fn workers_serve_from_the_guests_cpu_group_and_leave_it() {
    let Some(ours) = cpu_alone_dir() else {
        skip!("no cgroup v1 cpu hierarchy of its own here");
    };
    let native = Command::new(PY)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().map(|mut i| i.write_all(b"go\n"));
            c.wait_with_output()
        })
        .expect("native python");
    let report = std::env::temp_dir().join(format!("cpu-group-{}.json", std::process::id()));
    let mut child = Command::new(bin())
        .args(["run", "--cpus=2", "--report"])
        .arg(&report)
        .args(["--", PY, "-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("supervisor");
    let sup = child.id();
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(TIMEOUT) {
        if line == "ready" {
            break;
        }
        lines.push(line);
    }
    let sandbox_group = format!("/supervisor-{sup}");
    let groups = trap_thread_groups(sup);
    child.stdin.take().map(|mut i| i.write_all(b"go\n"));
    lines.extend(std::iter::from_fn(|| rx.recv_timeout(TIMEOUT).ok()));
    let status = child.wait().expect("wait");
    assert!(
        !groups.is_empty() && groups.iter().all(|g| g.ends_with(&sandbox_group)),
        "trap threads' cpu groups {groups:?}, want .../supervisor-{sup}"
    );
    let native_lines: Vec<String> = String::from_utf8_lossy(&native.stdout)
        .lines()
        .filter(|l| *l != "ready")
        .map(str::to_string)
        .collect();
    assert_eq!(
        lines, native_lines,
        "stats under the supervisor and natively"
    );
    assert_eq!(status.code(), Some(0), "the guest's own status");
    let r = read_report(&report);
    let _ = std::fs::remove_file(&report);
    assert_eq!(r["reason"], "exited", "report {r:#}");
    let dir = ours.join(format!("supervisor-{sup}"));
    assert!(!dir.exists(), "{} left behind", dir.display());
}
