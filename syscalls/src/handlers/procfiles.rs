//! The texts of the sandbox's own global /proc files, which would
//! otherwise be the host's: `/proc/stat` (the CPUs the guest may use,
//! counters since the sandbox started, its boot time and tasks),
//! `/proc/loadavg` (the sandbox's tasks), `/proc/sys/kernel/random/boot_id`
//! (one per sandbox), and a process's `status` under `--cpus` (its
//! `Cpus_allowed` cut as `sched_getaffinity` is). Also which per-process
//! files are recognised by their procfs path, and the census of the
//! sandbox's tasks that these texts count.
//!
//! Does not own: recognising the global files (by identity, `sysinfo.rs`)
//! or serving any text (`sysinfo::substitute`); `/proc/uptime` and the
//! clocks, which the kernel answers in the sandbox's time namespace
//! (`launch/timens.rs` in the supervisor).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// What the sandbox's /proc texts are relative to, taken when the
/// handlers' context is made (just before the guest starts).
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    /// The host's /proc/stat and /proc/vmstat then: counters are served
    /// as differences.
    stat: String,
    vmstat: String,
    /// A random id of this sandbox's "boot".
    pub(crate) boot_id: String,
    /// The whole seconds of host boot time at which the sandbox's clocks
    /// start (init's start, as `launch/timens.rs` sets the offsets).
    boot_offset: i64,
}

impl Baseline {
    /// `stat`, `vmstat`: the host's /proc/stat and /proc/vmstat now;
    /// `uuid`: a fresh random UUID; `init_stat`: the sandbox's `/proc/1/stat`.
    pub(crate) fn new(stat: String, vmstat: String, uuid: String, init_stat: &str) -> Baseline {
        Baseline {
            stat,
            vmstat,
            boot_id: uuid,
            boot_offset: start_secs(init_stat).unwrap_or(0),
        }
    }
}

impl Baseline {
    /// The sandbox's uptime in seconds, given the host's boot time now.
    pub(crate) fn uptime(&self, host_boottime: f64) -> f64 {
        (host_boottime - self.boot_offset as f64).max(0.0)
    }

    /// The sandbox's boot time (seconds since the epoch): the wall clock
    /// less its uptime, as the kernel computes btime in a time namespace.
    pub(crate) fn btime(&self, host_boottime: f64) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        (now - self.uptime(host_boottime)).max(0.0) as u64
    }
}

/// A task's start in whole seconds of host boot time, from its `stat`
/// (the 22nd field, in clock ticks): the same arithmetic as init's own
/// in `launch/timens.rs`, so both agree to the second.
fn start_secs(stat: &str) -> Option<i64> {
    let after_comm = stat.rsplit_once(')')?.1;
    let ticks: i64 = after_comm.split_whitespace().nth(19)?.parse().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|hz| *hz > 0)?;
    Some(ticks / hz)
}

/// `/proc/uptime` of the sandbox, given the host's boot time now
/// (seconds) and the sandbox's `/proc/stat` text: the time since the
/// sandbox's clocks started, and the idle time of its CPUs since then.
pub(crate) fn uptime(base: &Baseline, host_boottime: f64, stat: &str) -> String {
    let up = base.uptime(host_boottime);
    // The idle field of the `cpu` line, in USER_HZ (100 per second).
    let idle = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    format!("{up:.2} {:.2}\n", idle as f64 / 100.0)
}

/// The sandbox's tasks as its procfs lists them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Census {
    pub running: u32,
    pub blocked: u32,
    pub total: u32,
    /// The highest pid in the sandbox's pid namespace.
    pub last_pid: u32,
}

/// Counts the tasks under `proc` (the sandbox's procfs, as a path the
/// supervisor can read): every `<pid>/task/<tid>`, by the state in its
/// `stat`. Tasks that end meanwhile are skipped.
pub(crate) fn census(proc: &Path) -> Census {
    let mut c = Census::default();
    let numbers = |dir: &Path| -> Vec<u32> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    for pid in numbers(proc) {
        c.last_pid = c.last_pid.max(pid);
        let tasks = proc.join(pid.to_string()).join("task");
        for tid in numbers(&tasks) {
            let Ok(stat) = std::fs::read_to_string(tasks.join(tid.to_string()).join("stat")) else {
                continue;
            };
            c.total += 1;
            c.last_pid = c.last_pid.max(tid);
            // `pid (comm) S ...`: the state follows the last ')'.
            match stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next())
            {
                Some('R') => c.running += 1,
                Some('D') => c.blocked += 1,
                _ => {}
            }
        }
    }
    c
}

