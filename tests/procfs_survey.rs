//! The /proc and /sys survey: a guest walks all of /proc (its global
//! entries and /proc/self) and /sys, reads every file it can
//! (`procfs/survey.py`), and the test fails on any host-only fact in
//! what it read: the host's boot id, the test's host cgroup path, the
//! command line or pid of a process the test started outside, the host's
//! block devices, the host's uptime, boot time or load, its open-file,
//! inode and dentry counts and kernel taint, its interrupt, context
//! switch and fork counts in /proc/stat, a stat size that is not
//! what a read gives (a masked file's host size), and under
//! `--cpus`/`--memory`/`--pids` the host's CPU count, memory size or the
//! thread and file maxima the kernel sized from it. Run as root
//! and as the unprivileged user `tester`. The same survey run natively
//! must trip the checks (so they can fail).

mod common;
use common::*;

use std::process::{Child, Command, Stdio};

const PY: &str = "/usr/bin/python3";
const SURVEY: &str = include_str!("procfs/survey.py");

/// One record of the survey: its kind (F, DIR, L, or an error), path and content.
struct Rec {
    kind: String,
    path: String,
    body: String,
}

fn parse(out: &str) -> Vec<Rec> {
    let mut recs: Vec<Rec> = Vec::new();
    for line in out.split('\n') {
        if let Some(head) = line.strip_prefix("=== ") {
            let (kind, path) = head.split_once(' ').unwrap_or((head, ""));
            recs.push(Rec {
                kind: kind.to_owned(),
                path: path.to_owned(),
                body: String::new(),
            });
        } else if let Some(r) = recs.last_mut() {
            r.body.push_str(line);
            r.body.push('\n');
        }
    }
    recs
}

fn body<'a>(recs: &'a [Rec], path: &str) -> Option<&'a str> {
    recs.iter()
        .find(|r| r.kind == "F" && r.path == path)
        .map(|r| r.body.as_str())
}

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-')
        .filter(|t| !t.is_empty())
}

/// A process of the test's own, outside the sandbox, with a nonce on
/// its command line. Killed (by its pid) when dropped.
struct Outsider {
    child: Child,
    nonce: String,
}

