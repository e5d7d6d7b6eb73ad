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

use crate::common;
use common::*;

use std::process::{Child, Command, Stdio};

const PY: &str = "/usr/bin/python3";
const SURVEY: &str = include_str!("survey.py");

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

mod checks;
use checks::*;

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
    // (Unless the host's counter is still 1: see `process_leaks`.)
    let autogroup = host.autogroup.filter(|&h| h > 1).map(|_| "autogroup");
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
