//! The containerd a CRI test talks to, with the CRI plugin on and the
//! runtime handler `supervisor`: by default the test's own, and with
//! [`INSTALLED_ENV`] set the machine's installed one.
//!
//! The test's own has the handler as its only runtime and runs in a
//! network namespace of its own (`unshare -n`, its loopback up): the
//! node's network of its host-network pods, and where the CNI bridge of
//! its other pods lives, so the machine's network is untouched. Root,
//! state, sockets, the runtime's state root (the shim's `Root`), the CNI
//! configuration and IP allocations, the pods' logs and containerd's log
//! are in a temp dir; network namespaces are under its state dir; pods'
//! cgroups lie beneath this process's own (cgroupfs paths).
//!
//! The installed one (scripts/vm's machine: containerd as Debian installs
//! it, started by systemd, whose config registers the handler with
//! `SystemdCgroup = true` and names a CNI bridge and the sandbox image) is
//! used as it is: its own root, state and network namespaces, the shim's
//! default runtime root, and pods in a systemd slice of the test's
//! (`<name>.slice`: containerd gives the runtime `slice:cri-containerd:<id>`
//! cgroup paths), which is stopped at the end.
//!
//! Also: the pod and container configs the tests use, waiting for a
//! container's exit, and what a removed pod may not leave behind.
//!
//! Not here: what a test expects of the pods.

use crate::common;
use crate::cri::client::CriClient;

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::engine::{
    dump, output_with_watchdog, own_memory_cgroup, poll_until, remove_cgroup_parent, stop_daemon,
    unmount_beneath, wait_until_up,
};
use common::{bin, Tree};
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ContainerState, ContainerStatus, ImageSpec,
    LinuxContainerConfig, LinuxContainerResources, LinuxContainerSecurityContext,
    LinuxPodSandboxConfig, LinuxSandboxSecurityContext, Mount, NamespaceMode, NamespaceOption,
    PodSandboxConfig, PodSandboxMetadata,
};

pub const CONTAINERD: &str = "/usr/bin/containerd";
pub const CTR: &str = "/usr/bin/ctr";
/// The busybox image; its command (`Cmd`) is what the pod's sandbox
/// container runs, as a pause image's does.
pub const IMAGE: &str = "example.org/library/supervisor-test-busybox:cri";
pub const PAUSE_CMD: &[&str] = &["sleep", "2147483647"];
/// The runtime handler, as a RuntimeClass's `handler` names it.
pub const HANDLER: &str = "supervisor";
/// When set, the socket of the installed containerd the tests use instead
/// of starting their own (`tests/vm/cases.sh` sets it in the VM).
pub const INSTALLED_ENV: &str = "SUPERVISOR_CRI_CONTAINERD";

/// Where a containerd keeps what the tests look at.
struct Paths {
    socket: PathBuf,
    /// containerd's `root` and `state`.
    root: PathBuf,
    state: PathBuf,
    /// The shim's runtime state root (`Root`; per namespace beneath it).
    runtime_root: PathBuf,
    /// The pods' network namespaces: the directory and their names' prefix.
    netns: (PathBuf, &'static str),
    /// What the command line of each of the pods' processes (shim, anchor,
    /// monitor) names.
    marker: String,
}

/// A containerd with the CRI plugin; its pods (and the test's own
/// daemon, its mounts and cgroups) are gone after drop.
pub struct CriDaemon {
    /// The test's own daemon; none for the installed one.
    child: Option<Child>,
    pub dir: Tree,
    paths: Paths,
    /// The pods' cgroup parent: a cgroupfs path, or the installed
    /// daemon's systemd slice (`/<name>.slice`).
    pub cgroup_parent: String,
    client: Option<CriClient>,
}

impl CriDaemon {
    /// The installed containerd when [`INSTALLED_ENV`] names its socket,
    /// else a started one of the test's own; `name` tells the test's
    /// cgroup parent from another's.
    pub fn start(name: &str) -> Result<CriDaemon, String> {
        match std::env::var_os(INSTALLED_ENV) {
            Some(socket) => CriDaemon::installed(name, PathBuf::from(socket)),
            None => CriDaemon::own(name),
        }
    }

    /// The machine's containerd, its CRI endpoint at `socket`.
    fn installed(name: &str, socket: PathBuf) -> Result<CriDaemon, String> {
        let slice = format!("supervisor_cri_{name}_{}.slice", std::process::id());
        let paths = Paths {
            socket,
            root: "/var/lib/containerd".into(),
            state: "/run/containerd".into(),
            runtime_root: "/run/containerd/runc".into(),
            netns: ("/run/netns".into(), "cni-"),
            marker: "k8s.io".into(),
        };
        CriDaemon::connect(None, Tree::new(), paths, format!("/{slice}"))
    }

