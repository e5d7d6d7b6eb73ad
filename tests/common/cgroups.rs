//! A safety cgroup for tests that run hostile guests (fork bombs, memory
//! hogs, busy loops): created beneath the test's own cgroup with a memory
//! and a pids cap, and the supervisor started inside it, so a bug in the
//! sandbox's own limits cannot reach the machine. The supervisor then
//! creates the sandbox's cgroup beneath this one.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Run;

/// A pids + memory cgroup of the test's own (v1 hierarchies, as on the
/// CI machines; v2 when memory and pids are delegated there).
pub struct SafetyCgroup {
    dirs: Vec<PathBuf>,
}

/// Our directory in the hierarchy that has `controller`.
pub fn own_dir(controller: &str) -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if ctrls.split(',').any(|c| c == controller) {
            let dir = Path::new("/sys/fs/cgroup")
                .join(controller)
                .join(path.trim_start_matches('/'));
            return dir.is_dir().then_some(dir);
        }
    }
    let v2 = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new("/sys/fs/cgroup").join(v2.trim_start_matches('/'));
    let delegated = fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    delegated
        .split_whitespace()
        .any(|c| c == controller)
        .then_some(dir)
}

impl SafetyCgroup {
    /// `None` when this machine gives the test no cgroup to make (the
    /// hostile tests are then skipped, never run without a cap).
    pub fn new(tag: &str, memory: u64, pids: u64) -> Option<SafetyCgroup> {
        let name = format!("sbx-test-{tag}-{}", std::process::id());
        let mut cg = SafetyCgroup { dirs: Vec::new() };
        for (ctrl, file, value) in [
            ("memory", "memory.limit_in_bytes", memory),
            ("pids", "pids.max", pids),
        ] {
            let dir = own_dir(ctrl)?.join(&name);
            if !cg.dirs.contains(&dir) {
                fs::create_dir(&dir).ok()?;
                cg.dirs.push(dir.clone());
            }
            let v2_file = if ctrl == "memory" {
                "memory.max"
            } else {
                "pids.max"
            };
            if fs::write(dir.join(file), value.to_string()).is_err()
                && fs::write(dir.join(v2_file), value.to_string()).is_err()
            {
                return None;
            }
        }
        Some(cg)
    }

    /// `run`, with the supervisor started inside this cgroup.
    pub fn wrap(&self, mut run: Run) -> Run {
        let script = self.join_script();
        run.wrap = ["/bin/sh", "-c", &script, "sh"]
            .iter()
            .map(OsString::from)
            .collect();
        run
    }

    /// A `sh -c` script that moves itself into this cgroup, then execs
    /// its arguments.
    pub fn join_script(&self) -> String {
        let joins: Vec<String> = self
            .dirs
            .iter()
            .map(|d| format!("echo $$ > {}/cgroup.procs", d.display()))
            .collect();
        format!("{} && exec \"$@\"", joins.join(" && "))
    }

    /// Lets `uid` move itself in (as a delegating manager would).
    pub fn admit_user(&self, uid: u32, gid: u32) {
        for d in &self.dirs {
            std::os::unix::fs::chown(d.join("cgroup.procs"), Some(uid), Some(gid)).unwrap();
        }
    }

    /// Child cgroups left beneath this one (the sandbox's, if not removed).
    pub fn children(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .flat_map(|d| fs::read_dir(d).into_iter().flatten())
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .map(|e| e.path())
            .collect()
    }

    /// Processes still in this cgroup (itself; its children's count too on v1 pids.current).
    pub fn tasks(&self) -> u64 {
        self.dirs
            .iter()
            .filter_map(|d| fs::read_to_string(d.join("pids.current")).ok())
            .filter_map(|s| s.trim().parse().ok())
            .max()
            .unwrap_or(0)
    }

    /// What is left beneath, for a failure's message: each cgroup
    /// directory with the pid, state and command line of its processes.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mut dirs: Vec<PathBuf> = self.dirs.clone();
        while let Some(d) = dirs.pop() {
            let procs = fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
            out.push_str(&format!("{}:\n", d.display()));
            for pid in procs.lines() {
                let cmd = fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                    .unwrap_or_default();
                let state = fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| Some(s.rsplit_once(") ")?.1.chars().next()?.to_string()))
                    .unwrap_or_default();
                out.push_str(&format!("  {pid} {state} {cmd}\n"));
            }
            dirs.extend(
                fs::read_dir(&d)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                    .map(|e| e.path()),
            );
        }
        out
    }

    /// Waits (bounded) until nothing is left beneath: no child cgroup, no task.
    pub fn wait_empty(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if self.children().is_empty() && self.tasks() == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for SafetyCgroup {
    fn drop(&mut self) {
        for d in &self.dirs {
            for _ in 0..100 {
                let procs = fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: kill takes integers; these are our own test's processes.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                for child in fs::read_dir(d).into_iter().flatten().filter_map(|e| e.ok()) {
                    if child.path().is_dir() {
                        let _ = fs::remove_dir(child.path());
                    }
                }
                if fs::remove_dir(d).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}
