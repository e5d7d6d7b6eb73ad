//! `supervisor` as containerd's runc (`ctr run --runc-binary`: the
//! option containerd's runc shim, `io.containerd.runc.v2`, takes as
//! `BinaryName`), against Debian's containerd 1.6. The test installs
//! nothing: without containerd and ctr (or busybox-static, whose rootfs
//! is the image) it skips with a printed reason.
//!
//! It starts its own containerd (root, state, sockets and log in a temp
//! dir; the CRI plugin off), imports the busybox image as an OCI image
//! layout archive it builds itself (no docker needed), and runs every
//! container as `ctr run` places it, with no `--cgroup`: containerd's
//! default cgroupsPath, `/<namespace>/<id>` from each hierarchy's root
//! (the test's ctr names a namespace of its own, `supervisor-test-<pid>`,
//! so that two runs of the test never share a cgroup). It checks that
//! each container's cgroup is there while it runs and none is left
//! afterwards, and at the end (also on failure: a Drop guard) kills and
//! deletes the containers, stops the daemon by pid, unmounts what it left
//! and removes the cgroups that remain beneath `/<namespace>`.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::engine::{
    busybox_tarball, dump, output_with_watchdog, poll_until, stdout, stop_daemon, unmount_beneath,
    wait_until_up, EngineCgroups,
};
use common::oci::have_busybox;
use common::{bin, Tree};

const CONTAINERD: &str = "/usr/bin/containerd";
const CTR: &str = "/usr/bin/ctr";
const IMAGE: &str = "example.org/library/supervisor-test-busybox:latest";

/// Our own containerd; its containers, the daemon, its mounts and
/// cgroups are gone after drop.
struct Daemon {
    child: Child,
    dir: Tree,
    /// The containerd namespace of the test's containers.
    namespace: String,
    /// The cgroups beneath `/<namespace>`, where containerd puts a
    /// container's cgroup when its client names none, as they were before.
    cgroups: EngineCgroups,
}

impl Daemon {
    fn start() -> Result<Daemon, String> {
        let dir = Tree::new();
        let namespace = format!("supervisor-test-{}", std::process::id());
        let cgroups = EngineCgroups::snapshot(&format!("/{namespace}"));
        let d = |p: &str| dir.join(p).display().to_string();
        let config = format!(
            "version = 2\nroot = {:?}\nstate = {:?}\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = {:?}\n[ttrpc]\n  address = {:?}\n",
            d("root"),
            d("state"),
            d("containerd.sock"),
            d("containerd.sock.ttrpc"),
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
        let daemon = Daemon {
            child,
            dir,
            namespace,
            cgroups,
        };
        wait_until_up(
            "containerd",
            || daemon.ctr(&["version"]).status.success(),
            || daemon.log(),
        )?;
        Ok(daemon)
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(CTR);
        c.arg("--address")
            .arg(self.dir.join("containerd.sock"))
            .args(["--namespace", &self.namespace])
            .args(args);
        c
    }

    fn ctr(&self, args: &[&str]) -> Output {
        self.ctr_in(args, b"")
    }

    /// Runs `ctr ARGS` with `stdin`; killed after 60 s.
    fn ctr_in(&self, args: &[&str], stdin: &[u8]) -> Output {
        output_with_watchdog(self.cmd(args), stdin)
    }

    /// `ctr ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctr(args);
        assert!(out.status.success(), "ctr {args:?}: {}", dump(&out));
        stdout(&out)
    }

    /// `run --runc-binary <ours> ARGS IMAGE id CMD...`.
    fn run_args(&self, flags: &[&str], id: &str, command: &[&str]) -> Vec<String> {
        let binary = bin().display().to_string();
        let mut all = vec!["run", "--runc-binary", &binary];
        all.extend_from_slice(flags);
        all.extend_from_slice(&[IMAGE, id]);
        all.extend_from_slice(command);
        all.into_iter().map(str::to_string).collect()
    }

    /// `ctr run ...` (see [`Daemon::run_args`]) with `stdin`.
    fn run_in(&self, flags: &[&str], id: &str, command: &[&str], stdin: &[u8]) -> Output {
        let args = self.run_args(flags, id, command);
        self.ctr_in(&args.iter().map(String::as_str).collect::<Vec<_>>(), stdin)
    }

    fn run(&self, flags: &[&str], id: &str, command: &[&str]) -> Output {
        self.run_in(flags, id, command, b"")
    }

