//! Kubernetes' path to `supervisor`: containerd's CRI plugin with a
//! runtime handler `supervisor` (the runc shim, `io.containerd.runc.v2`,
//! with `BinaryName` our binary: what a RuntimeClass with that handler
//! selects), driven over the CRI v1 gRPC API by the tests' own client
//! (`client.rs`) as the kubelet drives it: RunPodSandbox,
//! CreateContainer, StartContainer, ExecSync, ContainerStatus, the
//! container's log file, StopContainer, StopPodSandbox, RemovePodSandbox,
//! and ImageStatus; a pod's containers sharing its network, IPC and UTS
//! namespaces, and its pid namespace under `shareProcessNamespace`. Against Debian 12's containerd 1.6; without containerd
//! and ctr (or busybox-static) it skips with a printed reason.
//!
//! Each test starts its own containerd (`daemon.rs`), or, with
//! `SUPERVISOR_CRI_CONTAINERD` set to its socket, uses the machine's
//! installed one as it runs (the VM's: systemd cgroup driver, cgroup v2;
//! `tests/vm/cases.sh`), and imports the busybox image with `ctr -n k8s.io
//! image import` (images are local: nothing is pulled), which also serves
//! as the pods' sandbox ("pause") image. Under the test's own daemon every
//! pod's cgroup parent lies beneath this process's own cgroup; under the
//! installed one it is a systemd slice of the test's. At the end (also on
//! failure: a Drop guard) every pod is stopped and removed; the test's own
//! daemon is then stopped by pid and what it left mounted and the cgroup
//! parent are removed, and the installed daemon's slice is stopped.

mod client;
mod daemon;

use crate::common;
use crate::containerd::oci_archive;
use daemon::{CriDaemon, CNI_PLUGINS, CONTAINERD, CTR, HANDLER, IMAGE, PAUSE_CMD};

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::engine::{poll_until, EngineCgroups};
use common::oci::have_busybox;
use k8s_cri::v1::NamespaceMode;

/// A container's log file (the CRI format, one `TIME STREAM TAG TEXT`
/// line per line or part of one) as the text of each stream.
fn log_streams(path: &Path) -> HashMap<String, String> {
    let mut streams: HashMap<String, String> = HashMap::new();
    let text = fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        let mut f = line.splitn(4, ' ');
        let (Some(_time), Some(stream), Some(tag), text) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let out = streams.entry(stream.to_string()).or_default();
        out.push_str(text.unwrap_or(""));
        if tag == "F" {
            out.push('\n');
        }
    }
    streams
}

/// `script` run natively by busybox's sh: its stdout, stderr and exit code.
fn native(script: &str) -> (String, String, i32) {
    let out = Command::new("/bin/busybox")
        .args(["sh", "-c", script])
        .output()
        .expect("busybox sh");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A started daemon with the image imported, or why the test skips.
fn daemon(name: &str) -> Result<CriDaemon, String> {
    if !Path::new(CONTAINERD).exists() || !Path::new(CTR).exists() {
        return Err(format!(
            "no containerd ({CONTAINERD}, {CTR}; apt-get install containerd)"
        ));
    }
    if !have_busybox() {
        return Err("no busybox-static at /bin/busybox (apt-get install busybox-static)".into());
    }
    if !common::is_root() {
        return Err("containerd needs root".into());
    }
    // The daemon runs in a network namespace of its own (`daemon.rs`).
    for (tool, package) in [("unshare", "util-linux"), ("ip", "iproute2")] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Err(format!("no {tool} (apt-get install {package})"));
        }
    }
    let mut d = CriDaemon::start(name).unwrap_or_else(|e| panic!("{e}"));
    let archive: PathBuf = oci_archive(d.dir.path(), IMAGE, PAUSE_CMD);
    d.ctr(&["image", "import", &archive.display().to_string()]);
    let image = d.cri().image_id(IMAGE).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        image.is_some_and(|id| id.starts_with("sha256:")),
        "the CRI does not see the imported image"
    );
    Ok(d)
}

/// Stops and removes the pod; nothing of it may be left: no pod, no
/// cgroup beneath the parent that was not there `before`, no process,
/// no state.
fn remove_pod(d: &mut CriDaemon, pod: &str, before: &EngineCgroups) {
    d.cri()
        .stop_pod_sandbox(pod)
        .unwrap_or_else(|e| panic!("{e}"));
    d.cri()
        .remove_pod_sandbox(pod)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.cri().pod_sandboxes(), Ok(vec![]));
    let mut left = Vec::new();
    let clean = poll_until(Duration::from_secs(30), || {
        left = d.leftovers();
        left.is_empty()
    });
    assert!(clean, "left behind: {left:#?}");
    assert_eq!(before.left(), Vec::<PathBuf>::new(), "cgroups left");
}

