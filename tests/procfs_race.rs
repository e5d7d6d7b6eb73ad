//! Races against the CONTINUE of opens and path stats, aimed at the
//! kernel's own /proc: tests/c/procrace.c makes a path name an ordinary
//! file when the supervisor resolves it and a /proc file when the kernel
//! redoes the lookup (a symlink swapped, or the path rewritten from
//! another thread), thousands of times, and counts every text it read
//! that holds a host fact this test knows (the host's MemTotal, kernel
//! command line, interrupt and disk names, kernel symbols, cgroup path),
//! and every stat of a /proc file with a host size. The view covers the
//! global files the sandbox serves (`launch/proc_view.rs`), so a dodge
//! reads an empty file; the guest's cgroup namespace makes the kernel's
//! own `/proc/<pid>/cgroup` say `/`. As root and as `tester`.
//!
//! The kernel's per-process files, checked by hand (`cat
//! /proc/self/X` in a guest; reading them natively needs no race):
//! `cgroup` and `cpuset` say `/` (tested below); `sched`, `stat`,
//! `status` give sandbox pids; `loginuid`, `sessionid` the unset
//! 4294967295; `environ`, `cmdline` are the sandbox's own; `stack` is
//! refused. Known to tell of the host (ARCHITECTURE.md, "What a dodged
//! open still reaches"): `mountinfo`, `mounts` (the served copies hide
//! it, a dodge does not) and `mountstats` (not served) name bind sources'
//! host paths, the host's disk and its devtmpfs size; `timens_offsets`
//! the host's uptime at the start and `autogroup` a host-wide counter
//! (both served as the sandbox's, not to a dodge); the `ns/*` links
//! host-wide counters.
//! Never run natively (procrace.c refuses to run outside a sandbox).

mod common;
use common::*;

/// Tries per race (each of the two races).
const TRIES: &str = "2000";

/// A /proc file to race, with the host facts its kernel text holds.
struct Target {
    path: &'static str,
    needles: Vec<String>,
}

/// The targets this host has, each with the facts to look for.
fn targets() -> Vec<Target> {
    let host = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut t = Vec::new();
    let mut add = |path: &'static str, needles: Vec<String>| {
        let needles: Vec<String> = needles.into_iter().filter(|n| n.len() >= 3).collect();
        if !needles.is_empty() || path == "/proc/config.gz" {
            t.push(Target { path, needles });
        }
    };
    let meminfo = host("/proc/meminfo");
    let memtotal = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().to_string());
    add("/proc/meminfo", memtotal.into_iter().collect());
    let cmdline: String = host("/proc/cmdline").trim().chars().take(30).collect();
    add("/proc/cmdline", vec![cmdline]);
    let intr = host("/proc/stat")
        .lines()
        .find_map(|l| l.strip_prefix("intr "))
        .and_then(|v| v.chars().next())
        .filter(|c| *c != '0')
        .map(|c| format!("intr {c}"));
    add("/proc/stat", intr.into_iter().collect());
    add("/proc/interrupts", vec!["CPU0".into()]);
    add("/proc/zoneinfo", vec!["zone".into()]);
    let disk = host("/proc/diskstats")
        .lines()
        .find_map(|l| l.split_whitespace().nth(2).map(|d| format!(" {d} ")));
    add("/proc/diskstats", disk.into_iter().collect());
    let symbol = host("/proc/kallsyms")
        .lines()
        .find_map(|l| l.split_whitespace().nth(2).map(str::to_string));
    add("/proc/kallsyms", symbol.into_iter().collect());
    if std::path::Path::new("/proc/config.gz").exists() {
        add("/proc/config.gz", Vec::new());
    }
    let min_free = host("/proc/sys/vm/min_free_kbytes").trim().to_string();
    add(
        "/proc/sys/vm/min_free_kbytes",
        vec![format!("{min_free}\n")],
    );
    let cgroup = host("/proc/self/cgroup")
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .find(|p| p.len() > 1)
        .map(str::to_string);
    add("/proc/self/cgroup", cgroup.into_iter().collect());
    t
}

/// Races every target under `--memory 256m` (so meminfo and the memory
/// sized /proc/sys files are served rewritten) as `user`, with `bin`.
fn race_all(user: Option<(u32, u32)>, bin: &std::path::Path) {
    let targets = targets();
    assert!(targets.len() >= 5, "too few targets on this host");
    for t in &targets {
        let mut argv = vec![
            c_prog("procrace").display().to_string(),
            HOST_MARKER.into(),
            TRIES.into(),
            t.path.into(),
        ];
        argv.extend(t.needles.iter().cloned());
        let mut run = Run::new(&argv)
            .bin(bin)
            .sup(&c_mounts())
            .sup(&["--memory", "256m"]);
        if let Some((uid, gid)) = user {
            run = run.user(uid, gid);
        }
        let out = run.supervised();
        assert_eq!(out.code, Some(0), "{}: {}", t.path, out.dump());
        assert!(
            out.field("swaps") > 0,
            "{}: no swaps: {}",
            t.path,
            out.stdout
        );
        assert!(out.field("rewrites") > 0, "{}: no rewrites", t.path);
        assert!(out.field("innocent") > 0, "{}: never read the file", t.path);
        assert_eq!(
            out.field("leaks"),
            0,
            "{}: a host fact: {}",
            t.path,
            out.stdout
        );
        assert_eq!(
            out.field("sizes"),
            0,
            "{}: a host size: {}",
            t.path,
            out.stdout
        );
    }
}

#[test]
fn dodged_opens_of_proc_read_no_host_fact() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let _ = guard();
    race_all(None, &bin());
}

#[test]
fn dodged_opens_of_proc_read_no_host_fact_unprivileged() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    let _ = guard();
    race_all(Some((uid, gid)), &bin);
}

/// The covers leave the served files as they were: the guest reads the
/// sandbox's texts, its mount table lists no cover, and a stat of a
/// covered file says what a read gives.
#[test]
fn covered_files_still_read_served() {
    let script = "head -1 /proc/meminfo; cat /proc/cmdline | wc -c; \
        cat /proc/kallsyms | wc -c; \
        grep -cE ' /proc/(meminfo|cmdline|stat|kallsyms|sys/vm/min_free_kbytes) ' /proc/self/mountinfo; \
        stat -c %s /proc/cmdline /proc/interrupts; cat /proc/sys/vm/min_free_kbytes";
    let out = Run::sh(script, &[]).sup(&["--memory", "256m"]).supervised();
    let got: Vec<String> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let want = ["MemTotal: 262144 kB", "1", "0", "0", "1", "0", "2048"];
    assert_eq!(got, want, "{}", out.dump());
}
