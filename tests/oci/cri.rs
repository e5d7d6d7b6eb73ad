//! Kubernetes' path to `supervisor`: containerd's CRI plugin with a
//! runtime handler `supervisor` (the runc shim, `io.containerd.runc.v2`,
//! with `BinaryName` our binary: what a RuntimeClass with that handler
//! selects), driven over the CRI v1 gRPC API by the tests' own client
//! (`cri_client.rs`) as the kubelet drives it: RunPodSandbox,
//! CreateContainer, StartContainer, ExecSync, ContainerStatus, the
//! container's log file, StopContainer, StopPodSandbox, RemovePodSandbox,
//! and ImageStatus. Against Debian 12's containerd 1.6; without containerd
//! and ctr (or busybox-static) it skips with a printed reason.
//!
//! The test starts its own containerd (root, state, socket, runtime root
//! and log in a temp dir; the CRI plugin on, network namespaces under its
//! state dir) and imports the busybox image with `ctr -n k8s.io image
//! import` (images are local: nothing is pulled), which also serves as
//! the pod's sandbox ("pause") image. Pods use the node's network
//! (`hostNetwork`), so no CNI plugin is called; the sandbox's own netstack
//! is the guest's network either way. Every pod's cgroup parent lies
//! beneath this process's own cgroup. At the end (also on failure: a Drop
//! guard) it stops and removes every pod, stops the daemon by pid,
//! unmounts what it left and removes the cgroup parent.

use crate::common;
use crate::containerd::oci_archive;
use crate::cri_client::CriClient;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::engine::{
    dump, output_with_watchdog, own_memory_cgroup, poll_until, remove_cgroup_parent, stop_daemon,
    unmount_beneath, wait_until_up, EngineCgroups,
};
use common::oci::have_busybox;
use common::{bin, Tree};
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ContainerState, ContainerStatus, ImageSpec,
    LinuxContainerConfig, LinuxContainerResources, LinuxPodSandboxConfig,
    LinuxSandboxSecurityContext, NamespaceMode, NamespaceOption, PodSandboxConfig,
    PodSandboxMetadata,
};

const CONTAINERD: &str = "/usr/bin/containerd";
const CTR: &str = "/usr/bin/ctr";
/// The busybox image; its command (`Cmd`) is what the pod's sandbox
/// container runs, as a pause image's does.
const IMAGE: &str = "example.org/library/supervisor-test-busybox:cri";
const PAUSE_CMD: &[&str] = &["sleep", "2147483647"];
/// The runtime handler, as a RuntimeClass's `handler` names it.
const HANDLER: &str = "supervisor";

/// Our own containerd with the CRI plugin; its pods, the daemon, its
/// mounts and cgroups are gone after drop.
struct CriDaemon {
    child: Child,
    dir: Tree,
    cgroup_parent: String,
    client: Option<CriClient>,
}

