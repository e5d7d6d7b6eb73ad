//! `supervisor` as Podman's runtime (`--runtime supervisor`), against
//! Debian's podman 4 (with conmon). The test installs nothing: without
//! podman (or busybox-static, whose rootfs is the image) it skips with a
//! printed reason.
//!
//! Podman is configured by environment only: `CONTAINERS_CONF` and
//! `CONTAINERS_STORAGE_CONF` name files in a temp dir (graph root, run
//! root, tmp dir and file locks there; the vfs driver; the cgroupfs
//! manager; nofile and nproc ulimits of 4096; the runtime registered
//! under `[engine.runtimes]`), every container gets `--network none` and
//! a `--cgroup-parent` beneath this process's own cgroup (Podman puts
//! conmon in `<parent>/conmon` and the container in
//! `<parent>/libpod-<id>`). Every podman command runs in the temp dir.
//! At the end (also on failure: a Drop guard) the containers are
//! removed, what podman mounted beneath the temp dir is unmounted and
//! the cgroup parent removed.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::engine::{
    busybox_tarball, dump, output_with_watchdog, own_memory_cgroup, poll_until,
    remove_cgroup_parent, unmount_beneath,
};
use common::oci::have_busybox;
use common::{bin, Tree};

const PODMAN: &str = "/usr/bin/podman";
const IMAGE: &str = "localhost/supervisor-test-busybox:latest";

/// Podman with its own configuration and storage; cleaned up on drop.
struct Podman {
    dir: Tree,
    cgroup_parent: String,
}

impl Podman {
    fn new() -> Result<Podman, String> {
        let dir = Tree::new();
        let own = own_memory_cgroup().ok_or("no memory cgroup for this process")?;
        let cgroup_parent = format!("{own}/supervisor-podman-test-{}", std::process::id());
        let d = |p: &str| dir.join(p).display().to_string();
        let containers_conf = format!(
            "[containers]\n\
             default_ulimits = [\"nofile=4096:4096\", \"nproc=4096:4096\"]\n\
             netns = \"none\"\n\
             [engine]\n\
             cgroup_manager = \"cgroupfs\"\n\
             events_logger = \"file\"\n\
             lock_type = \"file\"\n\
             tmp_dir = {tmp:?}\n\
             volume_path = {volumes:?}\n\
             [engine.runtimes]\n\
             supervisor = [{bin:?}]\n",
            tmp = d("tmp"),
            volumes = d("volumes"),
            bin = bin().display().to_string(),
        );
        let storage_conf = format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = {:?}\nrunroot = {:?}\n",
            d("graph"),
            d("run")
        );
        fs::write(dir.join("containers.conf"), containers_conf).map_err(|e| e.to_string())?;
        fs::write(dir.join("storage.conf"), storage_conf).map_err(|e| e.to_string())?;
        Ok(Podman { dir, cgroup_parent })
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(PODMAN);
        c.env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))
            .current_dir(self.dir.path())
            .args(args);
        c
    }

    fn podman(&self, args: &[&str]) -> Output {
        self.podman_in(args, b"")
    }

    /// Runs `podman ARGS` with `stdin`; killed after 60 s.
    fn podman_in(&self, args: &[&str], stdin: &[u8]) -> Output {
        output_with_watchdog(self.cmd(args), stdin)
    }

    /// `podman ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.podman(args);
        assert!(out.status.success(), "podman {args:?}: {}", dump(&out));
        stdout(&out)
    }

    /// The arguments of `podman run` with our runtime, network and cgroup parent, then `args`.
    fn run_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec![
            "run",
            "--runtime",
            "supervisor",
            "--network",
            "none",
            "--cgroup-parent",
            &self.cgroup_parent,
        ];
        all.extend_from_slice(args);
        all
    }

    fn run(&self, args: &[&str]) -> Output {
        self.podman(&self.run_args(args))
    }

    fn inspect(&self, name: &str, format: &str) -> String {
        self.ok(&["inspect", "-f", format, name]).trim().to_string()
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.podman(&["rm", "--all", "--force", "--time", "0"]);
        unmount_beneath(self.dir.path());
        remove_cgroup_parent(&self.cgroup_parent);
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn podman_runs_containers_with_runtime_supervisor() {
    if !Path::new(PODMAN).exists() {
        skip!("no podman ({PODMAN}; apt-get install podman)");
    }
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if !common::is_root() {
        skip!("the test runs podman as root");
    }
    let p = match Podman::new() {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let tar = busybox_tarball(p.dir.path());
    p.ok(&["import", tar.to_str().unwrap(), IMAGE]);

    // Output, and exit codes.
    let hi = p.run(&["--rm", IMAGE, "echo", "hi"]);
    assert_eq!(stdout(&hi), "hi\n", "{}", dump(&hi));
    let three = p.run(&["--rm", IMAGE, "sh", "-c", "exit 3"]);
    assert_eq!(three.status.code(), Some(3), "{}", dump(&three));

    // -i: stdin reaches the container.
    let cat = p.podman_in(&p.run_args(&["--rm", "-i", IMAGE, "cat"]), b"piped in\n");
    assert_eq!(stdout(&cat), "piped in\n", "{}", dump(&cat));

    // -t: a pseudo-terminal (its master went to conmon's console socket).
    let tty = p.run(&["--rm", "-t", IMAGE, "sh", "-c", "tty; exit 4"]);
    assert_eq!(stdout(&tty), "/dev/pts/0\r\n", "{}", dump(&tty));
    assert_eq!(tty.status.code(), Some(4));

    // --network none: loopback only.
    let net = p.run(&["--rm", IMAGE, "cat", "/proc/net/dev"]);
    let ifaces: Vec<String> = stdout(&net)
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|s| s.trim().to_string()))
        .collect();
    assert_eq!(ifaces, ["lo"], "{}", dump(&net));

    detached_container_cases(&p);
    signal_and_oom_cases(&p);
}

