//! When `supervisor run` has exited, nothing of the guest runs any more,
//! even though the supervisor no longer waits for the kernel to tear the
//! sandbox's init down (init kills and reaps every other process before
//! it reports the main process's status). Checked at once, with no grace
//! period: a guest process found after the exit is a failure.

use crate::common;
use common::*;

/// Pids of processes whose environment holds `marker` (`K=V`).
fn marked(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
                found.push(pid);
            }
        }
    }
    found
}

fn nonce() -> String {
    let t = std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos());
    format!("{}-{t}", std::process::id())
}

#[test]
fn background_processes_are_gone_when_the_supervisor_exits() {
    if !have("sleep") {
        skip!("no sleep");
    }
    for (flags, code) in [(vec![], 3), (vec!["--pids=100", "--memory=512m"], 4)] {
        let marker = format!("SBX_TEARDOWN_MARKER={}", nonce());
        // Daemons of every kind: a child, an orphan, a new session.
        let script = format!(
            "sleep 300 & (sleep 300 &) ; setsid sleep 300 & \
             while [ $(ls /proc | grep -c '^[0-9]') -lt 5 ]; do :; done; exit {code}"
        );
        let mut sup = vec!["--env".to_string(), marker.clone()];
        sup.extend(flags.iter().map(|f| f.to_string()));
        let out = Run::sh(&script, &[]).sup(&sup).supervised();
        assert_eq!(out.code, Some(code), "{flags:?}: {}", out.dump());
        let left = marked(&marker);
        assert!(left.is_empty(), "{flags:?}: guest processes left: {left:?}");
    }
}