/// `/proc/loadavg` of the sandbox: load averages 0.00 (the sandbox keeps
/// none), its running and total tasks, and its highest pid.
pub(crate) fn loadavg(c: &Census) -> String {
    format!(
        "0.00 0.00 0.00 {}/{} {}\n",
        c.running.max(1),
        c.total,
        c.last_pid
    )
}

/// `/proc/stat` of the sandbox from the host's `host`: only the first
/// `cpus` CPUs (all without a limit), renumbered, with `cpu` their sum;
/// every counter line (cpuN, intr, ctxt, softirq) less its value at the
/// baseline; `btime` the sandbox's boot time; `processes`, `procs_running`
/// and `procs_blocked` the sandbox's.
pub(crate) fn stat(
    host: &str,
    base: &Baseline,
    cpus: Option<usize>,
    c: &Census,
    btime: u64,
) -> String {
    let before = |key: &str| {
        base.stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .map(numbers)
            .unwrap_or_default()
    };
    let since = |line: &str| -> Vec<u64> {
        let key = line.split_whitespace().next().unwrap_or("");
        let old = before(key);
        numbers(line)
            .iter()
            .enumerate()
            .map(|(i, v)| v.saturating_sub(old.get(i).copied().unwrap_or(0)))
            .collect()
    };
    let per_cpu: Vec<Vec<u64>> = host
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .take(cpus.unwrap_or(usize::MAX))
        .map(since)
        .collect();
    let width = per_cpu.iter().map(Vec::len).max().unwrap_or(0);
    let sum: Vec<u64> = (0..width)
        .map(|i| per_cpu.iter().map(|v| v.get(i).copied().unwrap_or(0)).sum())
        .collect();
    let mut out = format!("cpu  {}\n", join(&sum));
    for (i, v) in per_cpu.iter().enumerate() {
        out.push_str(&format!("cpu{i} {}\n", join(v)));
    }
    for line in host.lines() {
        let key = line.split_whitespace().next().unwrap_or("");
        let text = match key {
            k if k.starts_with("cpu") => continue,
            "intr" | "ctxt" | "softirq" => join(&since(line)),
            "btime" => btime.to_string(),
            "processes" => c.last_pid.to_string(),
            "procs_running" => c.running.max(1).to_string(),
            "procs_blocked" => c.blocked.to_string(),
            _ => continue,
        };
        out.push_str(&format!("{key} {text}\n"));
    }
    out
}

/// `/proc/vmstat` since the sandbox started: every `key value` line of
/// the host's `host` less its value at the baseline (so counters such as
/// pgpgin or pswpin count from the start, and the host's page gauges,
/// which tell its memory size, read as what they grew by, at least 0).
pub(crate) fn vmstat(host: &str, base: &Baseline) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        let Some((key, v)) = line.split_once(' ') else {
            continue;
        };
        let old = base
            .vmstat
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let now = v.trim().parse::<u64>().unwrap_or(0);
        out.push_str(&format!("{key} {}\n", now.saturating_sub(old)));
    }
    out
}

fn numbers(line: &str) -> Vec<u64> {
    line.split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect()
}

fn join(v: &[u64]) -> String {
    let words: Vec<String> = v.iter().map(u64::to_string).collect();
    words.join(" ")
}

/// A process's `status` with `Cpus_allowed` and `Cpus_allowed_list`
/// keeping only the first `n` CPUs of the process's own mask (as
/// `sched_getaffinity` answers under `--cpus`).
pub(crate) fn status(host: &str, n: usize) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        if let Some(mask) = line.strip_prefix("Cpus_allowed:") {
            out.push_str(&format!("Cpus_allowed:\t{}", cut_hex_mask(mask.trim(), n)));
        } else if let Some(list) = line.strip_prefix("Cpus_allowed_list:") {
            out.push_str(&format!("Cpus_allowed_list:\t{}", cut_list(list.trim(), n)));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The kernel's `%*pb` mask (hex words of 32 bits, most significant first,
/// comma-separated) with only its first `n` set bits kept, same widths.
fn cut_hex_mask(mask: &str, n: usize) -> String {
    let words: Vec<&str> = mask.split(',').collect();
    let mut values: Vec<u32> = words
        .iter()
        .map(|w| u32::from_str_radix(w, 16).unwrap_or(0))
        .collect();
    let mut seen = 0;
    for word in values.iter_mut().rev() {
        for bit in 0..32 {
            if *word & (1 << bit) != 0 {
                if seen >= n {
                    *word &= !(1 << bit);
                }
                seen += 1;
            }
        }
    }
    let cut: Vec<String> = words
        .iter()
        .zip(values)
        .map(|(w, v)| format!("{v:0width$x}", width = w.len()))
        .collect();
    cut.join(",")
}

/// The kernel's `%*pbl` list (`0-3,8`) with only its first `n` CPUs.
fn cut_list(list: &str, n: usize) -> String {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) else {
            continue;
        };
        cpus.extend((a..=b).take(n.saturating_sub(cpus.len())));
        if cpus.len() >= n {
            break;
        }
    }
    let mut ranges: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        ranges.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    ranges.join(",")
}