/// exec, pause/unpause and stop on a running container.
fn detached_container_cases(p: &Podman) {
    p.ok(&p.run_args(&[
        "-d", "--name", "sleeper", "--memory", "64m", IMAGE, "sleep", "100",
    ]));
    assert_eq!(p.inspect("sleeper", "{{.State.Status}}"), "running");
    stats_and_cp(p);
    // top: the sandbox's processes only (its init and the command), as
    // the sandbox's own /proc shows them, not the host's.
    let top = p.ok(&["top", "sleeper", "pid", "args"]);
    assert_eq!(top_commands(&top), ["sleep", "supervisor-init"], "{top}");
    // exec: a new process in the running sandbox, its status and stdin.
    // exec -u another user: its ids (container ids map onto the same
    // host ids; the runtime switches them, as runc does).
    let other = p.podman(&[
        "exec",
        "-u",
        "1000:1000",
        "sleeper",
        "sh",
        "-c",
        "id -u; id -g",
    ]);
    assert_eq!(stdout(&other), "1000\n1000\n", "{}", dump(&other));
    let ex = p.podman(&["exec", "sleeper", "sh", "-c", "echo from-exec; exit 9"]);
    assert_eq!(
        (stdout(&ex).as_str(), ex.status.code()),
        ("from-exec\n", Some(9)),
        "{}",
        dump(&ex)
    );
    let exi = p.podman_in(&["exec", "-i", "sleeper", "cat"], b"exec stdin\n");
    assert_eq!(stdout(&exi), "exec stdin\n", "{}", dump(&exi));
    // exec -t: the process's own terminal (its master went to the console socket).
    let ext = p.podman(&["exec", "-t", "sleeper", "sh", "-c", "tty; exit 2"]);
    let shown = stdout(&ext);
    assert!(
        shown.starts_with("/dev/pts/") && shown.ends_with("\r\n") && ext.status.code() == Some(2),
        "{}",
        dump(&ext)
    );
    // pause and unpause: the cgroup freezer.
    p.ok(&["pause", "sleeper"]);
    assert_eq!(p.inspect("sleeper", "{{.State.Status}}"), "paused");
    p.ok(&["unpause", "sleeper"]);
    assert_eq!(p.inspect("sleeper", "{{.State.Status}}"), "running");
    // stop: SIGTERM reaches the command (not pid 1 here, so it dies of it).
    p.ok(&["stop", "sleeper"]);
    assert_eq!(p.inspect("sleeper", "{{.State.ExitCode}}"), "143");
    p.ok(&["rm", "sleeper"]);
}

