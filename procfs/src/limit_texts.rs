//! The texts of `/proc/meminfo` and `/proc/cpuinfo` under a limit: the
//! host's text rewritten to tell of `--memory` (MemTotal the limit, swap
//! 0, the sandbox cgroup's figures where it has them) and `--cpus` (the
//! first N processors).
//!
//! Does not own: recognising or serving the files (`served.rs`), reading
//! the cgroup's memory.stat (`cgroup_memory.rs`), or the limits
//! themselves (`GuestLimits`, set by the supervisor).

use std::fmt::Write as _;

use super::cgroup_memory::CgroupMemory;

/// Lines of /proc/meminfo that are sizes of address space or of a page,
/// not amounts of memory: kept as the host has them.
const MEMINFO_KEPT: &[&str] = &["VmallocTotal", "VmallocChunk", "Hugepagesize"];
/// What free(1) adds up as buff/cache.
const MEMINFO_CACHE: &[&str] = &["Buffers", "Cached", "SReclaimable"];
/// Swap the guest is not told about.
const MEMINFO_ZERO: &[&str] = &["SwapTotal", "SwapFree", "SwapCached", "Zswap", "Zswapped"];

/// The host's /proc/meminfo for a guest limited to `limit` bytes (at most
/// the host's MemTotal) that uses `usage` bytes now: MemTotal is the
/// limit, MemFree what is left of it, swap 0. With the sandbox cgroup's
/// `memory.stat` (`cgroup`) every line it tells is the sandbox's
/// (`SandboxMemory`); without it (or without a usage) MemAvailable is
/// MemFree and buffers and caches are the host's within the memory in
/// use. No other amount is above MemTotal; lines in other units
/// (HugePages_*) are kept.
pub fn meminfo(
    host: &str,
    limit: u64,
    usage: Option<u64>,
    cgroup: Option<&CgroupMemory>,
) -> String {
    let field = |key: &str| {
        host.lines()
            .find_map(|l| kb_line(l).filter(|(k, _)| *k == key).map(|(_, v)| v))
    };
    let total = match field("MemTotal") {
        Some(host_total) => (limit / 1024).min(host_total),
        None => limit / 1024,
    };
    let free = usage.map(|u| limit.saturating_sub(u) / 1024);
    let free_now = free.or(field("MemFree")).unwrap_or(0).min(total);
    let own = usage
        .zip(cgroup)
        .map(|(_, cgroup)| SandboxMemory::new(cgroup, total, free_now));
    // What free(1) shows as buff/cache fits in the memory in use.
    let mut cache_left = total - free_now;
    let mut out = String::with_capacity(host.len() + 256);
    for line in host.lines() {
        match kb_line(line) {
            Some((key, v)) => {
                let sandbox_s = own.as_ref().and_then(|own| own.line(key));
                let v = match (key, sandbox_s) {
                    ("MemTotal", _) => total,
                    ("MemFree", _) => free.unwrap_or(v).min(total),
                    ("MemAvailable", _) => own
                        .as_ref()
                        .map_or(free.unwrap_or(v).min(total), |own| own.available),
                    (_, Some(v)) => v,
                    (k, _) if MEMINFO_CACHE.contains(&k) => {
                        let v = v.min(cache_left);
                        cache_left -= v;
                        v
                    }
                    (k, _) if MEMINFO_ZERO.contains(&k) => 0,
                    (k, _) if MEMINFO_KEPT.contains(&k) => v,
                    _ => v.min(total),
                };
                // The kernel's format: the label padded to 16, the value
                // to 8; written in place (one line's `format!` each was
                // most of this text's cost).
                out.push_str(key);
                out.push(':');
                out.extend(std::iter::repeat_n(
                    ' ',
                    15usize.saturating_sub(key.len() + 1),
                ));
                let _ = writeln!(out, " {v:>8} kB");
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The sandbox's own figures, in kB, from its cgroup: each line the
/// cgroup tells, within the memory in use (`used`); Cached and
/// SReclaimable together within it, so that free(1)'s buff/cache is at
/// most the memory in use; and MemAvailable what is free plus what the kernel
/// may reclaim without swap: the page cache less Shmem (tmpfs and shared
/// memory stay until removed) and the reclaimable slab. So free(1)'s
/// `used` (MemTotal - MemAvailable) + `free` + `buff/cache` is MemTotal
/// + `shared`, as the kernel's own figures nearly are.
struct SandboxMemory<'a> {
    cgroup: &'a CgroupMemory,
    used: u64,
    cached: u64,
    sreclaimable: u64,
    available: u64,
}

impl<'a> SandboxMemory<'a> {
    fn new(cgroup: &'a CgroupMemory, total: u64, free: u64) -> SandboxMemory<'a> {
        let used = total - free;
        let kb = |key: &str| cgroup.line(key).unwrap_or(0) / 1024;
        let cached = kb("Cached").min(used);
        let sreclaimable = kb("SReclaimable").min(used - cached);
        let shmem = kb("Shmem").min(cached);
        SandboxMemory {
            cgroup,
            used,
            cached,
            sreclaimable,
            available: free + (cached - shmem) + sreclaimable,
        }
    }

    /// The line `key` in kB, if the cgroup tells it.
    fn line(&self, key: &str) -> Option<u64> {
        match key {
            "Cached" => Some(self.cached),
            "SReclaimable" | "KReclaimable" => Some(self.sreclaimable),
            _ => Some((self.cgroup.line(key)? / 1024).min(self.used)),
        }
    }
}

/// `Key:   1234 kB` as ("Key", 1234).
fn kb_line(line: &str) -> Option<(&str, u64)> {
    let (key, rest) = line.split_once(':')?;
    let v = rest.trim().strip_suffix(" kB")?.trim().parse().ok()?;
    Some((key, v))
}

/// The host's /proc/cpuinfo with its first `n` processors only,
/// numbered 0..n-1, each counting at most `n` siblings and cores.
pub fn cpuinfo(host: &str, n: usize) -> String {
    let mut out = String::with_capacity(host.len());
    let blocks = host
        .split("\n\n")
        .filter(|b| b.trim_start().starts_with("processor"));
    for (i, block) in blocks.take(n).enumerate() {
        for line in block.trim_start_matches('\n').lines() {
            let key = line.split(':').next().unwrap_or("").trim_end();
            let capped = |line: &str| match line.split_once(':') {
                Some((k, v)) => match v.trim().parse::<usize>() {
                    Ok(x) => format!("{k}: {}", x.min(n)),
                    Err(_) => line.to_string(),
                },
                None => line.to_string(),
            };
            match key {
                "processor" => out.push_str(&format!("processor\t: {i}")),
                "siblings" | "cpu cores" => out.push_str(&capped(line)),
                _ => out.push_str(line),
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_MEMINFO: &str = "MemTotal:       24684096 kB\n\
MemFree:        23875036 kB\n\
MemAvailable:   24275744 kB\n\
Buffers:            4808 kB\n\
Cached:           527128 kB\n\
SwapCached:            0 kB\n\
SwapTotal:       8388604 kB\n\
SwapFree:        8388604 kB\n\
CommitLimit:    20730652 kB\n\
VmallocTotal:   34359738367 kB\n\
HugePages_Total:       0\n\
Hugepagesize:       2048 kB\n\
DirectMap2M:    25165824 kB\n";

    #[test]
    fn meminfo_is_cut_to_the_limit() {
        let m = meminfo(HOST_MEMINFO, 512 << 20, Some(100 << 20), None);
        let want = "MemTotal:         524288 kB\n\
MemFree:          421888 kB\n\
MemAvailable:     421888 kB\n\
Buffers:            4808 kB\n\
Cached:            97592 kB\n\
SwapCached:            0 kB\n\
SwapTotal:             0 kB\n\
SwapFree:              0 kB\n\
CommitLimit:      524288 kB\n\
VmallocTotal:   34359738367 kB\n\
HugePages_Total:       0\n\
Hugepagesize:       2048 kB\n\
DirectMap2M:      524288 kB\n";
        assert_eq!(m, want);
        // Usage above the limit: nothing free. No usage: the host's, capped.
        assert!(meminfo(HOST_MEMINFO, 1 << 20, Some(2 << 20), None)
            .contains("MemFree:               0 kB\n"));
        let m = meminfo(HOST_MEMINFO, 1 << 40, None, None);
        assert!(
            m.starts_with("MemTotal:       24684096 kB\nMemFree:        23875036 kB\n"),
            "{m}"
        );
        // The host's real file keeps its shape.
        let real = std::fs::read_to_string("/proc/meminfo").unwrap();
        let m = meminfo(&real, 1 << 30, Some(0), None);
        assert_eq!(m.lines().count(), real.lines().count());
        assert!(m.starts_with("MemTotal:        1048576 kB\n"), "{m}");
        // ... in the kernel's format: unchanged lines stay byte for byte.
        let m = meminfo(&real, u64::MAX, None, None);
        for (a, b) in m.lines().zip(real.lines()) {
            let total = real.lines().next().and_then(kb_line).map_or(0, |(_, v)| v);
            let kept = kb_line(b).is_none_or(|(k, v)| {
                v <= total && !MEMINFO_ZERO.contains(&k) && !MEMINFO_CACHE.contains(&k)
            });
            if kept {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn meminfo_under_a_cgroup_is_the_sandbox_s() {
        let stat = "anon 104857600\nfile 52428800\nshmem 20971520\nslab 3145728\n\
slab_reclaimable 2097152\nslab_unreclaimable 1048576\nfile_dirty 4096\n";
        let cgroup = CgroupMemory::new(stat).unwrap();
        let m = meminfo(HOST_MEMINFO, 512 << 20, Some(160 << 20), Some(&cgroup));
        let want = "MemTotal:         524288 kB\n\
MemFree:          360448 kB\n\
MemAvailable:     393216 kB\n\
Buffers:               0 kB\n\
Cached:            51200 kB\n\
SwapCached:            0 kB\n\
SwapTotal:             0 kB\n\
SwapFree:              0 kB\n\
CommitLimit:      524288 kB\n\
VmallocTotal:   34359738367 kB\n\
HugePages_Total:       0\n\
Hugepagesize:       2048 kB\n\
DirectMap2M:      524288 kB\n";
        assert_eq!(m, want);
        // Every line the cgroup tells, and no cache above the memory in use.
        let real = std::fs::read_to_string("/proc/meminfo").unwrap();
        let m = meminfo(&real, 512 << 20, Some(40 << 20), Some(&cgroup));
        let kb = |key: &str| {
            let line = m.lines().filter_map(kb_line).find(|(k, _)| *k == key);
            line.map(|(_, v)| v)
        };
        assert_eq!(kb("Shmem"), Some(20480), "{m}");
        assert_eq!(kb("Cached"), Some(40960), "{m}");
        assert_eq!(kb("SReclaimable"), Some(0), "{m}");
        assert_eq!(kb("AnonPages"), Some(40960), "{m}");
        assert_eq!(
            kb("MemAvailable"),
            Some(kb("MemFree").unwrap_or(0) + 20480),
            "{m}"
        );
        assert_eq!(kb("Mapped"), Some(0), "{m}");
    }

    #[test]
    fn cpuinfo_keeps_the_first_processors() {
        let host = "processor\t: 0\nsiblings\t: 4\ncpu cores\t: 2\nflags\t\t: fpu\n\n\
processor\t: 1\nsiblings\t: 4\n\nprocessor\t: 5\nsiblings\t: 4\n\n";
        assert_eq!(
            cpuinfo(host, 1),
            "processor\t: 0\nsiblings\t: 1\ncpu cores\t: 1\nflags\t\t: fpu\n\n"
        );
        let two = cpuinfo(host, 2);
        assert!(two.ends_with("processor\t: 1\nsiblings\t: 2\n\n"), "{two}");
        assert_eq!(cpuinfo(host, 9).matches("processor").count(), 3);
        assert!(cpuinfo(host, 9).contains("processor\t: 2\n"));
    }
}
