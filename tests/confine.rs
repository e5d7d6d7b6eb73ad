//! The supervisor confines itself: while a guest runs, every thread of the
//! supervisor process is under the seccomp filters of its own (two more
//! than the test process has) with no_new_privs set, and the guest still
//! works; the refusals it meets on every run leave nothing in the host's
//! kernel log.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::io::{Read, Seek};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut child = Command::new(bin())
        .args([
            "run",
            "--",
            "/bin/sh",
            "-c",
            "echo ready; read x; echo done",
        ])
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let bound = kill_after(child.id(), TIMEOUT);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
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
    // Every thread: main, signals, workers.
    let pid = child.id();
    let mut checked = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        checked.push((comm.trim().to_string(), seccomp_fields(&status)));
    }
    // Let the guest finish: one line on stdin.
    drop(child.stdin.take());
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

/// The kernel log's records written from now on (`/dev/kmsg`: root, and
/// `kernel.dmesg_restrict` permitting).
struct KernelLog(std::fs::File);

impl KernelLog {
    fn from_now() -> Option<KernelLog> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        let mut file = file;
        file.seek(std::io::SeekFrom::End(0)).ok()?;
        Some(KernelLog(file))
    }

    /// The records written since the last call (one record a read).
    fn new_records(&mut self) -> Vec<String> {
        let mut records = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => records.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                // Overwritten before we read it: the next one follows.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        records
    }
}

/// Runs `args` under the supervisor; its pid, once it has ended with 0.
fn supervised(args: &[&str]) -> u32 {
    let child = Command::new(bin())
        .args(args)
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let pid = child.id();
    let bound = kill_after(pid, TIMEOUT);
    let out = child.wait_with_output().unwrap();
    drop(bound);
    assert!(out.status.success(), "{args:?}: {}", engine::dump(&out));
    pid
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
    let runs = [
        supervised(&["run", "--", "/bin/sh", "-c", "true"]),
        supervised(&["run", "--", "/usr/bin/python3", "-c", server]),
    ];
    let control = Command::new(c_prog("seccomp_logged")).output().unwrap();
    let control_out = String::from_utf8_lossy(&control.stdout).into_owned();
    assert_eq!(
        control_out.split_whitespace().nth(1),
        Some("-1"),
        "control: {control_out}"
    );
    let control_pid = control_out
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string();
    let control_mark = format!(" pid={control_pid} ");
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !records.iter().any(|r: &String| r.contains(&control_mark)) {
        if Instant::now() > deadline {
            skip!("seccomp's audit records do not reach /dev/kmsg here (an audit daemon?)");
        }
        std::thread::sleep(Duration::from_millis(20));
        records.extend(log.new_records());
    }
    let exe = format!("exe=\"{}\"", bin().display());
    let ours: Vec<&String> = records
        .iter()
        .filter(|r| r.contains(&exe) || runs.iter().any(|p| r.contains(&format!(" pid={p} "))))
        .collect();
    assert!(ours.is_empty(), "the supervisor's records: {ours:#?}");
}