/// `podman stats` of the running `sleeper` (`--memory 64m`): its memory
/// under the limit, and pids: the anchor, the sandbox's init and
/// `sleep`. Then `podman cp` both ways, which Podman does in the
/// anchor's mount namespace, the sandbox's: a file the guest wrote comes
/// out, and one copied in is there for the guest.
fn stats_and_cp(p: &Podman) {
    let stats = p.ok(&[
        "stats",
        "--no-stream",
        "--format",
        "{{.PIDs}}|{{.MemUsage}}",
        "sleeper",
    ]);
    let (pids, mem) = stats.trim().split_once('|').unwrap_or_default();
    assert_eq!(pids, "3", "stats: {stats}");
    let (used, limit) = mem.split_once(" / ").unwrap_or_default();
    assert_eq!(limit, "67.11MB", "stats: {stats}");
    assert!(
        !used.is_empty() && !used.starts_with("0B"),
        "stats: {stats}"
    );

    let host = p.dir.join("to-container.txt");
    fs::write(&host, "copied in\n").expect("write the file to copy");
    p.ok(&["cp", host.to_str().unwrap(), "sleeper:/tmp/copied.txt"]);
    assert_eq!(
        p.ok(&["exec", "sleeper", "cat", "/tmp/copied.txt"]),
        "copied in\n"
    );
    p.ok(&[
        "exec",
        "sleeper",
        "sh",
        "-c",
        "echo written inside > /tmp/inside.txt",
    ]);
    let back = p.dir.join("from-container.txt");
    p.ok(&["cp", "sleeper:/tmp/inside.txt", back.to_str().unwrap()]);
    assert_eq!(
        fs::read_to_string(&back).unwrap_or_default(),
        "written inside\n"
    );
}

/// The first word of the COMMAND column of `podman top ... pid args`
/// (init's argv names it; its kernel name is the supervisor's), sorted.
fn top_commands(top: &str) -> Vec<String> {
    let mut comms: Vec<String> = (top.lines().skip(1))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect();
    comms.sort();
    comms
}

/// kill -s USR1, and an OOM-killed hog.
fn signal_and_oom_cases(p: &Podman) {
    let script = "trap 'echo got-usr1; exit 7' USR1; echo ready; while :; do sleep 0.05; done";
    p.ok(&p.run_args(&["-d", "--name", "trapper", IMAGE, "sh", "-c", script]));
    assert!(
        poll_until(Duration::from_secs(30), || p
            .ok(&["logs", "trapper"])
            .contains("ready")),
        "trapper never got ready"
    );
    p.ok(&["kill", "-s", "USR1", "trapper"]);
    assert_eq!(p.ok(&["wait", "trapper"]).trim(), "7");
    assert_eq!(p.ok(&["logs", "trapper"]), "ready\ngot-usr1\n");
    p.ok(&["rm", "trapper"]);

    // --memory 64m: a hog is OOM-killed, 137 (it runs only under the
    // supervisor, in a cgroup beneath ours). conmon saw the OOM event on
    // the container's cgroup: it creates `oom` in its working directory
    // (ours). Podman 4.3 reads it from the bundle instead, so its
    // OOMKilled stays false with any runtime (podman#13102, fixed in 5.0).
    let hog = p.run(&[
        "--name",
        "hog",
        "--memory",
        "64m",
        IMAGE,
        "sh",
        "-c",
        "x=a; while :; do x=$x$x; done",
    ]);
    assert_eq!(hog.status.code(), Some(137), "{}", dump(&hog));
    assert_eq!(p.inspect("hog", "{{.State.ExitCode}}"), "137");
    assert!(
        p.dir.join("oom").exists(),
        "conmon saw no OOM event on the container's cgroup"
    );
    p.ok(&["rm", "hog"]);
}