    /// A containerd of the test's own, started.
    fn own(name: &str) -> Result<CriDaemon, String> {
        let dir = Tree::new();
        let own = own_memory_cgroup().ok_or("no memory cgroup for this process")?;
        let cgroup_parent = format!("{own}/supervisor-cri-{name}-{}", std::process::id());
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
            cni_bin = CNI_PLUGINS,
            cni_conf = d("cni-conf"),
            binary = bin().display().to_string(),
            runc_root = d("runtime-root"),
        );
        fs::write(dir.join("config.toml"), config).map_err(|e| e.to_string())?;
        fs::create_dir_all(dir.join("cni-conf")).map_err(|e| e.to_string())?;
        fs::write(
            dir.join("cni-conf/10-pods.conflist"),
            pod_network(&d("cni-ipam")).to_string(),
        )
        .map_err(|e| e.to_string())?;
        let log = fs::File::create(dir.join("containerd.log")).map_err(|e| e.to_string())?;
        // unshare execs sh, which execs containerd: the child's pid is
        // containerd's.
        let child = Command::new("unshare")
            .args(["-n", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
            .arg(CONTAINERD)
            .arg("--config")
            .arg(dir.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting containerd: {e}"))?;
        let paths = Paths {
            socket: dir.join("containerd.sock"),
            root: dir.join("root"),
            state: dir.join("state"),
            runtime_root: dir.join("runtime-root"),
            netns: (dir.join("state/io.containerd.grpc.v1.cri/netns"), ""),
            marker: dir.path().display().to_string(),
        };
        CriDaemon::connect(Some(child), dir, paths, cgroup_parent)
    }

    /// Waits for the daemon's CRI endpoint and connects to it.
    fn connect(
        child: Option<Child>,
        dir: Tree,
        paths: Paths,
        cgroup_parent: String,
    ) -> Result<CriDaemon, String> {
        let mut daemon = CriDaemon {
            child,
            dir,
            paths,
            cgroup_parent,
            client: None,
        };
        let socket = daemon.paths.socket.clone();
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

    /// containerd's log: the test's own file, or the installed daemon's
    /// journal (its last 200 lines).
    pub fn log(&self) -> String {
        if self.child.is_some() {
            return fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default();
        }
        Command::new("journalctl")
            .args(["--no-pager", "-n", "200", "-u", "containerd.service"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The shim's runtime state root of the CRI plugin's namespace.
    pub fn runtime_root(&self) -> PathBuf {
        self.paths.runtime_root.join("k8s.io")
    }

    pub fn cri(&mut self) -> &mut CriClient {
        self.client.as_mut().expect("connected")
    }

    /// `ctr -n k8s.io ARGS` (the CRI plugin's namespace), which must succeed.
    pub fn ctr(&self, args: &[&str]) {
        let mut c = Command::new(CTR);
        c.arg("--address")
            .arg(&self.paths.socket)
            .args(["-n", "k8s.io"])
            .args(args);
        let out = output_with_watchdog(c, b"");
        assert!(out.status.success(), "ctr {args:?}: {}", dump(&out));
    }

    /// A pod named `name`, on the node's network (`NamespaceMode::Node`)
    /// or its own (`Pod`: the CNI bridge), its cgroup parent ours, its
    /// containers' logs in `<dir>/logs/<name>`.
    pub fn pod_config(&self, name: &str, network: NamespaceMode) -> PodSandboxConfig {
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
                        network: network as i32,
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

    /// [`CriDaemon::pod_config`] whose containers share one pid namespace,
    /// the pod's (Kubernetes' `shareProcessNamespace: true`).
    pub fn pod_config_sharing_pids(&self, name: &str, network: NamespaceMode) -> PodSandboxConfig {
        let mut config = self.pod_config(name, network);
        let options = (config.linux.as_mut())
            .and_then(|l| l.security_context.as_mut())
            .and_then(|s| s.namespace_options.as_mut())
            .expect("pod_config sets namespace options");
        options.pid = NamespaceMode::Pod as i32;
        config
    }

    /// Creates and starts the container `name` running `command` in the
    /// pod, with `memory` bytes as its memory limit (0: none), its log
    /// `<name>.log` in the pod's log directory; its id.
    pub fn run_container(
        &mut self,
        pod: &str,
        pod_config: &PodSandboxConfig,
        name: &str,
        command: &[&str],
        memory: i64,
    ) -> String {
        self.run_container_with(pod, pod_config, name, command, memory, &[])
    }

    /// [`CriDaemon::run_container`] with read-only binds of host
    /// directories (`(host, container)` paths).
    pub fn run_container_with(
        &mut self,
        pod: &str,
        pod_config: &PodSandboxConfig,
        name: &str,
        command: &[&str],
        memory: i64,
        binds: &[(&str, &str)],
    ) -> String {
        let mounts = (binds.iter())
            .map(|(host, container)| Mount {
                host_path: host.to_string(),
                container_path: container.to_string(),
                readonly: true,
                ..Default::default()
            })
            .collect();
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
            mounts,
            linux: Some(LinuxContainerConfig {
                resources: Some(LinuxContainerResources {
                    memory_limit_in_bytes: memory,
                    ..Default::default()
                }),
                security_context: Some(LinuxContainerSecurityContext {
                    namespace_options: Some(NamespaceOption {
                        pid: pod_pid_mode(pod_config) as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
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
    pub fn exited(&mut self, id: &str, reason: Option<&str>) -> ContainerStatus {
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

    /// The pods', the runtime's and the CRI plugin's traces: processes
    /// (other than the daemon) whose command line names the daemon's
    /// marker (the test's directory, or the plugin's namespace `k8s.io`),
    /// and entries of the runtime's state root (but its record of passed
    /// overlay trials), of the plugin's
    /// per-sandbox and per-container directories and of its network
    /// namespaces.
    pub fn leftovers(&self) -> Vec<String> {
        let marker = &self.paths.marker;
        let daemon = self.child.as_ref().map(Child::id);
        let mut left = Vec::new();
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if Some(pid) != daemon && pid != std::process::id() && cmdline.contains(marker) {
                left.push(format!("process {pid}: {cmdline}"));
            }
        }
        let cri = "io.containerd.grpc.v1.cri";
        let (netns, netns_prefix) = &self.paths.netns;
        for (tree, prefix) in [
            (self.runtime_root(), ""),
            (self.paths.root.join(cri).join("sandboxes"), ""),
            (self.paths.root.join(cri).join("containers"), ""),
            (self.paths.state.join(cri).join("sandboxes"), ""),
            (self.paths.state.join(cri).join("containers"), ""),
            (netns.clone(), *netns_prefix),
        ] {
            for e in fs::read_dir(&tree).into_iter().flatten().flatten() {
                // The runtime's record of the overlay trials that passed
                // on this boot (oci/overlay_trial.rs) is no container's.
                if tree == self.runtime_root() && e.file_name() == "@overlay-trials" {
                    continue;
                }
                if e.file_name().to_string_lossy().starts_with(prefix) {
                    left.push(format!("state: {}", e.path().display()));
                }
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
        match self.child.as_mut() {
            Some(child) => {
                stop_daemon(child);
                unmount_beneath(self.dir.path());
                remove_cgroup_parent(&self.cgroup_parent);
            }
            None => {
                // The test's slice (systemd made it for the pods' scopes).
                let slice = self.cgroup_parent.trim_start_matches('/');
                let _ = Command::new("systemctl").args(["stop", slice]).output();
            }
        }
    }
}

/// Debian's CNI plugins (containernetworking-plugins).
pub const CNI_PLUGINS: &str = "/usr/lib/cni";

/// The pods' network: a bridge in the daemon's namespace, an address of
/// 203.0.113.0/24 per pod (host-local allocations in `ipam_dir`), no
/// gateway, no masquerading.
fn pod_network(ipam_dir: &str) -> serde_json::Value {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "supervisor-test-pods",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni-sup0",
            "isGateway": false,
            "ipMasq": false,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": "203.0.113.0/24"}]],
                "dataDir": ipam_dir,
            },
        }],
    })
}

/// The pid namespace mode of the pod's containers: the pod's, as the
/// kubelet gives every container the pod's (`Pod` under
/// `shareProcessNamespace`, else `Container`).
fn pod_pid_mode(pod_config: &PodSandboxConfig) -> NamespaceMode {
    let pid = (pod_config.linux.as_ref())
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.as_ref())
        .map(|o| o.pid);
    match pid {
        Some(p) if p == NamespaceMode::Pod as i32 => NamespaceMode::Pod,
        _ => NamespaceMode::Container,
    }
}