/// Per-process files of the view's procfs served rewritten besides the
/// mount tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PerProcess {
    Status,
}

/// The per-process file `path` is (`/proc/<pid>[/task/<tid>]/<name>`,
/// as the kernel names a descriptor of the view's procfs), and its name.
pub(crate) fn per_process_name(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/proc/")?;
    let mut parts: Vec<&str> = rest.split('/').collect();
    let name = parts.pop()?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let ok = match parts.as_slice() {
        [pid] => numeric(pid),
        [pid, "task", tid] => numeric(pid) && numeric(tid),
        _ => false,
    };
    ok.then_some(name)
}

/// What the kernel names `fd`, if it fits 64 bytes (every per-process
/// file of interest does).
pub(crate) fn fd_name(fd: &OwnedFd) -> Option<String> {
    let mut buf = [0u8; 64];
    let n = vfs::sys::fd_path(fd.as_fd(), &mut buf).ok()?;
    if n == buf.len() {
        return None;
    }
    Some(std::str::from_utf8(buf.get(..n)?).ok()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "cpu  100 0 50 1000 5 0 1 0 0 0\n\
cpu0 60 0 30 500 3 0 1 0 0 0\n\
cpu1 40 0 20 500 2 0 0 0 0 0\n\
intr 900 10 20\n\
ctxt 5000\n\
btime 1000\n\
processes 777\n\
procs_running 9\n\
procs_blocked 2\n\
softirq 300 1 2\n";

    #[test]
    fn stat_is_the_sandboxs() {
        let base = Baseline {
            stat: HOST
                .replace("cpu0 60", "cpu0 50")
                .replace("ctxt 5000", "ctxt 4000"),
            vmstat: "nr_free_pages 1000\npgpgin 50\n".to_owned(),
            boot_id: String::new(),
            boot_offset: 1000,
        };
        let c = Census {
            running: 2,
            blocked: 0,
            total: 3,
            last_pid: 4,
        };
        let s = stat(HOST, &base, Some(1), &c, 123);
        assert_eq!(
            s,
            "cpu  10 0 0 0 0 0 0 0 0 0\ncpu0 10 0 0 0 0 0 0 0 0 0\nintr 0 0 0\nctxt 1000\n\
btime 123\nprocesses 4\nprocs_running 2\nprocs_blocked 0\nsoftirq 0 0 0\n"
        );
        let all = stat(HOST, &base, None, &c, 123);
        assert!(all.contains("\ncpu1 0 0"), "{all}");
        assert_eq!(loadavg(&c), "0.00 0.00 0.00 2/3 4\n");
        assert_eq!(uptime(&base, 1012.5, &s), "12.50 0.00\n");
        assert_eq!(
            vmstat("nr_free_pages 900\npgpgin 70\nnew 5\n", &base),
            "nr_free_pages 0\npgpgin 20\nnew 5\n"
        );
        let init = "1 (supervisor-init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250000 1 2";
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .unwrap()
            .unwrap();
        assert_eq!(start_secs(init), Some(250000 / hz));
    }

    #[test]
    fn status_keeps_the_first_cpus() {
        let host = "Name:\tx\nCpus_allowed:\t0000000f\nCpus_allowed_list:\t0-3\nMems_allowed:\t1\n";
        assert_eq!(
            status(host, 2),
            "Name:\tx\nCpus_allowed:\t00000003\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n"
        );
        assert_eq!(cut_hex_mask("00000001,00000006", 2), "00000000,00000006");
        assert_eq!(cut_hex_mask("00000001,00000004", 2), "00000001,00000004");
        assert_eq!(cut_list("1,3-7,9", 3), "1,3-4");
        assert_eq!(cut_list("0-1", 1), "0");
        assert_eq!(cut_list("bad", 1), "");
    }

    #[test]
    fn per_process_paths() {
        assert_eq!(per_process_name("/proc/2/status"), Some("status"));
        assert_eq!(per_process_name("/proc/2/task/9/status"), Some("status"));
        assert_eq!(per_process_name("/proc/self/status"), None);
        assert_eq!(per_process_name("/tmp/proc/2/status"), None);
    }
}
