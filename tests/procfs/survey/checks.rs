//! The survey's checks: each finds one kind of host-only fact in what
//! the guest read (`procfs_survey.rs` runs the survey and asserts that
//! a supervised one finds none and a native one finds them).

use super::*;

pub(super) const MEMORY_SIZED: &[&str] = &[
    "/proc/sys/kernel/threads-max",
    "/proc/sys/fs/file-max",
    "/proc/sys/fs/epoll/max_user_watches",
    "/proc/sys/fs/inotify/max_user_watches",
    "/proc/sys/vm/min_free_kbytes",
    "/proc/sys/vm/user_reserve_kbytes",
];

/// N of an `autogroup` text (`/autogroup-N nice 0`).
pub(super) fn autogroup_id(text: &str) -> Option<u64> {
    text.strip_prefix("/autogroup-")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

pub(super) fn first_u64(text: &str) -> u64 {
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub(super) fn first_number(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The limits a survey ran under.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) cpus: Option<usize>,
    pub(super) memory: bool,
    pub(super) pids: Option<u64>,
}

/// Every host-only fact found in the survey, one line each.
pub(super) fn leaks(recs: &[Rec], host: &HostFacts, limits: Limits) -> Vec<String> {
    let mut found = Vec::new();
    let mut contains = |what: &str, needle: &str, dirs_too: bool| {
        if needle.is_empty() {
            return;
        }
        for r in recs {
            let searched = r.kind == "F" || (dirs_too && r.kind == "DIR") || r.kind == "L";
            if searched && r.body.contains(needle) {
                found.push(format!("{}: {what} ({needle})", r.path));
            }
        }
    };
    contains("the host's boot id", &host.boot_id, false);
    for p in &host.cgroup_paths {
        contains("the test's host cgroup path", p, false);
    }
    contains(
        "an outside process's command line",
        &host.outsider_nonce,
        true,
    );
    if limits.memory {
        contains("the host's MemTotal", &host.memtotal_kb, false);
    }
    for r in recs.iter().filter(|r| r.kind != "E13" && r.kind != "E1") {
        let text = format!("{}\n{}", r.path, r.body);
        for t in tokens(&text) {
            if host.block_devices.iter().any(|d| d == t) {
                found.push(format!("{}: the host's block device {t}", r.path));
                break;
            }
            if host.hostname.len() >= 4 && t == host.hostname {
                found.push(format!("{}: the host's hostname {t}", r.path));
                break;
            }
        }
    }
    if recs.iter().any(|r| {
        r.kind == "DIR" && r.path == "/proc" && r.body.lines().any(|l| l == host.outsider_pid)
    }) {
        found.push(format!(
            "/proc: lists the outside process {}",
            host.outsider_pid
        ));
    }
    found.extend(time_leaks(recs, host));
    found.extend(load_leaks(recs));
    found.extend(size_leaks(recs));
    found.extend(sys_leaks(recs, host, limits));
    found.extend(stat_leaks(recs));
    found.extend(process_leaks(recs, host));
    if let Some(n) = limits.cpus.filter(|n| *n < host.cpus) {
        found.extend(cpu_leaks(recs, n));
    }
    found
}

/// Uptime and boot time are the sandbox's: a sandbox started a moment
/// ago has not been up for as long as a host up for ten minutes.
pub(super) fn time_leaks(recs: &[Rec], host: &HostFacts) -> Vec<String> {
    let mut found = Vec::new();
    if host.uptime < 600.0 {
        eprintln!("host up {}s: uptime not comparable", host.uptime);
        return found;
    }
    let up = body(recs, "/proc/uptime").and_then(first_number);
    if up.is_none_or(|u| u > host.uptime - 300.0) {
        found.push(format!(
            "/proc/uptime: {up:?}, the host's is {}",
            host.uptime
        ));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let btime = body(recs, "/proc/stat")
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ")))
        .and_then(|v| v.trim().parse::<u64>().ok());
    if btime.is_none_or(|b| b + 300 < now) {
        found.push(format!(
            "/proc/stat: btime {btime:?} is the host's boot, now is {now}"
        ));
    }
    found
}

/// /proc/loadavg counts the sandbox's tasks (a handful), not the host's.
pub(super) fn load_leaks(recs: &[Rec]) -> Vec<String> {
    let load = body(recs, "/proc/loadavg").unwrap_or("");
    let total = load
        .split_whitespace()
        .nth(3)
        .and_then(|rt| rt.split_once('/'))
        .and_then(|(_, t)| t.parse::<u32>().ok());
    match total {
        Some(t) if t <= 16 => Vec::new(),
        _ => vec![format!(
            "/proc/loadavg: {load:?} counts more than the sandbox's tasks"
        )],
    }
}

/// /proc/stat's counts are the sandbox's: no interrupts (it has no
/// devices; the host's `intr` line also lists its interrupt lines), no
/// more context switches than its two tasks made (the survey's own, read
/// later in /proc/self/status, and a margin for init's), and no more
/// forks than a handful.
pub(super) fn stat_leaks(recs: &[Rec]) -> Vec<String> {
    let mut found = Vec::new();
    let stat = body(recs, "/proc/stat").unwrap_or("");
    let line = |key: &str| -> Vec<u64> {
        stat.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|n| n.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let intr = line("intr");
    if intr != [0] {
        let head: Vec<u64> = intr.iter().take(4).copied().collect();
        found.push(format!(
            "/proc/stat: intr {head:?}... ({} fields): the host's",
            intr.len()
        ));
    }
    let softirq = line("softirq");
    if softirq.iter().any(|v| *v != 0) {
        found.push(format!(
            "/proc/stat: softirq {}: the host's",
            softirq.first().unwrap_or(&0)
        ));
    }
    let own: u64 = body(recs, "/proc/self/status")
        .unwrap_or("")
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum();
    let ctxt = line("ctxt").first().copied().unwrap_or(u64::MAX);
    if ctxt > own + 1000 {
        found.push(format!("/proc/stat: ctxt {ctxt}, the survey made {own}"));
    }
    let processes = line("processes").first().copied().unwrap_or(u64::MAX);
    if processes > 64 {
        found.push(format!(
            "/proc/stat: processes {processes}: the host's forks"
        ));
    }
    found
}

/// A process's files that tell host-wide state: its time namespace's
/// offsets (the host's uptime at the sandbox's start) and its autogroup's
/// number (a host-wide counter: the sandbox's groups are few).
pub(super) fn process_leaks(recs: &[Rec], host: &HostFacts) -> Vec<String> {
    let mut found = Vec::new();
    let offsets = body(recs, "/proc/self/timens_offsets").unwrap_or("");
    let moved = offsets
        .lines()
        .flat_map(|l| l.split_whitespace().skip(1))
        .any(|v| v != "0");
    if moved {
        found.push(format!("/proc/self/timens_offsets: {offsets:?}"));
    }
    let group = body(recs, "/proc/self/autogroup").and_then(autogroup_id);
    // The sandbox numbers its groups from 1: a host whose counter is
    // still 1 (a fresh machine with one session) reads the same, and
    // then the number tells nothing either way.
    let host_group = host.autogroup.filter(|&h| h > 1);
    if let Some(n) = group.filter(|n| *n > 64 || Some(*n) == host_group) {
        found.push(format!(
            "/proc/self/autogroup: group {n}, the host's counter (the test's is {:?})",
            host.autogroup
        ));
    }
    found
}

/// A stat size that is not what a read gives: procfs's size of a file
/// served otherwise (a masked file's host size, such as config.gz's).
pub(super) fn size_leaks(recs: &[Rec]) -> Vec<String> {
    recs.iter()
        .filter(|r| r.kind == "Z")
        .map(|r| format!("{}: stat size and bytes read {}", r.path, r.body.trim()))
        .collect()
}

/// /proc/sys: the host's counts of open files, inodes and dentries
/// (a sandbox of two processes holds a few dozen of each, the host
/// hundreds of thousands), its kernel taint, and under limits the
/// thread and file maxima the kernel sized from the host's memory.
pub(super) fn sys_leaks(recs: &[Rec], host: &HostFacts, limits: Limits) -> Vec<String> {
    let mut found = Vec::new();
    let value = |path: &str| body(recs, path).unwrap_or("").trim().to_owned();
    let first = |path: &str| first_u64(&value(path));
    let counts = [
        ("/proc/sys/fs/file-nr", host.file_nr),
        ("/proc/sys/fs/inode-nr", host.inode_nr),
        ("/proc/sys/fs/dentry-state", host.dentries),
    ];
    for (path, host_count) in counts {
        let count = first(path);
        if host_count >= 200 && count * 4 > host_count {
            found.push(format!("{path}: {count}, the host's is {host_count}"));
        }
    }
    let tainted = value("/proc/sys/kernel/tainted");
    if tainted != "0" {
        found.push(format!("/proc/sys/kernel/tainted: {tainted}"));
    }
    let threads = value("/proc/sys/kernel/threads-max");
    for (path, host_value) in host.memory_sized.iter().filter(|_| limits.memory) {
        if value(path) == *host_value {
            found.push(format!("{path}: the host's {host_value}"));
        }
    }
    if let Some(pids) = limits.pids {
        if first("/proc/sys/kernel/threads-max") > pids {
            found.push(format!(
                "/proc/sys/kernel/threads-max: {threads} under --pids {pids}"
            ));
        }
    }
    found
}

/// Under `--cpus n`: n CPUs everywhere a CPU list is given.
pub(super) fn cpu_leaks(recs: &[Rec], n: usize) -> Vec<String> {
    let mut found = Vec::new();
    let stat = body(recs, "/proc/stat").unwrap_or("");
    let percpu = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    if percpu != n {
        found.push(format!("/proc/stat: {percpu} CPUs under --cpus {n}"));
    }
    let status = body(recs, "/proc/self/status").unwrap_or("");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim);
    let want = if n == 1 {
        "0".to_owned()
    } else {
        format!("0-{}", n - 1)
    };
    if list != Some(want.as_str()) {
        found.push(format!(
            "/proc/self/status: Cpus_allowed_list {list:?} under --cpus {n}"
        ));
    }
    for path in ["/proc/interrupts", "/proc/softirqs"] {
        let header = body(recs, path)
            .and_then(|b| b.lines().next())
            .unwrap_or("");
        let cols = header
            .split_whitespace()
            .filter(|c| c.starts_with("CPU"))
            .count();
        if cols > n {
            found.push(format!("{path}: {cols} CPU columns under --cpus {n}"));
        }
    }
    found
}
