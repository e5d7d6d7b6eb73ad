//! The sandbox cgroup's counters: OOM kills, refused forks, memory in
//! use and at peak, CPU time — each one `pread` of a file opened once.
//!
//! Owns: parsing the v1 and v2 formats of those files. Does not own
//! which files (`cgroup::SandboxCgroup::counters` opens them) or what a
//! value means for the run (watchdog, report). A counter whose file is
//! absent reads as unknown (`None`) or zero.

use std::fs;

/// Open counter files of the sandbox's cgroup; each read is one pread.
#[derive(Debug, Default)]
pub struct Counters {
    pub(super) memory_events: Option<fs::File>,
    pub(super) memory_usage: Option<fs::File>,
    pub(super) memory_stat: Option<fs::File>,
    pub(super) memory_peak: Option<fs::File>,
    pub(super) pids_events: Option<fs::File>,
    pub(super) cpu_usage: Option<fs::File>,
    /// User and system time: cpuacct.stat (v1), cpu.stat (v2).
    pub(super) cpu_split: Option<fs::File>,
    pub(super) cpu_usage_v2: bool,
}

impl Counters {
    /// Processes the kernel's OOM killer killed in the sandbox.
    pub fn oom_kills(&self) -> u64 {
        keyed(&self.memory_events, "oom_kill").unwrap_or(0)
    }
    /// Forks refused by the pids limit.
    pub fn pids_refused(&self) -> u64 {
        keyed(&self.pids_events, "max").unwrap_or(0)
    }
    pub fn memory_usage(&self) -> Option<u64> {
        first_number(&self.memory_usage)
    }
    /// The text of memory.stat (v1 or v2: `sandbox_procfs`'s
    /// `cgroup_memory` reads either).
    pub fn memory_stat(&self) -> Option<String> {
        read_whole(&self.memory_stat)
    }
    pub fn memory_peak(&self) -> Option<u64> {
        first_number(&self.memory_peak)
    }
    /// CPU time used by every process of the sandbox, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        if self.cpu_usage_v2 {
            keyed(&self.cpu_usage, "usage_usec").map(|us| us as f64 / 1e6)
        } else {
            first_number(&self.cpu_usage).map(|ns| ns as f64 / 1e9)
        }
    }
    /// (user, system) CPU seconds of every process of the sandbox.
    pub fn cpu_user_system(&self) -> Option<(f64, f64)> {
        if self.cpu_usage_v2 {
            let user = keyed(&self.cpu_split, "user_usec")?;
            let system = keyed(&self.cpu_split, "system_usec")?;
            return Some((user as f64 / 1e6, system as f64 / 1e6));
        }
        // cpuacct.stat counts in USER_HZ, which is 100 on Linux.
        let user = keyed(&self.cpu_split, "user")?;
        let system = keyed(&self.cpu_split, "system")?;
        Some((user as f64 / 100.0, system as f64 / 100.0))
    }
    pub fn has_memory(&self) -> bool {
        self.memory_events.is_some()
    }
    pub fn has_pids(&self) -> bool {
        self.pids_events.is_some()
    }
    pub fn has_cpu(&self) -> bool {
        self.cpu_usage.is_some()
    }
}

fn read_all(file: &Option<fs::File>) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let file = file.as_ref()?;
    let mut buf = [0u8; 1024];
    let n = file.read_at(&mut buf, 0).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// The whole of a file larger than `read_all`'s buffer (memory.stat:
/// about 1.5 KiB under v1, 3 KiB under v2). A read that leaves room in
/// the buffer had it all: the kernel's seq files hand over the whole
/// text they made, and a further read at its end would make it again.
fn read_whole(file: &Option<fs::File>) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let file = file.as_ref()?;
    let mut buf = vec![0u8; 16 << 10];
    let mut len = 0;
    loop {
        let n = file.read_at(&mut buf[len..], len as u64).ok()?;
        len += n;
        if n == 0 || len < buf.len() {
            break;
        }
        buf.resize(len * 2, 0);
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

fn first_number(file: &Option<fs::File>) -> Option<u64> {
    read_all(file)?.split_whitespace().next()?.parse().ok()
}

/// The value of `key` in a "key value" per line file.
fn keyed(file: &Option<fs::File>, key: &str) -> Option<u64> {
    read_all(file)?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}
