//! A container sees its own limits: `linux.resources` (memory 64 MiB,
//! one CPU of quota, 50 pids) is what /proc/meminfo, `nproc` and
//! /proc/sys/kernel/threads-max tell the guest (and the rest of meminfo
//! its cgroup's memory.stat) — the same answers as
//! `supervisor run --memory 64m --cpus 1 --pids 50` — and an `update` of
//! the memory limit shows in the next read of /proc/meminfo, one of the
//! CPUs and pids in `nproc`, `nproc --all`, /sys/devices/system/cpu,
//! Python's `os.cpu_count()`, /proc/cpuinfo and threads-max, and one
//! that adds limits a container was created without is kept by its
//! cgroup and shown to it too. Part of the `oci` test binary's `cli` module
//! (`tests/oci/cli.rs` owns the bundle and helpers).

use super::common::Run;
use super::*;

/// What the guest reads of its limits, one line each (Buffers: the
/// cgroup's memory.stat has none, so 0 where meminfo is the cgroup's).
const SCRIPT: &str = "grep MemTotal /proc/meminfo; nproc; cat /proc/sys/kernel/threads-max; \
                      grep Buffers /proc/meminfo";

/// Links the applets the script needs beyond the bundle's.
fn link_applets(rootfs: &Path) {
    for a in ["grep", "nproc"] {
        let link = rootfs.join("bin").join(a);
        if !link.exists() {
            std::os::unix::fs::symlink("busybox", link).expect("applet link");
        }
    }
}

/// Binds `shared` (where the test says "go") at /data, writable.
fn mount_data(config: &mut serde_json::Value, shared: &Path) {
    let mount = json!({"destination": "/data",
        "type": "bind", "source": shared, "options": ["rbind", "rw"]});
    config["mounts"].as_array_mut().unwrap().push(mount);
}

/// Binds the host's /usr at /usr, read-only, with the rootfs's /lib and
/// /lib64 pointing into it (Debian's merged /usr): /usr/bin/python3 runs.
fn mount_host_usr(config: &mut serde_json::Value, rootfs: &Path) {
    for (link, to) in [("lib", "usr/lib"), ("lib64", "usr/lib64")] {
        let _ = std::os::unix::fs::symlink(to, rootfs.join(link));
    }
    fs::create_dir_all(rootfs.join("usr")).expect("mkdir rootfs/usr");
    let mount = json!({"destination": "/usr",
        "type": "bind", "source": "/usr", "options": ["rbind", "ro"]});
    config["mounts"].as_array_mut().unwrap().push(mount);
}

/// What the guest reads of its CPUs, one line each: `nproc`
/// (sched_getaffinity), `nproc --all` (the cpuN directories of /sys),
/// /sys's `online`, Python's `os.cpu_count()` (glibc reads `online`),
/// /proc/cpuinfo's processors.
const CPU_READS: &str = "nproc; nproc --all; cat /sys/devices/system/cpu/online; \
     /usr/bin/python3 -c 'import os; print(os.cpu_count())'; grep -c ^processor /proc/cpuinfo";

/// `script` with the reads, then (once the test writes /data/go) again.
fn before_and_after(reads: &str) -> String {
    format!("{reads}; while [ ! -e /data/go ]; do sleep 0.05; done; {reads}")
}

/// Waits until the container of bundle `dir` printed `lines` lines.
fn wait_for_lines(dir: &Path, lines: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = fs::read_to_string(dir.join("stdout")).unwrap_or_default();
        if out.lines().count() >= lines {
            return;
        }
        let err = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
        assert!(Instant::now() < deadline, "no first reading: {out} {err}");
        thread::sleep(Duration::from_millis(10));
    }
}

fn limited_bundle(dir: &Path, script: &str) {
    bundle(dir, |c| {
        set_args(c, script);
        c["linux"]["resources"] = json!({
            "memory": {"limit": 64 << 20},
            "cpu": {"quota": 100000, "period": 100000},
            "pids": {"limit": 50},
        });
    });
    link_applets(&dir.join("rootfs"));
}

