//! A session's processes as the host's /proc shows them: those in the
//! pid namespace of the sandbox's init (found by its `ns/pid` link),
//! with their pid inside the sandbox (the last `NSpid` field), command
//! line and resident memory. Used for a session's state and to find the
//! host pid of an exec'd process the daemon must kill at its timeout.
//!
//! Owns reading /proc; not what is done with the answers.

use std::fs;

/// One process of a session.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Process {
    /// Its pid inside the session.
    pub pid: i32,
    /// Its command line (arguments joined by spaces).
    pub command: String,
    /// Resident memory, bytes.
    #[serde(skip)]
    pub rss: u64,
    #[serde(skip)]
    pub host_pid: i32,
}

/// Every live process in `init`'s pid namespace but init itself.
pub fn processes(init: i32) -> Vec<Process> {
    let Ok(ns) = fs::read_link(format!("/proc/{init}/ns/pid")) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(host_pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        // A process that has begun to exit (an exec's shell on its way
        // out just after the exec's answer) or is a zombie is no longer
        // one of the session's.
        if host_pid == init || !sandbox::checkpoint::alive(host_pid) {
            continue;
        }
        match fs::read_link(format!("/proc/{host_pid}/ns/pid")) {
            Ok(link) if link == ns => {}
            _ => continue,
        }
        let Ok(status) = fs::read_to_string(format!("/proc/{host_pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        let Some(pid) = field("NSpid:")
            .split_whitespace()
            .last()
            .and_then(|p| p.parse().ok())
        else {
            continue;
        };
        let rss = field("VmRSS:")
            .split_whitespace()
            .next()
            .and_then(|k| k.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024;
        let command = fs::read(format!("/proc/{host_pid}/cmdline"))
            .map(|c| {
                c.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        found.push(Process {
            pid,
            command,
            rss,
            host_pid,
        });
    }
    found.sort_by_key(|p| p.pid);
    found
}

/// The host pid of the process whose pid in `init`'s namespace is `pid`.
pub fn host_pid(init: i32, pid: i32) -> Option<i32> {
    processes(init)
        .into_iter()
        .find(|p| p.pid == pid)
        .map(|p| p.host_pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_namespace_lists_our_child() {
        // The test runs in one pid namespace with its child: the child is
        // listed with its pid (the same both sides) and command line.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id() as i32;
        let found = processes(std::process::id() as i32);
        let found_again = host_pid(std::process::id() as i32, pid);
        let _ = child.kill();
        let _ = child.wait();
        let p = found
            .iter()
            .find(|p| p.host_pid == pid)
            .expect("the child is listed");
        assert_eq!(p.pid, pid);
        assert_eq!(p.command, "sleep 30");
        assert_eq!(found_again, Some(pid));
    }
}
