//! The supervisor confines itself: while a guest runs, every thread of the
//! supervisor process is under the seccomp filters of its own (two more
//! than the test process has) with no_new_privs set, and the guest still
//! works; the refusals it meets on every run leave nothing in the host's
//! kernel log.

use crate::common;
use common::driven::interactive;
use common::kernel_log::KernelLog;
use common::*;
use std::process::Command;

/// `Seccomp:`, `Seccomp_filters:` and `NoNewPrivs:` of a status file.
fn seccomp_fields(status: &str) -> (String, i64, String) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let filters = field("Seccomp_filters:").parse().unwrap_or(0);
    (field("Seccomp:"), filters, field("NoNewPrivs:"))
}

#[test]
fn supervisor_runs_under_its_own_filter() {
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let (_, own_filters, _) = seccomp_fields(&own);
    let script = "echo ready; read x; echo done";
    let (mut child, bound, stdin, mut lines) = interactive(&["/bin/sh", "-c", script], "/");
    let first = lines.next().and_then(Result::ok);
    if first.as_deref() != Some("ready") {
        drop(bound);
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "guest did not start: {first:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Every thread: main, signals, workers. The supervisor confines
    // itself before the trap's workers start, which is before the guest's
    // first served call, not before its first instruction: `sh`'s `echo`
    // serves nothing, so "ready" can come first. Waited for (the deadline
    // is a hang guard, not a timing): the main thread in filter mode and
    // the workers, which start after it, there.
    let pid = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let settled = |threads: &[(String, (String, i64, String))]| {
        threads.len() >= 3 && threads.iter().any(|(_, (mode, _, _))| mode == "2")
    };
    let mut checked = supervisor_threads(pid);
    while !settled(&checked) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        checked = supervisor_threads(pid);
    }
    // Let the guest finish: one line on stdin.
    drop(stdin);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    drop(bound);
    let status = child.wait().unwrap();
    assert!(checked.len() >= 3, "threads: {checked:?}");
    for (comm, (mode, filters, nnp)) in &checked {
        assert_eq!(mode, "2", "thread {comm} not in filter mode: {checked:?}");
        assert_eq!(*filters, own_filters + 2, "thread {comm}: {checked:?}");
        assert_eq!(nnp, "1", "thread {comm} without no_new_privs: {checked:?}");
    }
    assert_eq!(rest, vec!["done".to_string()]);
    assert_eq!(status.code(), Some(0));
}

/// Each thread of process `pid`: its name and its seccomp fields.
fn supervisor_threads(pid: u32) -> Vec<(String, (String, i64, String))> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .map(|task| {
            let task = task.path();
            let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
            let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
            (comm.trim().to_string(), seccomp_fields(&status))
        })
        .collect()
}

/// Runs `args` under the supervisor, which must end with 0.
fn supervised(args: &[&str]) {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/");
    let out = engine::output_with_watchdog(cmd, b"");
    assert!(out.status.success(), "{args:?}: {}", engine::dump(&out));
}

/// Before, every run wrote an audit record (type 1326) to the host's
/// kernel log for each thread it started after confining itself: glibc
/// tries clone3 first, which the supervisor's filter refuses (ENOSYS) as
/// intended. A host running sandboxes for a class had its kernel log
/// filled with them. The control (`tests/c/seccomp_logged.c`) shows that
/// such a record does reach the log here, after the supervisor's runs.
#[test]
fn expected_refusals_leave_the_hosts_kernel_log_alone() {
    let Some(mut log) = KernelLog::from_now() else {
        skip!("/dev/kmsg cannot be read here");
    };
    // The trap's workers start after confinement, and one more while
    // the guest's accept blocks (the guest's own thread connects).
    let server = "import socket, threading\n\
        s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
        port = s.getsockname()[1]\n\
        def dial():\n    c = socket.create_connection(('127.0.0.1', port)); c.sendall(b'x'); c.close()\n\
        t = threading.Thread(target=dial); t.start()\n\
        a, _ = s.accept(); assert a.recv(1) == b'x'; t.join()\n";
    supervised(&["run", "--", "/bin/sh", "-c", "true"]);
    supervised(&["run", "--", "/usr/bin/python3", "-c", server]);
    let Some(records) = log.seccomp_records_of_bin() else {
        skip!("seccomp's audit records do not reach /dev/kmsg here (an audit daemon?)");
    };
    assert!(records.is_empty(), "the supervisor's records: {records:#?}");
}
