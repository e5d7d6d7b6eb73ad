//! 200 runs of `supervisor run -- /bin/true` in a row leave nothing behind
//! on the host: the test process's fd count, the host's mount table
//! (/proc/self/mountinfo), its child processes, processes that carry the runs'
//! marker variable (supervisor helpers), and entries in /tmp and /dev/shm
//! are the same before and after.
//!
//! The test holds `crate::alone()` (tests/leftovers/main.rs), so no other
//! test of this binary opens fds or spawns children meanwhile. As root, the
//! runs' /tmp and /dev/shm are bind mounts of private dirs (see
//! `Run::private_tmp`), so other programs using the host's /tmp cannot
//! disturb the check; otherwise the host's /tmp is compared, and an entry
//! counts only if it outlives the grace period.

use crate::common;
use common::*;
use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RUNS: usize = 200;

#[derive(Debug, PartialEq, Clone)]
struct HostState {
    fds: Vec<String>,
    mount_lines: usize,
    children: Vec<i32>,
    marked: Vec<i32>,
    tmp: BTreeSet<String>,
}

fn state(marker: &str) -> HostState {
    let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            let target = std::fs::read_link(e.path())
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            format!("{} -> {}", e.file_name().to_string_lossy(), target)
        })
        .collect();
    fds.sort();
    // The read_dir fd itself shows as a dangling entry; drop it.
    let own = format!("/proc/{}/fd", std::process::id());
    fds.retain(|f| !f.ends_with(&own));
    let mount_lines = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .count();
    let me = std::process::id() as i32;
    let (mut children, mut marked) = (Vec::new(), Vec::new());
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // Field 4: the parent's pid.
            if procfs::StatLine::parse(&stat).and_then(|l| l.number::<i32>(4)) == Some(me) {
                children.push(pid);
            }
        }
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
                marked.push(pid);
            }
        }
    }
    let mut tmp: BTreeSet<String> = listing(std::path::Path::new("/tmp")).into_iter().collect();
    tmp.extend(
        listing(std::path::Path::new("/dev/shm"))
            .into_iter()
            .map(|n| format!("/dev/shm/{n}")),
    );
    HostState {
        fds,
        mount_lines,
        children,
        marked,
        tmp,
    }
}

#[test]
fn two_hundred_runs_leave_nothing_behind() {
    let _alone = crate::alone();
    if !have("/bin/true") {
        skip!("no /bin/true");
    }
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::UNIX_EPOCH
            .elapsed()
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let marker = format!("SBX_LEAK_MARKER={nonce}");
    let mut run = Run::new(&["/bin/true"]).env("SBX_LEAK_MARKER", &nonce);
    // As root, the runs see /tmp and /dev/shm through bind mounts of private
    // dirs, so their leftovers cannot be confused with other programs'.
    // Not when the build itself lives there (a checkout under /tmp): the
    // bind would hide the binary; the host's /tmp is then compared as is.
    let build_in_tmp = ["/tmp", "/dev/shm"]
        .iter()
        .any(|d| bin().starts_with(d) || Path::new(env!("CARGO_TARGET_TMPDIR")).starts_with(d));
    let private = (is_root() && !build_in_tmp).then(private_dirs);
    run.private_tmp = private.clone();
    if let Some(d) = &private {
        // Fixture self-check: a native write to /tmp lands in DIR/tmp.
        let mut probe = Run::sh("touch /tmp/fixture-probe", &[]);
        probe.private_tmp = Some(d.clone());
        probe.native().ok("private /tmp fixture");
        let landed = std::fs::remove_file(d.join("tmp/fixture-probe"));
        assert!(landed.is_ok(), "private /tmp fixture does not work");
    }
    // Warm-up: the first run may initialise things in this process (threads).
    run.supervised().ok("warm-up run");
    let before = state(&marker);
    let mut failures = Vec::new();
    for i in 0..RUNS {
        let out = run.supervised();
        if out.code != Some(0) {
            failures.push(format!("run {i}: {}", out.dump()));
        }
    }
    let first = failures.first().cloned().unwrap_or_default();
    assert!(
        failures.is_empty(),
        "{} of {RUNS} runs failed; first:\n{first}",
        failures.len()
    );
    // Anything still going away gets a short grace period (this is not a
    // timing assertion: a leak is whatever is still there afterwards).
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut after = state(&marker);
    while differs(&before, &after, private.is_some()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = state(&marker);
    }
    let new_tmp: Vec<PathBuf> = match &private {
        Some(d) => {
            let left = ["tmp", "shm"].iter().flat_map(|s| {
                listing(&d.join(s))
                    .into_iter()
                    .map(move |n| d.join(s).join(n))
            });
            let left: Vec<PathBuf> = left.collect();
            let _ = std::fs::remove_dir_all(d);
            left
        }
        None => after
            .tmp
            .difference(&before.tmp)
            .map(PathBuf::from)
            .collect(),
    };
    let mut bad = Vec::new();
    if after.fds != before.fds {
        bad.push(format!(
            "fds of the test process: {:?}\n  -> {:?}",
            before.fds, after.fds
        ));
    }
    if after.mount_lines != before.mount_lines {
        bad.push(format!(
            "host mountinfo lines: {} -> {}",
            before.mount_lines, after.mount_lines
        ));
    }
    if after.children != before.children {
        bad.push(format!(
            "child processes: {:?} -> {:?}",
            before.children, after.children
        ));
    }
    if !after.marked.is_empty() {
        bad.push(format!(
            "processes of the runs still alive: {:?}",
            after.marked
        ));
    }
    if !new_tmp.is_empty() {
        let info: Vec<String> = new_tmp
            .iter()
            .map(|p| {
                let m = std::fs::symlink_metadata(p).map(|m| (m.uid(), m.mode(), m.mtime()));
                format!("{} {:?}", p.display(), m.ok())
            })
            .collect();
        bad.push(format!(
            "left in /tmp or /dev/shm (uid, mode, mtime): {info:?}"
        ));
    }
    assert!(bad.is_empty(), "after {RUNS} runs:\n{}", bad.join("\n"));
}

/// DIR/tmp and DIR/shm (mode 1777) for `Run::private_tmp`.
fn private_dirs() -> PathBuf {
    let d =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("leaks-{}", std::process::id()));
    for sub in ["tmp", "shm"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        std::fs::set_permissions(d.join(sub), std::fs::Permissions::from_mode(0o1777)).unwrap();
    }
    d
}

fn differs(b: &HostState, a: &HostState, private_tmp: bool) -> bool {
    a.fds != b.fds
        || a.mount_lines != b.mount_lines
        || a.children != b.children
        || !a.marked.is_empty()
        || (!private_tmp && !a.tmp.is_subset(&b.tmp))
}
