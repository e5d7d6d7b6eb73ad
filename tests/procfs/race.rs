//! Races against the CONTINUE of opens and path stats, aimed at the
//! kernel's own /proc: tests/c/procrace.c makes a path name an ordinary
//! file when the supervisor resolves it and a /proc file when the kernel
//! redoes the lookup (a symlink swapped, or the path rewritten from
//! another thread), thousands of times, and counts every text it read
//! that holds a host fact this test knows (the host's MemTotal, kernel
//! command line, interrupt and disk names, kernel symbols, cgroup path),
//! and every stat of a /proc file with a host size. The view covers the
//! global files the sandbox serves (`sandbox/src/launch/proc_mount.rs`), so a dodge
//! reads an empty file; the guest's cgroup namespace makes the kernel's
//! own `/proc/<pid>/cgroup` say `/`. As root and as `tester`.
//!
//! Per-process files cannot be covered: where the kernel has Landlock,
//! the guest's domain grants no reading of the kernel's procfs (but
//! /proc/sys and /proc/sysvipc, `procfs/src/fence.rs`), so a
//! dodge to `mountinfo`, `mounts`, `mountstats` (the host paths of bind
//! sources, the host's disk, its devtmpfs size), `status` under `--cpus`
//! (the host's CPU mask) or `timens_offsets` (the host's uptime) fails
//! with EACCES, and so does an `O_RDWR` open of them, which passes the
//! filter and needs no race at all.
//!
//! The kernel's per-process files, checked by hand (`cat
//! /proc/self/X` in a guest; the supervisor now opens them): `cgroup` and
//! `cpuset` say `/` (tested below); `sched`, `stat`, `status` give
//! sandbox pids; `loginuid`, `sessionid` the unset 4294967295;
//! `environ`, `cmdline` are the sandbox's own; `stack` is refused; the
//! `ns/*` links tell host-wide counters.
//! Never run natively (procrace.c refuses to run outside a sandbox).

use crate::common;
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

