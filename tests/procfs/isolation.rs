//! What the guest can learn or touch through /proc: only the sandbox's own
//! processes are listed, no host environment variable is readable in any
//! process's environ (the sandbox's init included), and pid 1 cannot be
//! written to through /proc/1/mem (a guest taking over init would hold
//! init's channel to the supervisor). The global files are the
//! sandbox's: its clocks, uptime and btime, load and task counts, CPUs
//! under --cpus, a boot id of its own; host-only files read as empty.
//! (`procfs_survey.rs` walks all of /proc and /sys for host facts.)

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

#[test]
fn only_sandbox_processes_are_visible() {
    let out = Run::sh(
        "ls /proc | grep -cE '^[0-9]+$'; cat /proc/[0-9]*/comm | sort -u",
        &[],
    )
    .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let n: usize = out
        .stdout
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(999);
    assert!(
        n <= 5,
        "{n} pids visible in the sandbox's /proc:\n{}",
        out.stdout
    );
    for host_proc in ["systemd", "cargo", "rustc", "bash_tool", "binary_backend"] {
        assert!(
            !out.stdout.contains(host_proc),
            "host process {host_proc} visible:\n{}",
            out.stdout
        );
    }
}

#[test]
fn host_environment_is_not_in_any_proc_environ() {
    let nonce = format!("sbx-host-env-{}", std::process::id());
    let out = Run::sh(
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SBX_HOST_ONLY; true",
        &[],
    )
    .env("SBX_HOST_ONLY", &nonce)
    .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout.trim(),
        "0",
        "a host-only variable is readable in the sandbox's /proc:\n{}",
        out.dump()
    );
    let out = Run::sh("tr '\\0' '\\n' < /proc/1/environ", &[])
        .env("SBX_HOST_ONLY", &nonce)
        .supervised();
    assert!(
        !out.stdout.contains(&nonce),
        "/proc/1/environ shows the host environment:\n{}",
        out.dump()
    );
}

#[test]
fn init_memory_is_not_writable() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let code = "import os\n\
                for p in ('/proc/1/mem', '/proc/1/environ'):\n\
                \x20   try:\n\
                \x20       os.close(os.open(p, os.O_RDWR if p.endswith('mem') else os.O_RDONLY)); print(p, 'opened')\n\
                \x20   except OSError as e:\n\
                \x20       print(p, 'denied')\n";
    let out = Run::new(&[PY, "-c", code]).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    // In the sandbox pid 1 is the supervisor's init, not a guest process.
    assert!(
        out.stdout.contains("/proc/1/mem denied"),
        "the guest can write pid 1's memory (take over init):\n{}",
        out.dump()
    );
}

/// Init's descriptors and memory are closed to the guest's main process:
/// it holds no seccomp listener, cannot list /proc/1/fd, and cannot read
/// /proc/1/environ, as root and as an unprivileged invoker.
#[test]
fn inits_descriptors_are_closed_to_the_guest() {
    let script = "ls /proc/1/fd >/dev/null 2>&1 && echo init-fds-listed; \
                  ls -l /proc/self/fd | grep -q seccomp && echo holds-listener; \
                  cat /proc/1/environ >/dev/null 2>&1 && echo init-environ-read; \
                  echo checked";
    let mut runs = vec![("root", Run::sh(script, &[]))];
    match tester_bin() {
        Ok((uid, gid, bin)) => runs.push(("tester", Run::sh(script, &[]).bin(bin).user(uid, gid))),
        Err(why) => eprintln!("not as tester: {why}"),
    }
    for (who, run) in runs {
        let out = run.supervised();
        assert_eq!(out.code, Some(0), "as {who}: {}", out.dump());
        assert_eq!(out.stdout.trim(), "checked", "as {who}: {}", out.dump());
    }
}

