//! The sandbox's life: signals sent to the supervisor reach the guest (init
//! forwards SIGTERM, SIGINT, SIGHUP, SIGUSR1), and if the supervisor is
//! killed the guest dies with it (no guest process ever runs unsupervised).
//! Waits are bounded (60 s) and never asserted on as timings.

use crate::common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Start `supervisor run -- sh -c SCRIPT` and wait for its first stdout line.
fn start(script: &str) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(bin())
        .args(["run", "--", "/bin/sh", "-c", script])
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn supervisor");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(l) if l == "ready" => {}
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("guest did not start: {other:?}");
        }
    }
    (child, rx)
}

/// Wait for the child's exit code (or 128+signal), killing it after 60 s.
fn finish(mut child: Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            return st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("supervisor did not exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn signals_are_forwarded_to_the_guest() {
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGUSR1, "USR1"),
    ] {
        let script = format!(
            "trap 'echo got-{name}; exit 7' {name}; echo ready; while :; do sleep 0.05; done"
        );
        let (child, rx) = start(&script);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let code = finish(child);
        // Until the reader sees the end of the output: the last line may
        // still be on its way when the supervisor has exited.
        let lines: Vec<String> = rx.iter().collect();
        assert_eq!(
            code, 7,
            "SIG{name}: the guest's trap did not run (lines {lines:?})"
        );
        assert_eq!(lines, vec![format!("got-{name}")], "SIG{name}");
    }
}

#[test]
fn guest_dies_with_the_supervisor() {
    let tag = format!("{}.{}", 900 + std::process::id() % 97, std::process::id());
    let script = format!("sleep {tag} & echo ready; wait");
    let (mut child, _rx) = start(&script);
    let find = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                cmd.split(|b| *b == 0).any(|a| a == tag.as_bytes())
            })
            .collect()
    };
    // `sleep` may not have exec'd yet when "ready" arrives: wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while find().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !find().is_empty(),
        "fixture: the guest's sleep {tag} is not running"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Bounded wait for the kernel to tear the sandbox down; a leak is a
    // process still there afterwards.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = find();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = find();
    }
    for pid in &left {
        // SAFETY: killing the leaked guest process this test started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "guest processes {left:?} outlived the killed supervisor"
    );
}