/// The per-process files whose kernel text tells of the host, with the
/// facts to look for; `status` only when `cpus` (run under `--cpus 1`).
fn process_targets(cpus: bool) -> Vec<Target> {
    let host = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mounts = host("/proc/self/mounts");
    let field = |line: &str, i: usize| line.split_whitespace().nth(i).map(str::to_string);
    let mut facts: Vec<String> = Vec::new();
    // The host's disk, named by the root's mount.
    facts.extend(
        mounts
            .lines()
            .filter(|l| field(l, 1).as_deref() == Some("/"))
            .filter_map(|l| field(l, 0))
            .filter(|d| d.starts_with("/dev/")),
    );
    // The host devtmpfs's size (half the host's memory).
    facts.extend(
        mounts
            .lines()
            .filter(|l| field(l, 2).as_deref() == Some("devtmpfs"))
            .filter_map(|l| {
                field(l, 3)?
                    .split(',')
                    .find(|o| o.starts_with("size="))
                    .map(str::to_string)
            }),
    );
    // A --ro bind's root: the host path it came from.
    let d = c_dir().display().to_string();
    let mut table_facts = facts.clone();
    table_facts.push(format!(" {d} {d} "));
    let mut t = vec![
        Target {
            path: "/proc/self/mountinfo",
            needles: table_facts,
        },
        Target {
            path: "/proc/self/mounts",
            needles: facts.clone(),
        },
        Target {
            path: "/proc/self/mountstats",
            needles: facts,
        },
        // The host's uptime at the start: a negative offset (the served
        // text says 0).
        Target {
            path: "/proc/self/timens_offsets",
            needles: (1..=9).map(|n| format!(" -{n}")).collect(),
        },
    ];
    let allowed = host("/proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .filter(|v| v != "0");
    if let (true, Some(list)) = (cpus, allowed) {
        t.push(Target {
            path: "/proc/self/status",
            needles: vec![format!("Cpus_allowed_list:\t{list}")],
        });
    }
    t.retain(|t| !t.needles.is_empty());
    t
}

/// How the racer opens: as any open, trapped and CONTINUEd by the open
/// handler; or marked as a fast read, which the filter passes.
#[derive(Clone, Copy, PartialEq)]
enum Opens {
    Trapped,
    Marked,
}

/// Races each target with `sup` options as `user`, with `bin`; with
/// `fenced`, every dodge must have been refused (EACCES).
fn race(
    targets: &[Target],
    sup: &[&str],
    user: Option<(u32, u32)>,
    bin: &std::path::Path,
    fenced: bool,
    opens: Opens,
) {
    for t in targets {
        let mut argv = vec![c_prog("procrace").display().to_string()];
        if opens == Opens::Marked {
            let mark = sandbox_syscalls::policy::FAST_READ_MARK;
            argv.extend(["--mark".to_string(), format!("{mark:#x}")]);
        }
        argv.extend([HOST_MARKER.into(), TRIES.into(), t.path.into()]);
        argv.extend(t.needles.iter().cloned());
        let mut run = Run::new(&argv).bin(bin).sup(&c_mounts()).sup(sup);
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
        if fenced {
            assert!(
                out.field("denied") > 0,
                "{}: no dodge refused: {}",
                t.path,
                out.stdout
            );
            assert_eq!(
                out.field("other"),
                0,
                "{}: a dodge read: {}",
                t.path,
                out.stdout
            );
        }
    }
}

/// Races every global target under `--memory 256m` (so meminfo and the
/// memory sized /proc/sys files are served rewritten) as `user`, with
/// `bin`.
fn race_all(user: Option<(u32, u32)>, bin: &std::path::Path) {
    let targets = targets();
    assert!(targets.len() >= 5, "too few targets on this host");
    race(
        &targets,
        &["--memory", "256m"],
        user,
        bin,
        false,
        Opens::Trapped,
    );
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

/// Races the per-process files, as root under `--cpus 1` (so `status`
/// is served cut to it) or as `tester` without; with `opens` marked as
/// fast reads, every open that meets the file is the kernel's own.
fn race_process_files(unprivileged: bool, opens: Opens) {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    if landlock_abi() < 1 {
        skip!("no Landlock: per-process files are not fenced");
    }
    let _ = guard();
    if !unprivileged {
        race(
            &process_targets(true),
            &["--cpus", "1"],
            None,
            &bin(),
            true,
            opens,
        );
        return;
    }
    match tester_bin() {
        Ok((uid, gid, bin)) => race(
            &process_targets(false),
            &[],
            Some((uid, gid)),
            &bin,
            true,
            opens,
        ),
        Err(e) => skip!("{e}"),
    }
}

#[test]
fn dodged_opens_of_per_process_files_are_refused() {
    race_process_files(false, Opens::Trapped);
}

/// A fast read is a native open: the fence alone keeps it off the
/// kernel's procfs, raced or not (docs/fast-reads.md).
#[test]
fn marked_opens_of_per_process_files_are_refused() {
    race_process_files(false, Opens::Marked);
}

#[test]
fn marked_opens_of_per_process_files_are_refused_unprivileged() {
    race_process_files(true, Opens::Marked);
}

#[test]
fn dodged_opens_of_per_process_files_are_refused_unprivileged() {
    race_process_files(true, Opens::Trapped);
}

/// An open for reading and writing passes the filter: no race is needed
/// to have the kernel open a procfs file. The fence refuses it where
/// the kernel would have given the host's facts (natively the guest's
/// own `timens_offsets` and `autogroup` open read-write), while /proc/sys
/// stays the guest's own to read, read-only (EROFS, as docker's
/// `readonlyPaths`: `sandbox/src/launch/proc_mount.rs`), and a plain read is served.
#[test]
fn read_write_opens_of_proc_are_refused() {
    if landlock_abi() < 1 {
        skip!("no Landlock: per-process files are not fenced");
    }
    let script = r#"
import os
for p in ['/proc/self/timens_offsets', '/proc/self/autogroup', '/proc/self/mountinfo', '/proc/self/status']:
    try:
        os.close(os.open(p, os.O_RDWR)); print(p, 'opened')
    except OSError as e:
        print(p, e.strerror)
print(open('/proc/self/timens_offsets').read().split())
try:
    os.open('/proc/sys/kernel/hostname', os.O_RDWR); print('opened')
except OSError as e:
    print(e.strerror)
fd = os.open('/proc/sys/kernel/hostname', os.O_RDONLY); print(os.read(fd, 64)); os.close(fd)
"#;
    // With one id: root's guest is then the sysctls' owner, whose write
    // open the read-only mount refuses (under root's default range a
    // sysctl's mode refuses its root first: EACCES, as the fence does).
    let out = Run::new(&["python3", "-c", script])
        .sup(&["--hostname", "fenced", "--userns-range", "none"])
        .supervised();
    let want = "/proc/self/timens_offsets Permission denied\n\
/proc/self/autogroup Permission denied\n\
/proc/self/mountinfo Permission denied\n\
/proc/self/status Permission denied\n\
['monotonic', '0', '0', 'boottime', '0', '0']\n\
Read-only file system\n\
b'fenced\\n'\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
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