/// The mount tables (mountinfo, mounts, mountstats) show the sandbox's mounts at sandbox paths and
/// nothing of the host: not the host directories the `--ro`/`--rw`
/// sources come from, not the layer's internals, not the
/// host's memory size (devtmpfs's size), not the host's disk.
#[test]
fn mount_tables_hide_the_host() {
    let t = Tree::new();
    let src = t.dir("host-only-dirname");
    let ro = t.file("ro-host-file", "x");
    let script = "cat /proc/self/mountinfo /proc/self/mounts /proc/mounts /proc/1/mountinfo \
                  /proc/thread-self/mountinfo /proc/self/mountstats /proc/1/mountstats; \
                  grep -c ' /out ' /proc/self/mountinfo; grep -c ' on /out ' /proc/self/mountstats";
    let out = Run::sh(script, &[])
        .sup(&[
            "--rw".to_string(),
            format!("{}:/out", src.display()),
            "--ro".to_string(),
            format!("{}:/r", ro.display()),
        ])
        .supervised()
        .ok("mount tables");
    let text = &out.stdout;
    assert!(
        text.trim_end().ends_with("1\n1"),
        "/out listed once in mountinfo and mountstats:\n{text}"
    );
    // The covers of global /proc files are the sandbox's machinery.
    assert!(!text.contains(" /proc/stat "), "a cover listed:\n{text}");
    for host in [
        "host-only-dirname",
        "ro-host-file",
        "oldroot",
        "upperdir",
        "/newroot",
        "/dev/vd",
        "/dev/sd",
        "/dev/nvme",
    ] {
        assert!(
            !text.contains(host),
            "{host:?} in the mount tables:\n{text}"
        );
    }
    // (The host cwd is bound at its own path by design: it is the
    // guest's starting directory, so that path is no secret.)
    assert!(
        !text.contains(&t.path().display().to_string()),
        "the test tree's host path in the mount tables:\n{text}"
    );
    // The host's devtmpfs options tell the host's memory size.
    let host = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let devtmpfs = host.lines().find(|l| l.contains(" - devtmpfs "));
    for opt in devtmpfs
        .map(|l| l.rsplit(' ').next().unwrap_or(""))
        .unwrap_or("")
        .split(',')
    {
        if opt.starts_with("size=") || opt.starts_with("nr_inodes=") {
            assert!(
                !text.contains(opt),
                "host devtmpfs {opt} in the mount tables:\n{text}"
            );
        }
    }
}

/// Neither the host kernel's command line (its boot image, devices and
/// the host's init) nor the host's cgroup paths show: /proc/cmdline is
/// empty and /proc/*/cgroup are relative to the sandbox's own cgroup
/// namespace, with limits (a cgroup of ours) and without.
#[test]
fn host_kernel_cmdline_and_cgroup_paths_are_hidden() {
    let script = "od -An -c /proc/cmdline; od -An -c /proc/1/../cmdline; \
                  cut -d: -f3 /proc/self/cgroup /proc/1/cgroup | sort -u";
    for limits in [&[][..], &["--memory", "256m", "--pids", "64"][..]] {
        let out = Run::sh(script, &[])
            .sup(limits)
            .supervised()
            .ok("proc files");
        let lines: Vec<&str> = out.stdout.lines().map(str::trim).collect();
        assert_eq!(lines, ["\\n", "\\n", "/"], "{limits:?}: {}", out.dump());
    }
}

fn host_uptime() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The guest's clocks start with the sandbox (its time namespace):
/// /proc/uptime, CLOCK_BOOTTIME and CLOCK_MONOTONIC agree with each other
/// and with /proc/stat's btime, and none is the host's.
#[test]
fn uptime_and_clocks_start_with_the_sandbox() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    if host_uptime() < 600.0 {
        skip!("the host has been up for less than ten minutes");
    }
    let code = "import ctypes, time\n\
                info = (ctypes.c_long * 14)()\n\
                assert ctypes.CDLL(None).sysinfo(info) == 0\n\
                up, idle = map(float, open('/proc/uptime').read().split())\n\
                btime = [int(l.split()[1]) for l in open('/proc/stat') if l.startswith('btime ')][0]\n\
                boot = time.clock_gettime(time.CLOCK_BOOTTIME)\n\
                mono = time.clock_gettime(time.CLOCK_MONOTONIC)\n\
                print(up, idle, boot, mono, btime, time.time(), info[0], info[1])\n";
    for limits in [&[][..], &["--memory", "256m"][..]] {
        let out = Run::new(&[PY, "-c", code])
            .sup(limits)
            .supervised()
            .ok("clocks");
        check_clocks(&out);
    }
}