impl Outsider {
    fn start() -> Outsider {
        let nonce = format!("sbx-outsider-{}", std::process::id());
        let child = Command::new(PY)
            .args(["-c", "import time; time.sleep(600)", &nonce])
            .stdin(Stdio::null())
            .spawn()
            .expect("start the outside process");
        Outsider { child, nonce }
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the host knows and the sandbox must not tell.
struct HostFacts {
    boot_id: String,
    cgroup_paths: Vec<String>,
    outsider_pid: String,
    outsider_nonce: String,
    uptime: f64,
    cpus: usize,
    memtotal_kb: String,
    block_devices: Vec<String>,
    hostname: String,
    /// First fields of fs/file-nr, fs/inode-nr, fs/dentry-state.
    file_nr: u64,
    inode_nr: u64,
    dentries: u64,
    /// kernel/threads-max, fs/file-max and the epoll and inotify watch
    /// maxima: the kernel sizes them from its memory.
    memory_sized: Vec<(&'static str, String)>,
    /// The number of the test's own autogroup (a host-wide counter of
    /// sessions), if autogroups are on.
    autogroup: Option<u64>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn host_facts(outsider: &Outsider) -> HostFacts {
    let cgroup_paths = read("/proc/self/cgroup")
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .filter(|p| p.len() > 1)
        .map(str::to_owned)
        .collect();
    let block_devices = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| !n.starts_with("loop") && !n.starts_with("ram"))
                .collect()
        })
        .unwrap_or_default();
    let memtotal_kb = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .map(|v| v.trim().trim_end_matches(" kB").trim().to_owned())
        .unwrap_or_default();
    HostFacts {
        boot_id: read("/proc/sys/kernel/random/boot_id").trim().to_owned(),
        cgroup_paths,
        outsider_pid: outsider.child.id().to_string(),
        outsider_nonce: outsider.nonce.clone(),
        uptime: first_number(&read("/proc/uptime")).unwrap_or(0.0),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memtotal_kb,
        block_devices,
        hostname: read("/proc/sys/kernel/hostname").trim().to_owned(),
        file_nr: first_u64(&read("/proc/sys/fs/file-nr")),
        inode_nr: first_u64(&read("/proc/sys/fs/inode-nr")),
        dentries: first_u64(&read("/proc/sys/fs/dentry-state")),
        memory_sized: MEMORY_SIZED
            .iter()
            .map(|p| (*p, read(p).trim().to_owned()))
            .collect(),
        autogroup: autogroup_id(&read("/proc/self/autogroup")),
    }
}

const MEMORY_SIZED: &[&str] = &[
    "/proc/sys/kernel/threads-max",
    "/proc/sys/fs/file-max",
    "/proc/sys/fs/epoll/max_user_watches",
    "/proc/sys/fs/inotify/max_user_watches",
    "/proc/sys/vm/min_free_kbytes",
    "/proc/sys/vm/user_reserve_kbytes",
];

/// N of an `autogroup` text (`/autogroup-N nice 0`).
fn autogroup_id(text: &str) -> Option<u64> {
    text.strip_prefix("/autogroup-")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn first_u64(text: &str) -> u64 {
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn first_number(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The limits a survey ran under.
#[derive(Clone, Copy)]
struct Limits {
    cpus: Option<usize>,
    memory: bool,
    pids: Option<u64>,
}

/// Every host-only fact found in the survey, one line each.
fn leaks(recs: &[Rec], host: &HostFacts, limits: Limits) -> Vec<String> {
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
fn time_leaks(recs: &[Rec], host: &HostFacts) -> Vec<String> {
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
fn load_leaks(recs: &[Rec]) -> Vec<String> {
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
fn stat_leaks(recs: &[Rec]) -> Vec<String> {
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
fn process_leaks(recs: &[Rec], host: &HostFacts) -> Vec<String> {
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
    if let Some(n) = group.filter(|n| *n > 64 || Some(*n) == host.autogroup) {
        found.push(format!(
            "/proc/self/autogroup: group {n}, the host's counter (the test's is {:?})",
            host.autogroup
        ));
    }
    found
}

/// A stat size that is not what a read gives: procfs's size of a file
/// served otherwise (a masked file's host size, such as config.gz's).
fn size_leaks(recs: &[Rec]) -> Vec<String> {
    recs.iter()
        .filter(|r| r.kind == "Z")
        .map(|r| format!("{}: stat size and bytes read {}", r.path, r.body.trim()))
        .collect()
}

/// /proc/sys: the host's counts of open files, inodes and dentries
/// (a sandbox of two processes holds a few dozen of each, the host
/// hundreds of thousands), its kernel taint, and under limits the
/// thread and file maxima the kernel sized from the host's memory.
fn sys_leaks(recs: &[Rec], host: &HostFacts, limits: Limits) -> Vec<String> {
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
fn cpu_leaks(recs: &[Rec], n: usize) -> Vec<String> {
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

fn survey(run: Run, supervised: bool) -> (Out, Vec<Rec>) {
    let out = if supervised {
        run.supervised()
    } else {
        run.native()
    };
    let recs = parse(&out.stdout);
    (out, recs)
}

fn survey_run(sup: &[&str]) -> Run {
    Run::new(&[PY, "-c", SURVEY, "/proc", "/proc/self", "/sys"]).sup(sup)
}

/// The survey read a real /proc: the checks below are not vacuous.
fn assert_read_enough(recs: &[Rec], out: &Out) {
    let files = recs.iter().filter(|r| r.kind == "F").count();
    assert!(
        files > 50 && body(recs, "/proc/self/status").is_some(),
        "the survey read only {files} files:\n{}",
        out.stderr
    );
}

fn check_supervised(run: Run, limits: Limits, what: &str) {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let outsider = Outsider::start();
    let host = host_facts(&outsider);
    let (out, recs) = survey(run, true);
    assert_eq!(out.code, Some(0), "{what}: {}", out.dump());
    assert_read_enough(&recs, &out);
    let found = leaks(&recs, &host, limits);
    assert!(
        found.is_empty(),
        "{what}: {} host facts in the sandbox's /proc and /sys:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn native_survey_finds_the_host() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let outsider = Outsider::start();
    let host = host_facts(&outsider);
    let (out, recs) = survey(survey_run(&[]), false);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_read_enough(&recs, &out);
    let found = leaks(
        &recs,
        &host,
        Limits {
            cpus: None,
            memory: false,
            pids: None,
        },
    );
    let musts = [
        "boot id",
        "outside process",
        "file-nr",
        "dentry-state",
        "intr",
        "ctxt",
        "processes",
    ];
    let autogroup = host.autogroup.map(|_| "autogroup");
    for must in musts.into_iter().chain(autogroup) {
        assert!(
            found.iter().any(|f| f.contains(must)),
            "natively the survey must see the host's {must}: {found:#?}"
        );
    }
}

/// Natively in a time namespace whose clocks are moved (as the
/// sandbox's are), the survey sees the offsets in timens_offsets.
#[test]
fn native_survey_in_a_time_namespace_finds_the_offsets() {
    if !have(PY) || !have("unshare") || !nix::unistd::geteuid().is_root() {
        skip!("needs {PY}, unshare and root");
    }
    let outsider = Outsider::start();
    let host = host_facts(&outsider);
    let moved = [
        "unshare",
        "-T",
        "--fork",
        "--boottime",
        "1000",
        "--monotonic",
        "1000",
        "--",
    ];
    let argv: Vec<&str> = moved
        .into_iter()
        .chain([PY, "-c", SURVEY, "/proc/self"])
        .collect();
    let out = Run::new(&argv).native();
    if out.code != Some(0) {
        skip!("no time namespaces here: {}", out.dump());
    }
    let found = process_leaks(&parse(&out.stdout), &host);
    assert!(
        found.iter().any(|f| f.contains("timens_offsets")),
        "natively in a moved time namespace: {found:#?}\n{}",
        out.dump()
    );
}

/// The served timens_offsets reads byte for byte as the kernel's outside
/// a time namespace, and autogroup in the kernel's form with a small
/// number, shared by a process and its child (one session).
#[test]
fn timens_offsets_and_autogroup_read_as_the_kernels() {
    let script = "cat /proc/self/timens_offsets; cat /proc/self/autogroup; cat /proc/$$/autogroup";
    let run = Run::sh(script, &[]);
    let native = run.native().ok("native");
    let out = run.supervised().ok("supervised");
    let offsets = |o: &Out| o.stdout.lines().take(2).collect::<Vec<_>>().join("\n");
    assert_eq!(offsets(&out), offsets(&native), "{}", out.dump());
    let groups: Vec<&str> = out.stdout.lines().skip(2).collect();
    if native.stdout.lines().nth(2).is_none() {
        assert!(groups.is_empty(), "no autogroups natively: {}", out.dump());
        return;
    }
    let shape = |l: &str| l.starts_with("/autogroup-") && l.ends_with(" nice 0");
    let ids: Vec<Option<u64>> = groups.iter().map(|l| autogroup_id(l)).collect();
    assert!(
        groups.len() == 2
            && groups.iter().all(|l| shape(l))
            && ids[0] == ids[1]
            && ids[0].is_some_and(|n| n <= 64),
        "{}",
        out.dump()
    );
}

#[test]
fn survey_finds_nothing_of_the_host() {
    let limits = Limits {
        cpus: None,
        memory: false,
        pids: None,
    };
    check_supervised(survey_run(&[]), limits, "no limits");
}

#[test]
fn survey_finds_nothing_of_the_host_under_limits() {
    let limits = Limits {
        cpus: Some(1),
        memory: true,
        pids: Some(64),
    };
    let run = survey_run(&["--cpus", "1", "--memory", "256m", "--pids", "64"]);
    check_supervised(run, limits, "--cpus 1 --memory 256m --pids 64");
}

#[test]
fn survey_as_tester_finds_nothing_of_the_host() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let run = survey_run(&["--cpus", "1"]).user(uid, gid).bin(bin);
    let limits = Limits {
        cpus: Some(1),
        memory: false,
        pids: None,
    };
    check_supervised(run, limits, "as tester, --cpus 1");
}
