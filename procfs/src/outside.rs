//! Limits enforced outside the run, by a cgroup its front-end made (the
//! OCI container's, from `linux.resources`): what the guest is told of
//! them (/proc/meminfo, nproc, /proc/cpuinfo, the /proc/sys sizes) is
//! the figures known at the start ([`OutsideLimits`]), with the memory
//! in use, the memory limit, the CPU quota and the pids limit read from
//! the cgroup at each use, so that a change (`docker update --memory
//! --cpus --pids-limit`) shows in the guest's next read — one that adds
//! a limit there was none of too: with a controller's directory, the
//! guest is shown that limit even without one (the host's figures, as
//! "no limit" reads).
//!
//! Owns: [`OutsideLimits`] and [`OutsideCgroup`] (part of the engine's
//! `SandboxConfig`, which re-exports them), which cgroup files give those
//! figures and reading them. Does not own making the cgroup or setting
//! its limits (the front-end), joining it (the engine opens
//! [`OutsideCgroup::join`] for init), the texts served (`texts.rs`), or
//! /sys/devices/system/cpu (`sys_cpu.rs`, whose CPUs [`cpus_reader`] can
//! read).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::unistd::{sysconf, SysconfVar};
use serde::{Deserialize, Serialize};

use super::limits::{GuestView, Reading, TextReading};

/// Limits enforced outside the run, by a cgroup its front-end made and
/// set (the OCI container's `linux.resources`): the guest is told of
/// them as of the run's own ([`view_of`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideLimits {
    /// The figures known at the start.
    pub memory: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    /// The cgroup that holds them, read at each use (a change shows).
    pub cgroup: Option<OutsideCgroup>,
}

/// The directories of a cgroup made outside the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideCgroup {
    /// The directories are cgroup v2's (else v1's).
    pub v2: bool,
    /// The directory of the memory controller.
    pub memory: Option<PathBuf>,
    /// The directory of the cpu controller.
    pub cpu: Option<PathBuf>,
    /// The directory whose `pids.max` is the pids limit.
    pub pids: Option<PathBuf>,
    /// Tasks counted there that are not the guest's.
    pub pids_overhead: u64,
    /// Files the sandbox's init writes "0" to as its first act, joining
    /// the directories of the sandbox alone (which hold the sandbox but
    /// not the supervisor: a freezer's).
    pub join: Vec<PathBuf>,
}

/// The guest's view of `limits`, with readers of their cgroup for each
/// controller it has a directory of. A limit the figures lack starts as
/// the host's (its memory and CPUs, no pids limit), so that the files a
/// change may touch are served from the start. The files are opened
/// now, before the supervisor confines itself.
pub fn view_of(limits: &OutsideLimits) -> GuestView {
    let mut view = GuestView {
        memory: limits.memory,
        cpus: limits.cpus,
        pids: limits.pids,
        ..GuestView::default()
    };
    let Some(cgroup) = &limits.cgroup else {
        return view;
    };
    let v2 = cgroup.v2;
    let open = |dir: &Option<PathBuf>, v1: &str, v2_name: &str| {
        File::open(dir.as_ref()?.join(if v2 { v2_name } else { v1 })).ok()
    };
    let host_memory = host_memtotal();
    if let (Some(limit), Some(host)) = (
        open(&cgroup.memory, "memory.limit_in_bytes", "memory.max"),
        host_memory,
    ) {
        view.memory = view.memory.or(Some(host));
        view.memory_usage =
            open(&cgroup.memory, "memory.usage_in_bytes", "memory.current").map(reader);
        view.memory_stat = open(&cgroup.memory, "memory.stat", "memory.stat").map(text_reader);
        // No limit reads as a huge number (or "max"): the host's memory.
        let read = reader(limit);
        view.memory_limit_now = Some(Box::new(move || read().map(|m| m.min(host))));
    }
    if let Some(cpus) = cpus_reader(cgroup) {
        view.cpus = view.cpus.or_else(host_cpus);
        view.cpus_now = Some(cpus);
    }
    let pids = cgroup.pids.as_ref().map(|d| d.join("pids.max"));
    if let Some(file) = pids.and_then(|p| File::open(p).ok()) {
        let overhead = cgroup.pids_overhead;
        view.pids = view.pids.or(Some(u64::MAX));
        let read = reader(file);
        view.pids_now = Some(Box::new(move || {
            read().map(|max| max.saturating_sub(overhead))
        }));
    }
    view
}