fn check_clocks(out: &Out) {
    let v: Vec<f64> = out
        .stdout
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [up, idle, boot, mono, btime, now, sys_up, load] = v[..] else {
        panic!("{}", out.dump());
    };
    assert!((sys_up - up).abs() < 5.0, "sysinfo uptime {sys_up} vs {up}");
    assert_eq!(load, 0.0, "sysinfo's load is the host's");
    let host = host_uptime();
    assert!(up < host - 300.0, "uptime {up} is the host's ({host})");
    assert!(
        (boot - up).abs() < 5.0,
        "CLOCK_BOOTTIME {boot} vs uptime {up}"
    );
    assert!(
        mono <= boot + 1.0,
        "CLOCK_MONOTONIC {mono} beyond CLOCK_BOOTTIME {boot}"
    );
    assert!(idle <= up * 64.0, "idle {idle} is the host's");
    assert!(
        (btime + up - now).abs() <= 3.0,
        "btime {btime} + uptime {up} is not now {now}"
    );
}

/// Reads of /proc/uptime back to back, by fresh opens and by rewinds (as
/// `ps` and `top` make them): each in the kernel's format, its uptime the
/// reader's CLOCK_BOOTTIME between its two clock reads with the
/// hundredths cut (so a text made for an earlier hundredth is never
/// served again), and neither figure ever going back; as natively.
#[test]
fn uptime_read_back_to_back_keeps_to_the_clock() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let code = r"import re, time
form = re.compile(r'\d+\.\d\d \d+\.\d\d\n\Z')
kept = open('/proc/uptime')
last = [0, 0]
for i in range(400):
    before = time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 10**7
    if i % 2:
        kept.seek(0); text = kept.read()
    else:
        text = open('/proc/uptime').read()
    after = time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 10**7
    assert form.match(text), repr(text)
    up, idle = (int(w.replace('.', '')) for w in text.split())
    assert before <= up <= after, (before, text, after)
    assert up >= last[0] and idle >= last[1], (last, text)
    last = [up, idle]
print('uptime kept to the clock')
";
    let native = Run::new(&[PY, "-c", code]).native().ok("native");
    let out = Run::new(&[PY, "-c", code]).supervised().ok("uptime");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// /proc/loadavg and /proc/stat count the sandbox's tasks and, under