#[test]
fn a_container_sees_its_resources_as_run_sees_its_flags() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    limited_bundle(t.path(), SCRIPT);
    let container = run_to_end(&rt, t.path(), "lim");
    let mut lines = container.lines();
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["MemTotal:", "65536", "kB"]),
        "{container}"
    );
    assert_eq!(lines.next(), Some("1"), "{container}");
    let threads: u64 = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    assert!(threads > 0 && threads < 1000, "threads-max: {container}");
    // The rest of meminfo from the container's cgroup (its memory.stat).
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["Buffers:", "0", "kB"]),
        "{container}"
    );
    // The same busybox under `supervisor run` with the flags: the same answers.
    let rootfs = t.join("rootfs").display().to_string();
    let run = Run::sh(SCRIPT, &[])
        .sup(&["--rootfs", &rootfs])
        .sup(&["--memory", "64m", "--cpus", "1", "--pids", "50"])
        .supervised()
        .ok("supervisor run with the flags");
    assert_eq!(run.stdout, container);
    // Natively, the host's figures (2 CPUs here, more memory): the view is the limit's.
    let native = Run::sh(SCRIPT, &[]).native();
    assert_ne!(
        native.stdout, container,
        "the host's figures are the limit's"
    );
}

#[test]
fn update_of_the_memory_limit_shows_in_meminfo() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    // Reads MemTotal, waits for the update (a file the test writes), reads it again.
    let script = "grep MemTotal /proc/meminfo; \
                  while [ ! -e /data/go ]; do sleep 0.05; done; grep MemTotal /proc/meminfo";
    let shared = t.join("shared");
    fs::create_dir(&shared).unwrap();
    bundle(t.path(), |c| {
        set_args(c, script);
        c["linux"]["resources"] = json!({"memory": {"limit": 64 << 20}});
        mount_data(c, &shared);
    });
    link_applets(&t.join("rootfs"));
    let pid = create(&rt, t.path(), "upd");
    assert!(rt.run(&["start", "upd"]).status.success());
    // The first read is done before the update.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !fs::read_to_string(t.join("stdout"))
        .unwrap_or_default()
        .contains("MemTotal")
    {
        assert!(Instant::now() < deadline, "no first MemTotal line");
        thread::sleep(Duration::from_millis(10));
    }
    let up = rt.update("upd", br#"{"memory": {"limit": 134217728}}"#);
    assert!(up.status.success(), "update: {up:?}");
    fs::write(shared.join("go"), "").unwrap();
    assert!(matches!(wait_exit(pid), WaitStatus::Exited(_, 0)));
    let out = fs::read_to_string(t.join("stdout")).unwrap();
    let totals: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(totals, ["65536", "131072"], "{out}");
    assert!(rt.run(&["delete", "upd"]).status.success());
}