impl CriDaemon {
    fn start() -> Result<CriDaemon, String> {
        let dir = Tree::new();
        let own = own_memory_cgroup().ok_or("no memory cgroup for this process")?;
        let cgroup_parent = format!("{own}/supervisor-cri-test-{}", std::process::id());
        let d = |p: &str| dir.join(p).display().to_string();
        let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
        let config = format!(
            "version = 2\nroot = {root:?}\nstate = {state:?}\n\
             [grpc]\n  address = {sock:?}\n[ttrpc]\n  address = {ttrpc:?}\n\
             [{cri}]\n  sandbox_image = {IMAGE:?}\n  netns_mounts_under_state_dir = true\n\
             \x20 stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"0\"\n\
             [{cri}.cni]\n  bin_dir = {cni_bin:?}\n  conf_dir = {cni_conf:?}\n\
             [{cri}.containerd]\n  default_runtime_name = {HANDLER:?}\n\
             [{cri}.containerd.runtimes.{HANDLER}]\n  runtime_type = \"io.containerd.runc.v2\"\n\
             [{cri}.containerd.runtimes.{HANDLER}.options]\n  BinaryName = {binary:?}\n  \
             Root = {runc_root:?}\n",
            root = d("root"),
            state = d("state"),
            sock = d("containerd.sock"),
            ttrpc = d("containerd.sock.ttrpc"),
            cni_bin = d("cni-bin"),
            cni_conf = d("cni-conf"),
            binary = bin().display().to_string(),
            runc_root = d("runtime-root"),
        );
        fs::write(dir.join("config.toml"), config).map_err(|e| e.to_string())?;
        let log = fs::File::create(dir.join("containerd.log")).map_err(|e| e.to_string())?;
        let child = Command::new(CONTAINERD)
            .arg("--config")
            .arg(dir.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting containerd: {e}"))?;
        let mut daemon = CriDaemon {
            child,
            dir,
            cgroup_parent,
            client: None,
        };
        let socket = daemon.dir.join("containerd.sock");
        wait_until_up("containerd", || socket.exists(), || daemon.log())?;
        let mut client = CriClient::connect(&socket)?;
        let mut answered = Err(String::new());
        poll_until(Duration::from_secs(60), || {
            answered = client.version();
            answered.is_ok()
        });
        let version = answered.map_err(|e| format!("{e}\ncontainerd's log:\n{}", daemon.log()))?;
        assert_eq!(version.runtime_name, "containerd", "{version:?}");
        daemon.client = Some(client);
        Ok(daemon)
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default()
    }

    fn cri(&mut self) -> &mut CriClient {
        self.client.as_mut().expect("connected")
    }

    /// `ctr -n k8s.io ARGS` (the CRI plugin's namespace), which must succeed.
    fn ctr(&self, args: &[&str]) {
        let mut c = Command::new(CTR);
        c.arg("--address")
            .arg(self.dir.join("containerd.sock"))
            .args(["-n", "k8s.io"])
            .args(args);
        let out = output_with_watchdog(c, b"");
        assert!(out.status.success(), "ctr {args:?}: {}", dump(&out));
    }

    /// A pod named `name` on the node's network, its cgroup parent ours,
    /// its containers' logs in `<dir>/logs/<name>`.
    fn pod_config(&self, name: &str) -> PodSandboxConfig {
        let logs = self.dir.join("logs").join(name);
        fs::create_dir_all(&logs).expect("mkdir pod log directory");
        PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: name.into(),
                uid: format!("uid-{name}"),
                namespace: "default".into(),
                attempt: 0,
            }),
            log_directory: logs.display().to_string(),
            linux: Some(LinuxPodSandboxConfig {
                cgroup_parent: self.cgroup_parent.clone(),
                security_context: Some(LinuxSandboxSecurityContext {
                    namespace_options: Some(NamespaceOption {
                        network: NamespaceMode::Node as i32,
                        pid: NamespaceMode::Container as i32,
                        ipc: NamespaceMode::Pod as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Creates and starts the container `name` running `command` in the
    /// pod, with `memory` bytes as its memory limit (0: none), its log
    /// `<name>.log` in the pod's log directory; its id.
    fn run_container(
        &mut self,
        pod: &str,
        pod_config: &PodSandboxConfig,
        name: &str,
        command: &[&str],
        memory: i64,
    ) -> String {
        let config = ContainerConfig {
            metadata: Some(ContainerMetadata {
                name: name.into(),
                attempt: 0,
            }),
            image: Some(ImageSpec {
                image: IMAGE.into(),
                ..Default::default()
            }),
            command: command.iter().map(|s| s.to_string()).collect(),
            log_path: format!("{name}.log"),
            linux: Some(LinuxContainerConfig {
                resources: Some(LinuxContainerResources {
                    memory_limit_in_bytes: memory,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = self
            .cri()
            .create_container(pod, &config, pod_config)
            .unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = self.cri().start_container(&id) {
            panic!("{e}\ncontainerd's log:\n{}", self.log());
        }
        id
    }

    /// Waits until the container `id` has exited (and, when `reason` is
    /// given, its status says that reason); its status.
    fn exited(&mut self, id: &str, reason: Option<&str>) -> ContainerStatus {
        let mut last = None;
        let done = poll_until(Duration::from_secs(60), || {
            let status = self.cri().container_status(id);
            let done = status.as_ref().is_ok_and(|s| {
                s.state == ContainerState::ContainerExited as i32
                    && reason.is_none_or(|r| s.reason == r)
            });
            last = Some(status);
            done
        });
        let status = last.expect("polled at least once");
        assert!(done, "container {id} never exited ({reason:?}): {status:?}");
        status.unwrap_or_else(|e| panic!("{e}"))
    }

    /// The pods', the runtime's and the CRI plugin's traces beneath the
    /// test's directory: processes (other than the daemon) whose command
    /// line names it, and entries of the runtime's state root and of the
    /// plugin's per-sandbox directories.
    fn leftovers(&self) -> Vec<String> {
        let dir = self.dir.path().display().to_string();
        let daemon = self.child.id();
        let mut left = Vec::new();
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if pid != daemon && pid != std::process::id() && cmdline.contains(&dir) {
                left.push(format!("process {pid}: {cmdline}"));
            }
        }
        let cri = "io.containerd.grpc.v1.cri";
        for tree in [
            "runtime-root/k8s.io".to_string(),
            format!("root/{cri}/sandboxes"),
            format!("root/{cri}/containers"),
            format!("state/{cri}/sandboxes"),
            format!("state/{cri}/containers"),
        ] {
            for e in fs::read_dir(self.dir.join(&tree))
                .into_iter()
                .flatten()
                .flatten()
            {
                left.push(format!("state: {}", e.path().display()));
            }
        }
        left
    }
}

impl Drop for CriDaemon {
    fn drop(&mut self) {
        if let Some(cri) = self.client.as_mut() {
            for pod in cri.pod_sandboxes().unwrap_or_default() {
                let _ = cri.stop_pod_sandbox(&pod);
                let _ = cri.remove_pod_sandbox(&pod);
            }
        }
        self.client = None;
        stop_daemon(&mut self.child);
        unmount_beneath(self.dir.path());
        remove_cgroup_parent(&self.cgroup_parent);
    }
}

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

#[test]
fn containerds_cri_runs_pods_with_the_supervisor_handler() {
    if !Path::new(CONTAINERD).exists() || !Path::new(CTR).exists() {
        skip!("no containerd ({CONTAINERD}, {CTR}; apt-get install containerd)");
    }
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if !common::is_root() {
        skip!("containerd needs root");
    }
    let mut d = CriDaemon::start().unwrap_or_else(|e| panic!("{e}"));
    let archive: PathBuf = oci_archive(d.dir.path(), IMAGE, PAUSE_CMD);
    d.ctr(&["image", "import", &archive.display().to_string()]);
    let image = d.cri().image_id(IMAGE).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        image.is_some_and(|id| id.starts_with("sha256:")),
        "the CRI does not see the imported image"
    );

    let cgroups = EngineCgroups::snapshot(&d.cgroup_parent);
    let pod_config = d.pod_config("cri-pod");
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
    let state = d.dir.join("runtime-root/k8s.io").join(&sleeper);
    assert!(state.join("state.json").is_file(), "{}", state.display());
    let made = cgroups.left();
    assert!(
        made.iter().any(|c| c.ends_with(&sleeper)),
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
    // supervisor, in a cgroup beneath ours). It starts allocating only
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
    d.cri()
        .stop_pod_sandbox(&pod)
        .unwrap_or_else(|e| panic!("{e}"));
    d.cri()
        .remove_pod_sandbox(&pod)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.cri().pod_sandboxes(), Ok(vec![]));
    let mut left = Vec::new();
    let clean = poll_until(Duration::from_secs(30), || {
        left = d.leftovers();
        left.is_empty()
    });
    assert!(clean, "left behind: {left:#?}");
    assert_eq!(cgroups.left(), Vec::<PathBuf>::new(), "cgroups left");
}