    /// `ctr ARGS` on a terminal: under `script`, which gives it a pty as
    /// its stdio (ctr -t takes its console from stdin); script's exit
    /// code is ctr's.
    fn ctr_on_terminal(&self, args: &[String]) -> Output {
        let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));
        let mut line = vec![quote(CTR), "--address".into()];
        line.push(quote(
            &self.dir.join("containerd.sock").display().to_string(),
        ));
        line.extend(["--namespace".into(), quote(&self.namespace)]);
        line.extend(args.iter().map(|a| quote(a)));
        let mut script = Command::new("script");
        script.args(["-q", "-e", "-c", &line.join(" "), "/dev/null"]);
        output_with_watchdog(script, b"")
    }

    /// The task's status as `ctr task ls` shows it.
    fn task_status(&self, id: &str) -> String {
        let list = self.ok(&["task", "ls"]);
        list.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.first() == Some(&id)).then(|| f.last().unwrap_or(&"").to_string())
            })
            .unwrap_or_default()
    }

    /// Waits until the task stopped, deletes it and its container; the
    /// deletion's stderr (which names a non-zero exit code).
    fn reap(&self, id: &str) -> String {
        assert!(
            poll_until(Duration::from_secs(30), || self.task_status(id)
                == "STOPPED"),
            "task {id} never stopped"
        );
        let out = self.ctr(&["task", "rm", id]);
        assert!(out.status.success(), "{}", dump(&out));
        self.ok(&["container", "rm", id]);
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let ids = self.ctr(&["container", "ls", "-q"]);
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = self.ctr(&["task", "kill", "-s", "SIGKILL", id]);
            let _ = self.ctr(&["task", "rm", "-f", id]);
            let _ = self.ctr(&["container", "rm", id]);
        }
        stop_daemon(&mut self.child);
        unmount_beneath(self.dir.path());
        self.cgroups.remove_left();
    }
}

/// The sha256 of a file, in hex (coreutils' sha256sum).
fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    assert!(out.status.success(), "sha256sum {}", path.display());
    stdout(&out)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Puts `content` into the layout's blobs; its descriptor (media type, digest, size).
fn blob(layout: &Path, media_type: &str, file: &Path) -> serde_json::Value {
    let digest = sha256(file);
    let size = fs::metadata(file).expect("blob size").len();
    fs::copy(file, layout.join("blobs/sha256").join(&digest)).expect("copy blob");
    serde_json::json!({"mediaType": media_type, "digest": format!("sha256:{digest}"), "size": size})
}

/// An OCI image layout archive of the busybox rootfs (one uncompressed
/// layer), named `name` for `ctr image import`, with `cmd` as the image's
/// command (`Cmd`; none when empty).
pub(crate) fn oci_archive(dir: &Path, name: &str, cmd: &[&str]) -> PathBuf {
    let layer_tar = busybox_tarball(dir);
    let layout = dir.join("oci-layout");
    fs::create_dir_all(layout.join("blobs/sha256")).expect("mkdir layout");
    let write = |name: &str, value: &serde_json::Value| {
        let path = dir.join(name);
        fs::write(&path, value.to_string()).expect("write json");
        path
    };
    let layer = blob(
        &layout,
        "application/vnd.oci.image.layer.v1.tar",
        &layer_tar,
    );
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": if cmd.is_empty() {
            serde_json::json!({"Env": ["PATH=/bin"]})
        } else {
            serde_json::json!({"Env": ["PATH=/bin"], "Cmd": cmd})
        },
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
    });
    let config = blob(
        &layout,
        "application/vnd.oci.image.config.v1+json",
        &write("config.json", &config),
    );
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": [layer],
    });
    let mut manifest = blob(
        &layout,
        "application/vnd.oci.image.manifest.v1+json",
        &write("manifest.json", &manifest),
    );
    manifest["annotations"] = serde_json::json!({"io.containerd.image.name": name});
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [manifest]});
    fs::write(layout.join("index.json"), index.to_string()).expect("index.json");
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .expect("oci-layout");
    let archive = dir.join("image-oci.tar");
    let made = Command::new("tar")
        .arg("-C")
        .arg(&layout)
        .arg("-cf")
        .arg(&archive)
        .arg(".")
        .status()
        .expect("tar");
    assert!(made.success());
    archive
}