/// --cpus, only its CPUs; natively they count the host's.
#[test]
fn loadavg_and_stat_count_the_sandbox() {
    let script = "cat /proc/loadavg; grep -c '^cpu[0-9]' /proc/stat; \
                  grep -E '^(processes|procs_running)' /proc/stat";
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = Run::sh(script, &[])
        .sup(&["--cpus", "1"])
        .supervised()
        .ok("loadavg");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let load: Vec<&str> = lines.first().map_or(vec![], |l| l.split(' ').collect());
    assert_eq!(
        load.get(..3),
        Some(&["0.00", "0.00", "0.00"][..]),
        "{}",
        out.dump()
    );
    let (running, total) = load
        .get(3)
        .and_then(|rt| rt.split_once('/'))
        .expect("R/T field");
    let total: u32 = total.parse().unwrap_or(999);
    // sh, cat and init: a handful, never the host's hundreds.
    assert!((2..=8).contains(&total), "{}", out.dump());
    assert!(running.parse::<u32>().unwrap_or(0) >= 1, "{}", out.dump());
    assert_eq!(
        lines.get(1),
        Some(&"1"),
        "one CPU under --cpus 1: {}",
        out.dump()
    );
    let processes: u32 = lines
        .get(2)
        .and_then(|l| l.strip_prefix("processes "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((2..=16).contains(&processes), "{}", out.dump());
    let native = Run::sh(script, &[]).native().ok("native");
    let native_cpus = native.stdout.lines().nth(1).unwrap_or("");
    assert_eq!(native_cpus, host_cpus.to_string(), "{}", native.dump());
}

/// Under --cpus, a process's Cpus_allowed in /proc/<pid>/status agrees
/// with sched_getaffinity, nproc and psutil; without it, with the host's.
#[test]
fn cpus_allowed_agrees_with_affinity() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let code = "import os\n\
                st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status') if ':' in l}\n\
                tst = [l.split()[1] for l in open('/proc/self/task/%d/status' % os.getpid()) if l.startswith('Cpus_allowed_list')]\n\
                try:\n\
                \x20   import psutil; ps = psutil.Process().cpu_affinity()\n\
                except ImportError:\n\
                \x20   ps = sorted(os.sched_getaffinity(0))\n\
                print(st['Cpus_allowed'], st['Cpus_allowed_list'], tst[0], sorted(os.sched_getaffinity(0)), ps, os.popen('nproc').read().strip())\n";
    let native = Run::new(&[PY, "-c", code]).native().ok("native");
    let unlimited = Run::new(&[PY, "-c", code]).supervised().ok("no limits");
    assert_eq!(unlimited.stdout, native.stdout, "{}", unlimited.dump());
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        skip!("one CPU on this host");
    }
    let out = Run::new(&[PY, "-c", code])
        .sup(&["--cpus", "1"])
        .supervised()
        .ok("--cpus 1");
    let words: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(words.get(1..3), Some(&["0", "0"][..]), "{}", out.dump());
    assert!(
        out.stdout.contains(" [0] [0] 1"),
        "affinity, psutil and nproc say one CPU: {}",
        out.dump()
    );
    let mask = words.first().copied().unwrap_or("");
    assert_eq!(mask.trim_start_matches(['0', ',']), "1", "{}", out.dump());
}

/// Host-wide files that tell of the host's kernel, devices, memory and
/// keys read as empty; the sandbox has a boot id of its own, the same
/// for every read in a run.
#[test]
fn host_files_are_masked_and_boot_id_is_the_sandboxs() {
    let masked = [
        "/proc/keys",
        "/proc/timer_list",
        "/proc/kallsyms",
        "/proc/interrupts",
        "/proc/partitions",
        "/proc/diskstats",
        "/proc/zoneinfo",
    ];
    let present: Vec<&str> = masked
        .into_iter()
        .filter(|p| std::path::Path::new(p).exists())
        .collect();
    let script = format!(
        "cat {} | wc -c; find /proc/fs /proc/irq -mindepth 1 | wc -l; \
         cat /proc/sys/kernel/random/boot_id /proc/sys/kernel/random/boot_id",
        present.join(" ")
    );
    let out = Run::sh(&script, &[]).supervised();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"0"),
        "masked files not empty: {}",
        out.dump()
    );
    assert_eq!(lines.get(1).map(|l| l.trim()), Some("0"), "{}", out.dump());
    let host_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let (a, b) = (
        lines.get(2).copied().unwrap_or(""),
        lines.get(3).copied().unwrap_or(""),
    );
    assert_eq!(a.len(), 36, "a UUID: {}", out.dump());
    assert_eq!(a, b, "one boot id per run: {}", out.dump());
    assert_ne!(a, host_id.trim(), "the host's boot id");
    let native = Run::sh(&format!("cat {} | wc -c", present.join(" ")), &[])
        .native()
        .ok("native");
    assert_ne!(native.stdout.trim(), "0", "natively they are not empty");
}
