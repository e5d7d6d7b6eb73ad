//! What the guest can learn or touch through /proc: only the sandbox's own
//! processes are listed, no host environment variable is readable in any
//! process's environ (the sandbox's init included), and pid 1 cannot be
//! written to through /proc/1/mem (a guest taking over init would hold
//! init's channel to the supervisor).

mod common;
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

/// The mount tables show the sandbox's mounts at sandbox paths and
/// nothing of the host: not the host directories the `--ro`/`--rw`
/// sources come from, not the layer's internals, not the
/// host's memory size (devtmpfs's size), not the host's disk.
#[test]
fn mount_tables_hide_the_host() {
    let t = Tree::new();
    let src = t.dir("host-only-dirname");
    let ro = t.file("ro-host-file", "x");
    let script = "cat /proc/self/mountinfo /proc/self/mounts /proc/mounts /proc/1/mountinfo \
                  /proc/thread-self/mountinfo; grep -c ' /out ' /proc/self/mountinfo";
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
    assert!(text.trim_end().ends_with('1'), "/out listed once:\n{text}");
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