#[test]
fn containerd_runs_containers_with_runc_binary_supervisor() {
    if !Path::new(CONTAINERD).exists() || !Path::new(CTR).exists() {
        skip!("no containerd ({CONTAINERD}, {CTR}; apt-get install containerd)");
    }
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if !common::is_root() {
        skip!("containerd needs root");
    }
    let d = match Daemon::start() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let archive = oci_archive(d.dir.path(), IMAGE, &[]);
    d.ok(&["image", "import", archive.to_str().unwrap()]);

    // Output, and exit codes (ctr run's own).
    let hi = d.run(&["--rm"], "hi", &["echo", "hi"]);
    assert_eq!(stdout(&hi), "hi\n", "{}", dump(&hi));
    let three = d.run(&["--rm"], "three", &["sh", "-c", "exit 3"]);
    assert_eq!(three.status.code(), Some(3), "{}", dump(&three));

    // stdin (ctr run always passes it) reaches the command; -t: a pseudo-terminal (its master
    // went to the shim's console socket), for run and task exec.
    // (head reads one line: ctr 1.6 never closes the task's stdin when
    // its own ends before the task's IO is set up, with any runtime.)
    let head = d.run_in(&["--rm"], "head", &["head", "-n", "1"], b"piped in\n");
    assert_eq!(stdout(&head), "piped in\n", "{}", dump(&head));
    // (script's own pty adds a \r, and echoes its stdin's end as ^@.)
    let tty = d.ctr_on_terminal(&d.run_args(&["--rm", "-t"], "tty", &["sh", "-c", "tty; exit 4"]));
    assert!(
        stdout(&tty).contains("/dev/pts/0\r") && tty.status.code() == Some(4),
        "{}",
        dump(&tty)
    );

    // A running task: exec, ps, pause/resume, kill (SIGTERM).
    let started = d.run(&["-d"], "sleeper", &["sleep", "100"]);
    assert!(started.status.success(), "{}", dump(&started));
    // Its cgroup is where containerd chose: /<namespace>/sleeper.
    let made = d.cgroups.left();
    assert!(
        made.iter()
            .any(|c| c.ends_with(format!("{}/sleeper", d.namespace))),
        "no cgroup /{}/sleeper among {made:#?}",
        d.namespace
    );
    let ex = d.ctr(&[
        "task",
        "exec",
        "--exec-id",
        "e1",
        "sleeper",
        "sh",
        "-c",
        "echo from-exec; exit 9",
    ]);
    assert_eq!(
        (stdout(&ex).as_str(), ex.status.code()),
        ("from-exec\n", Some(9)),
        "{}",
        dump(&ex)
    );
    let exi = d.ctr_in(
        &["task", "exec", "--exec-id", "e2", "sleeper", "cat"],
        b"exec stdin\n",
    );
    assert_eq!(stdout(&exi), "exec stdin\n", "{}", dump(&exi));
    let ext = [
        "task",
        "exec",
        "-t",
        "--exec-id",
        "e3",
        "sleeper",
        "sh",
        "-c",
        "tty; exit 2",
    ];
    let ext = d.ctr_on_terminal(&ext.map(String::from));
    let shown = stdout(&ext);
    assert!(
        shown.contains("/dev/pts/") && ext.status.code() == Some(2),
        "{}",
        dump(&ext)
    );
    // ps: the host pids of the sandbox's processes, its init and the
    // command (not the runtime's anchor and monitor).
    let ps = d.ok(&["task", "ps", "sleeper"]);
    assert_eq!(ps.lines().skip(1).count(), 2, "task ps:\n{ps}");
    d.ok(&["task", "pause", "sleeper"]);
    assert_eq!(d.task_status("sleeper"), "PAUSED");
    d.ok(&["task", "resume", "sleeper"]);
    assert_eq!(d.task_status("sleeper"), "RUNNING");
    d.ok(&["task", "kill", "sleeper"]);
    let gone = d.reap("sleeper");
    assert!(gone.contains("exit code 143"), "{gone}");

    // kill -s USR1 reaches the command's trap.
    let script = "trap 'exit 7' USR1; : > /tmp/ready; while :; do sleep 0.05; done";
    let started = d.run(&["-d"], "trapper", &["sh", "-c", script]);
    assert!(started.status.success(), "{}", dump(&started));
    assert!(
        poll_until(Duration::from_secs(30), || d
            .ctr(&[
                "task",
                "exec",
                "--exec-id",
                "r",
                "trapper",
                "stat",
                "/tmp/ready",
            ])
            .status
            .success()),
        "trapper never got ready"
    );
    d.ok(&["task", "kill", "-s", "SIGUSR1", "trapper"]);
    let gone = d.reap("trapper");
    assert!(gone.contains("exit code 7"), "{gone}");

    // --memory-limit 64 MiB: the hog is OOM-killed, 137 (it runs only
    // under the supervisor, in its cgroup /<namespace>/hog).
    let hog = d.run(
        &["--rm", "--memory-limit", "67108864"],
        "hog",
        &["sh", "-c", "x=a; while :; do x=$x$x; done"],
    );
    assert_eq!(hog.status.code(), Some(137), "{}", dump(&hog));

    // Every container is gone, and so is its cgroup.
    let left = d.cgroups.left();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}
