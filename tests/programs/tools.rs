//! Everyday tools that read /proc and the file system to size or describe
//! themselves behave inside as on a machine of the sandbox's own (issue 3,
//! "Programs that must behave as on a normal machine"): `ps aux` and
//! `top -b -n1` list only the sandbox's processes, psutil reports the
//! limits, `pip list` and a venv work, `ls -la /proc/self/fd` shows the
//! guest's own descriptors, and inotify sees changes to a sandbox file.
//! Each answer is compared with the same program run natively where the
//! two should agree.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

fn python_has(module: &str) -> bool {
    Run::new(&[PY, "-c", &format!("import {module}")])
        .native()
        .code
        == Some(0)
}

/// The PIDs column of `ps`-style output (first numeric field per line).
fn pids_in(listing: &str, column: usize) -> Vec<u32> {
    listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(column)?.parse().ok())
        .collect()
}

#[test]
fn ps_aux_lists_only_the_sandbox() {
    if !have("ps") {
        skip!("no ps (procps)");
    }
    let out = Run::sh("ps aux", &[]).supervised().ok("ps aux");
    let pids = pids_in(&out.stdout, 1);
    // init, sh (unless it exec'd ps) and ps.
    assert!(
        (2..=3).contains(&pids.len()),
        "expected init, sh and ps only:\n{}",
        out.stdout
    );
    assert!(
        pids.iter().all(|&p| p <= 10),
        "host pids visible:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("ps aux"), "{}", out.stdout);
    // Same columns (their widths follow pid_max, which differs inside).
    let header = Run::sh("ps aux | head -1", &[]).native().ok("native ps");
    let fields = |s: &str| {
        s.lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(fields(&out.stdout), fields(&header.stdout));
}

#[test]
fn top_counts_only_the_sandbox_tasks() {
    if !have("top") {
        skip!("no top (procps)");
    }
    let out = Run::sh("top -b -n1 | head -20", &[])
        .env("COLUMNS", "200")
        .supervised()
        .ok("top -b -n1");
    let tasks_line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Tasks:"))
        .unwrap_or_else(|| panic!("no Tasks line:\n{}", out.stdout));
    let total: u32 = tasks_line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(999);
    assert!(total <= 4, "top sees {total} tasks:\n{}", out.stdout);
    let listed = out
        .stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"))
        .skip(1)
        .count();
    assert_eq!(listed as u32, total, "{}", out.stdout);
}

#[test]
fn psutil_reports_the_limits_and_the_sandbox() {
    if !python_has("psutil") {
        skip!("python3-psutil not installed");
    }
    let script = "import os, psutil\n\
                  print(psutil.virtual_memory().total)\n\
                  print(psutil.cpu_count(), len(psutil.Process().cpu_affinity()))\n\
                  pids = psutil.pids()\n\
                  print(len(pids) <= 3, max(pids) < 10, os.getpid() in pids)\n\
                  print(psutil.Process().cmdline()[:2])\n\
                  print(psutil.Process(1).name() != '')\n";
    let out = Run::new(&[PY, "-c", script])
        .sup(&["--memory", "512m", "--cpus", "1"])
        .supervised()
        .ok("psutil");
    let want = format!(
        "{}\n1 1\nTrue True True\n['{PY}', '-c']\nTrue\n",
        512u64 << 20
    );
    assert_eq!(out.stdout, want, "{}", out.dump());
}

#[test]
fn pip_list_works_as_natively() {
    let probe = Run::new(&[PY, "-m", "pip", "--version"]).native();
    if probe.code != Some(0) {
        skip!("no pip for {PY}");
    }
    let cmd = [
        PY,
        "-m",
        "pip",
        "list",
        "--disable-pip-version-check",
        "--no-color",
    ];
    let native = Run::new(&cmd).native().ok("native pip list");
    let out = Run::new(&cmd).supervised().ok("pip list");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

#[test]
fn a_venv_is_created_and_used() {
    let probe = Run::new(&[PY, "-c", "import ensurepip, venv"]).native();
    if probe.code != Some(0) {
        skip!("python3-venv not installed");
    }
    let script = format!(
        "{PY} -m venv /tmp/v && /tmp/v/bin/python -c 'import sys; print(sys.prefix, sys.base_prefix)' \
         && /tmp/v/bin/python -m pip --version | cut -d' ' -f1"
    );
    let out = Run::sh(&script, &[]).supervised().ok("venv");
    assert_eq!(out.stdout, "/tmp/v /usr\npip\n", "{}", out.dump());
}

#[test]
fn proc_self_fd_lists_the_guests_own_descriptors() {
    // Descriptor numbers and what they are (targets differ: pipe inodes).
    // Natively the test harness leaks a few more descriptors into the
    // shell; the sandbox closes everything it was not given.
    let script = "exec 7</dev/null; ls -la /proc/self/fd | awk 'NR>3 {print $9, substr($11,1,5)}'";
    let want = "0 pipe:\n1 pipe:\n2 pipe:\n3 /proc\n7 /dev/\n";
    let native = Run::sh(script, &[]).native().ok("native ls");
    for line in want.lines() {
        assert!(
            native.stdout.lines().any(|l| l == line),
            "native: {}",
            native.stdout
        );
    }
    let out = Run::sh(script, &[]).supervised().ok("ls /proc/self/fd");
    assert_eq!(out.stdout, want, "{}", out.dump());
}

#[test]
fn inotify_sees_changes_to_a_sandbox_file() {
    // ctypes inotify: watch a file in /tmp, then modify, close and delete it.
    let script = "import ctypes, os, struct\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  path = f'/tmp/watched-{os.getpid()}'\n\
                  open(path, 'w').close()\n\
                  fd = libc.inotify_init1(0)\n\
                  assert fd >= 0\n\
                  IN_MODIFY, IN_CLOSE_WRITE, IN_DELETE_SELF = 0x2, 0x8, 0x400\n\
                  wd = libc.inotify_add_watch(fd, path.encode(), IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF)\n\
                  assert wd >= 0, ctypes.get_errno()\n\
                  with open(path, 'a') as f: f.write('x')\n\
                  os.unlink(path)\n\
                  seen = []\n\
                  while 'delete_self' not in seen:\n\
                  \x20   buf = os.read(fd, 4096)\n\
                  \x20   while buf:\n\
                  \x20       _, mask, _, n = struct.unpack('iIII', buf[:16])\n\
                  \x20       for bit, name in ((IN_MODIFY, 'modify'), (IN_CLOSE_WRITE, 'close_write'), (IN_DELETE_SELF, 'delete_self')):\n\
                  \x20           if mask & bit: seen.append(name)\n\
                  \x20       buf = buf[16 + n:]\n\
                  print(' '.join(seen))\n";
    let native = Run::new(&[PY, "-c", script]).native().ok("native inotify");
    let out = Run::new(&[PY, "-c", script]).supervised().ok("inotify");
    assert_eq!(out.stdout, "modify close_write delete_self\n");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}