#[test]
fn containerds_cri_runs_pods_with_the_supervisor_handler() {
    let mut d = match daemon("host") {
        Ok(d) => d,
        Err(why) => skip!("{why}"),
    };
    let cgroups = EngineCgroups::snapshot(&d.cgroup_parent);
    let pod_config = d.pod_config("cri-pod", NamespaceMode::Node);
    let pod = match d.cri().run_pod_sandbox(&pod_config, HANDLER) {
        Ok(pod) => pod,
        Err(e) => panic!("{e}\ncontainerd's log:\n{}", d.log()),
    };

    // A command's output and exit code: its log (stdout and stderr, as
    // the CRI log file keeps them) and ContainerStatus's exit code are
    // those of the same script run natively.
    let script = "echo out-line; echo err-line >&2; echo second out; exit 3";
    let id = d.run_container(&pod, &pod_config, "echo", &["sh", "-c", script], 0);
    let status = d.exited(&id, None);
    let (out, err, code) = native(script);
    assert_eq!(
        (status.exit_code, status.reason.as_str()),
        (code, "Error"),
        "{status:?}"
    );
    let log_path = Path::new(&pod_config.log_directory).join("echo.log");
    assert_eq!(Path::new(&status.log_path), log_path, "{status:?}");
    let expected_lines = out.lines().count() + err.lines().count();
    poll_until(Duration::from_secs(30), || {
        fs::read_to_string(&log_path).is_ok_and(|t| t.lines().count() >= expected_lines)
    });
    let streams = log_streams(&log_path);
    assert_eq!(
        (streams.get("stdout"), streams.get("stderr")),
        (Some(&out), Some(&err)),
        "log {}:\n{}",
        log_path.display(),
        fs::read_to_string(&log_path).unwrap_or_default()
    );
    d.cri()
        .remove_container(&id)
        .unwrap_or_else(|e| panic!("{e}"));

    // ExecSync into a running container: stdout, stderr, exit code as
    // natively.
    let sleeper = d.run_container(&pod, &pod_config, "sleeper", &["sleep", "1000"], 96 << 20);
    // While it runs, the runtime's state and the containers' cgroups
    // exist (what the end checks are gone).
    let state = d.runtime_root().join(&sleeper);
    assert!(state.join("state.json").is_file(), "{}", state.display());
    let made = cgroups.left();
    // (`<parent>/<id>`, or systemd's scope `cri-containerd-<id>.scope`.)
    assert!(
        made.iter().any(|c| c
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains(sleeper.as_str()))),
        "no cgroup of {sleeper} among {made:#?}"
    );
    // The memory limit from the container's config, as the guest sees it
    // (MemTotal, the first line).
    let meminfo = d
        .cri()
        .exec_sync(&sleeper, &["head", "-n", "1", "/proc/meminfo"], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    let meminfo = String::from_utf8_lossy(&meminfo.stdout);
    assert_eq!(
        meminfo.split_whitespace().nth(1),
        Some("98304"),
        "{meminfo}"
    );
    let exec = "echo from-exec; echo to-stderr >&2; exit 9";
    let answer = d
        .cri()
        .exec_sync(&sleeper, &["sh", "-c", exec], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    let (out, err, code) = native(exec);
    assert_eq!(
        (
            String::from_utf8_lossy(&answer.stdout).into_owned(),
            String::from_utf8_lossy(&answer.stderr).into_owned(),
            answer.exit_code
        ),
        (out, err, code)
    );
    // StopContainer: SIGTERM ends the sleep, 143.
    d.cri()
        .stop_container(&sleeper, 10)
        .unwrap_or_else(|e| panic!("{e}"));
    let status = d.exited(&sleeper, None);
    assert_eq!(status.exit_code, 143, "{status:?}");

    // The container's memory limit (64 MiB) from its config: the hog is
    // OOM-killed, 137, and the CRI says OOMKilled (it runs only under the
    // supervisor, in a cgroup beneath the pod's parent). It starts allocating only
    // once an exec made /tmp/go, so after StartContainer has returned: the
    // shim watches the cgroup for OOM kills from the end of its start on.
    let hog = d.run_container(
        &pod,
        &pod_config,
        "hog",
        &[
            "sh",
            "-c",
            "until stat /tmp/go >/dev/null 2>&1; do sleep 0.1; done; \
             x=a; while :; do x=$x$x; done",
        ],
        64 << 20,
    );
    let go = d
        .cri()
        .exec_sync(&hog, &["touch", "/tmp/go"], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(go.exit_code, 0, "{go:?}");
    let status = d.exited(&hog, Some("OOMKilled"));
    assert_eq!(status.exit_code, 137, "{status:?}");

    // Stopping and removing the pod leaves no cgroup, no process and no
    // state behind.
    remove_pod(&mut d, &pod, &cgroups);
}

/// A pod of two containers on a pod network (the CNI bridge): the
/// containers join the pause container's network namespace by path, and
/// so its sandbox's loopback: one listens on 8080, the other connects to
/// 127.0.0.1:8080, and each reads what the other wrote. They join its IPC
/// and UTS namespaces too: the SysV shared memory and semaphore one made
/// are the other's (as natively in one IPC namespace), and each one's
/// hostname is the pod's.
#[test]
fn a_pods_two_containers_talk_over_localhost() {
    if !Path::new(CNI_PLUGINS).join("bridge").exists() {
        skip!("no CNI plugins in {CNI_PLUGINS} (apt-get install containernetworking-plugins)");
    }
    let mut d = match daemon("pod") {
        Ok(d) => d,
        Err(why) => skip!("{why}"),
    };
    let cgroups = EngineCgroups::snapshot(&d.cgroup_parent);
    let mut pod_config = d.pod_config("cri-shared", NamespaceMode::Pod);
    pod_config.hostname = "cri-pod".into();
    let pod = match d.cri().run_pod_sandbox(&pod_config, HANDLER) {
        Ok(pod) => pod,
        Err(e) => panic!("{e}\ncontainerd's log:\n{}", d.log()),
    };
    let probe_dir = crate::pods::pod_probe();
    let probe_dir = probe_dir.parent().expect("the probe's directory");
    let binds = [(probe_dir.to_str().expect("a UTF-8 path"), "/probe")];
    // The server makes SysV objects before it listens.
    let serve = format!(
        "{} ipc-make 4242 from-server >/dev/null && echo pong | busybox nc -l -p 8080",
        crate::pods::PROBE
    );
    let server = d.run_container_with(
        &pod,
        &pod_config,
        "server",
        &["sh", "-c", &serve],
        0,
        &binds,
    );
    let client = d.run_container_with(&pod, &pod_config, "client", &["sleep", "1000"], 0, &binds);
    // The server may not listen yet: the client tries again until it does.
    let dial = "until echo ping | busybox nc 127.0.0.1 8080; do sleep 0.2; done";
    let answer = d
        .cri()
        .exec_sync(&client, &["sh", "-c", dial], 60)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (
            String::from_utf8_lossy(&answer.stdout).as_ref(),
            answer.exit_code
        ),
        ("pong\n", 0),
        "{answer:?}"
    );
    // One IPC namespace: the client reads what the server made.
    let read = d
        .cri()
        .exec_sync(&client, &[crate::pods::PROBE, "ipc-read", "4242"], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        crate::pods::native_ipc_read("4242", "from-server"),
        "{read:?}"
    );
    // One hostname, the pod's: the kernel's and /etc/hostname.
    let hostname = d
        .cri()
        .exec_sync(&client, &["sh", "-c", "hostname; cat /etc/hostname"], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        String::from_utf8_lossy(&hostname.stdout),
        "cri-pod\ncri-pod\n",
        "{hostname:?}"
    );
    let status = d.exited(&server, None);
    assert_eq!(status.exit_code, 0, "{status:?}");
    let log = Path::new(&pod_config.log_directory).join("server.log");
    poll_until(Duration::from_secs(30), || {
        fs::read_to_string(&log).is_ok_and(|t| !t.is_empty())
    });
    let streams = log_streams(&log);
    assert_eq!(
        streams.get("stdout").map(String::as_str),
        Some("ping\n"),
        "{streams:?}"
    );
    remove_pod(&mut d, &pod, &cgroups);
}

#[test]
fn a_pods_containers_share_one_pid_namespace() {
    let mut d = match daemon("pids") {
        Ok(d) => d,
        Err(why) => skip!("{why}"),
    };
    let cgroups = EngineCgroups::snapshot(&d.cgroup_parent);
    let pod_config = d.pod_config_sharing_pids("cri-pids", NamespaceMode::Node);
    let pod = match d.cri().run_pod_sandbox(&pod_config, HANDLER) {
        Ok(pod) => pod,
        Err(e) => panic!("{e}\ncontainerd's log:\n{}", d.log()),
    };
    let first = d.run_container(&pod, &pod_config, "first", &["sleep", "1000"], 0);
    let second = d.run_container(&pod, &pod_config, "second", &["sleep", "1001"], 0);
    // The second sees the first's process, and the pod's own init (the
    // sandbox container's) as pid 1, as under runc.
    let list = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done";
    let seen = d
        .cri()
        .exec_sync(&second, &["sh", "-c", list], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&seen.stdout);
    assert!(text.lines().any(|l| l.trim() == "sleep 1000"), "{seen:?}");
    assert!(text.lines().any(|l| l.trim() == "sleep 1001"), "{seen:?}");
    // It ends the first container's main process by its pid.
    let end =
        "for p in $(pidof sleep); do if grep -q 1000 /proc/$p/cmdline; then kill $p; fi; done";
    let killed = d
        .cri()
        .exec_sync(&second, &["sh", "-c", end], 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(killed.exit_code, 0, "{killed:?}");
    let status = d.exited(&first, None);
    assert_eq!(status.exit_code, 128 + 15, "{status:?}");
    remove_pod(&mut d, &pod, &cgroups);
}