#[test]
fn update_of_the_cpus_and_pids_shows_to_the_guest() {
    need_busybox!();
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if host_cpus < 2 {
        skip!("needs 2 CPUs to see a CPU limit go down");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let read = format!("{CPU_READS}; cat /proc/sys/kernel/threads-max");
    let shared = t.join("shared");
    fs::create_dir(&shared).unwrap();
    bundle(t.path(), |c| {
        set_args(c, &before_and_after(&read));
        c["linux"]["resources"] = json!({
            "cpu": {"quota": 200000, "period": 100000},
            "pids": {"limit": 50},
        });
        mount_data(c, &shared);
        mount_host_usr(c, &t.join("rootfs"));
    });
    link_applets(&t.join("rootfs"));
    let pid = create(&rt, t.path(), "updcpu");
    assert!(rt.run(&["start", "updcpu"]).status.success());
    wait_for_lines(t.path(), 6);
    let up = rt.update(
        "updcpu",
        br#"{"cpu": {"quota": 100000, "period": 100000}, "pids": {"limit": 8}}"#,
    );
    assert!(up.status.success(), "update: {up:?}");
    fs::write(shared.join("go"), "").unwrap();
    let out = finish(&rt, t.path(), "updcpu", pid);
    let seen: Vec<&str> = out.lines().collect();
    let before = ["2", "2", "0-1", "2", "2", "50"];
    let after = ["1", "1", "0", "1", "1", "8"];
    assert_eq!(seen, [before, after].concat(), "{out}");
}

#[test]
fn an_update_adds_limits_the_container_was_created_without() {
    need_busybox!();
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some(own_memory) = own_v1_dir("memory") else {
        skip!("needs the v1 memory hierarchy");
    };
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let read =
        format!("{CPU_READS}; cat /proc/sys/kernel/threads-max; grep MemTotal /proc/meminfo");
    let shared = t.join("shared");
    fs::create_dir(&shared).unwrap();
    bundle(t.path(), |c| {
        set_args(c, &before_and_after(&read));
        if let Some(linux) = c["linux"].as_object_mut() {
            linux.remove("resources");
        }
        mount_data(c, &shared);
        mount_host_usr(c, &t.join("rootfs"));
    });
    link_applets(&t.join("rootfs"));
    let pid = create(&rt, t.path(), "addlim");
    assert!(rt.run(&["start", "addlim"]).status.success());
    wait_for_lines(t.path(), 7);
    let up = rt.update(
        "addlim",
        br#"{"memory": {"limit": 67108864}, "cpu": {"quota": 100000, "period": 100000}, "pids": {"limit": 8}}"#,
    );
    assert!(up.status.success(), "update: {up:?}");
    // Kept: the kernel holds the container to them (its cgroup's files).
    let memory = own_memory.join("addlim/memory.limit_in_bytes");
    assert_eq!(
        fs::read_to_string(&memory).unwrap_or_default().trim(),
        "67108864"
    );
    if let Some(own_cpu) = own_v1_dir("cpu") {
        let quota = fs::read_to_string(own_cpu.join("addlim/cpu.cfs_quota_us")).unwrap_or_default();
        assert_eq!(quota.trim(), "100000");
    }
    if let Some(own_pids) = own_v1_dir("pids") {
        // The limit and the runtime's allowance (the anchor and init).
        let max = fs::read_to_string(own_pids.join("addlim/pids.max")).unwrap_or_default();
        assert_eq!(max.trim(), "10");
    }
    fs::write(shared.join("go"), "").unwrap();
    let out = finish(&rt, t.path(), "addlim", pid);
    let seen: Vec<&str> = out.lines().collect();
    let native = Run::sh(&read, &[]).native();
    let host: Vec<&str> = native.stdout.lines().collect();
    // Before: the host's figures (its CPUs, its threads-max, its memory).
    assert_eq!(seen.get(..5), host.get(..5), "{out}");
    let total = |l: Option<&&str>| {
        l.and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
    };
    assert_eq!(total(seen.get(6)), total(host.get(6)), "{out}");
    // After: the limits.
    let one = (host_cpus > 1).then_some(["1", "1", "0", "1", "1"]);
    if let Some(one) = one {
        assert_eq!(seen.get(7..12), Some(&one[..]), "{out}");
    }
    assert_eq!(seen.get(12), Some(&"8"), "{out}");
    assert_eq!(total(seen.get(13)).as_deref(), Some("65536"), "{out}");
}

/// `process.rlimits`: every one reaches the container's processes, soft
/// and hard apart, as the same shell sees them natively under `prlimit`
/// (busybox shows the core size in 512-byte blocks, the stack in KiB),
/// and the soft nofile limit holds: the ninth descriptor cannot be opened.
#[test]
fn the_containers_rlimits_are_the_configs() {
    need_busybox!();
    let script = "ulimit -Sn; ulimit -Hn; ulimit -Su; ulimit -Hu; ulimit -Sc; ulimit -Hc; \
                  ulimit -Ss; ulimit -Hs; \
                  (exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null \
                  8</dev/null 9</dev/null) 2>/dev/null || echo no-more-fds";
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, script);
        c["process"]["rlimits"] = json!([
            {"type": "RLIMIT_NOFILE", "soft": 8, "hard": 200},
            {"type": "RLIMIT_NPROC", "soft": 50, "hard": 60},
            {"type": "RLIMIT_CORE", "soft": 0, "hard": 1024},
            {"type": "RLIMIT_STACK", "soft": 8 << 20, "hard": 16 << 20},
        ]);
    });
    let out = run_to_end(&rt, t.path(), "rlimits");
    let native = std::process::Command::new("prlimit")
        .args(["--nofile=8:200", "--nproc=50:60", "--core=0:1024"])
        .args([
            "--stack=8388608:16777216",
            common::oci::BUSYBOX,
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("run prlimit (util-linux)");
    let native = String::from_utf8_lossy(&native.stdout);
    assert_eq!(native, "8\n200\n50\n60\n0\n2\n8192\n16384\nno-more-fds\n");
    assert_eq!(out, native);
}