/// Reads the CPUs of the cgroup at each call: its quota over its period,
/// rounded up (`u64::MAX`: no quota); `None` without a cpu directory.
pub fn cpus_reader(cgroup: &OutsideCgroup) -> Option<Reading> {
    let dir = cgroup.cpu.as_deref()?;
    match cgroup.v2 {
        true => File::open(dir.join("cpu.max")).ok().map(v2_cpus_reader),
        false => v1_cpus_reader(dir),
    }
}

/// The host's online CPUs.
fn host_cpus() -> Option<f64> {
    let n = sysconf(SysconfVar::_NPROCESSORS_ONLN).ok().flatten()?;
    Some(n.max(1) as f64)
}

/// The host's memory (MemTotal of its /proc/meminfo), in bytes.
fn host_memtotal() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// v1's CPUs: `cpu.cfs_quota_us` over `cpu.cfs_period_us`, rounded up
/// (a quota of -1 is no limit: `u64::MAX`).
fn v1_cpus_reader(dir: &Path) -> Option<Reading> {
    let quota = File::open(dir.join("cpu.cfs_quota_us")).ok()?;
    let period = File::open(dir.join("cpu.cfs_period_us")).ok()?;
    Some(Box::new(move || {
        let quota = read_text(&quota)?;
        let period = read_text(&period)?;
        cpus_of(quota.trim(), period.trim())
    }))
}

/// v2's CPUs: `cpu.max` is "QUOTA PERIOD" or "max PERIOD".
fn v2_cpus_reader(file: File) -> Reading {
    Box::new(move || {
        let text = read_text(&file)?;
        let (quota, period) = text.trim().split_once(' ')?;
        cpus_of(quota, period)
    })
}

/// Quota over period, rounded up; `u64::MAX` when there is no quota.
fn cpus_of(quota: &str, period: &str) -> Option<u64> {
    if quota == "max" || quota == "-1" {
        return Some(u64::MAX);
    }
    let quota: u64 = quota.parse().ok()?;
    let period: u64 = period.parse().ok().filter(|p| *p > 0)?;
    Some(quota.div_ceil(period).max(1))
}

/// The text at the start of `file` (at most 64 bytes).
fn read_text(file: &File) -> Option<String> {
    let mut buf = [0u8; 64];
    let n = file.read_at(&mut buf, 0).ok()?;
    String::from_utf8(buf.get(..n)?.to_vec()).ok()
}

/// Reads the number at the start of `file` at each call ("max", v2's
/// no limit, is `u64::MAX`: the host's memory).
fn reader(file: File) -> Reading {
    Box::new(move || parse_figure(read_text(&file)?.as_bytes()))
}

/// Reads the whole text of `file` at each call (memory.stat: a few KiB,
/// made whole by the kernel at each read from its start).
fn text_reader(file: File) -> TextReading {
    Box::new(move || {
        let mut buf = vec![0u8; 16 << 10];
        let n = file.read_at(&mut buf, 0).ok()?;
        buf.truncate(n);
        String::from_utf8(buf).ok()
    })
}

fn parse_figure(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    match text {
        "max" => Some(u64::MAX),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::{cpus_of, parse_figure};

    #[test]
    fn cpus_are_quota_over_period_rounded_up() {
        assert_eq!(cpus_of("100000", "100000"), Some(1));
        assert_eq!(cpus_of("150000", "100000"), Some(2));
        assert_eq!(cpus_of("1000", "100000"), Some(1));
        assert_eq!(cpus_of("-1", "100000"), Some(u64::MAX));
        assert_eq!(cpus_of("max", "100000"), Some(u64::MAX));
        assert_eq!(cpus_of("100000", "0"), None);
        assert_eq!(cpus_of("x", "100000"), None);
    }

    #[test]
    fn figures_are_numbers_or_max() {
        assert_eq!(parse_figure(b"67108864\n"), Some(64 << 20));
        assert_eq!(parse_figure(b"max\n"), Some(u64::MAX));
        assert_eq!(parse_figure(b""), None);
        assert_eq!(parse_figure(b"\xff"), None);
    }
}
