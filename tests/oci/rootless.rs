//! `supervisor` as the runtime of *rootless* Podman: podman run by the
//! unprivileged user `tester`, which runs the runtime as uid 0 of its own
//! user namespace (subordinate ids from /etc/subuid through `newuidmap`).
//! The test installs nothing: without podman, newuidmap (package
//! `uidmap`), the user `tester` with subordinate ids, or busybox-static it
//! skips with a printed reason.
//!
//! What differs from rootful runs: the runtime's state goes to
//! `$XDG_RUNTIME_DIR/supervisor` (as runc's), and the container has no
//! cgroup (a v1 host delegates none to a user; Podman drops limits
//! there itself). Everything lives in a temp dir owned by `tester`
//! (HOME, XDG_RUNTIME_DIR, storage); at the end (a Drop guard) the
//! containers are removed and Podman's rootless pause process, which
//! holds its user namespace, is killed by its pid.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::engine::{busybox_tarball, output_with_watchdog};
use common::engine_cli::{self as cases, EngineCli};
use common::oci::have_busybox;
use common::{tester_bin, Tree};

const PODMAN: &str = "/usr/bin/podman";
const NEWUIDMAP: &str = "/usr/bin/newuidmap";
const IMAGE: &str = "localhost/supervisor-test-busybox:latest";

/// Rootless Podman for `tester`, configured in a temp dir it owns.
struct Rootless {
    dir: Tree,
    uid: u32,
    gid: u32,
}

impl Rootless {
    fn new(uid: u32, gid: u32, runtime: &Path) -> Rootless {
        let dir = Tree::new();
        let d = |p: &str| dir.join(p).display().to_string();
        let containers_conf = format!(
            "[containers]\n\
             netns = \"none\"\n\
             [engine]\n\
             cgroup_manager = \"cgroupfs\"\n\
             events_logger = \"file\"\n\
             [engine.runtimes]\n\
             supervisor = [{:?}]\n",
            runtime.display().to_string()
        );
        let storage_conf = format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = {:?}\nrunroot = {:?}\n",
            d("graph"),
            d("run")
        );
        dir.file("containers.conf", &containers_conf);
        dir.file("storage.conf", &storage_conf);
        dir.dir("xdg");
        busybox_tarball(dir.path());
        dir.give_to(uid, gid);
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.join("xdg"), fs::Permissions::from_mode(0o700)).expect("chmod xdg");
        Rootless { dir, uid, gid }
    }

    /// Podman's rootless pause process (it keeps the user namespace).
    fn pause_pid(&self) -> Option<i32> {
        let file: PathBuf = self.dir.join("xdg/libpod/tmp/pause.pid");
        fs::read_to_string(file).ok()?.trim().parse().ok()
    }
}

impl EngineCli for Rootless {
    fn name(&self) -> &'static str {
        "podman"
    }

    /// `podman ARGS` as tester, with only the environment it needs.
    fn output_in(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut c = Command::new(PODMAN);
        c.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("USER", "tester")
            .env("HOME", self.dir.path())
            .env("XDG_RUNTIME_DIR", self.dir.join("xdg"))
            .env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))
            .current_dir(self.dir.path())
            .uid(self.uid)
            .gid(self.gid)
            .args(args);
        output_with_watchdog(c, stdin)
    }

    fn run_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["run", "--runtime", "supervisor"];
        all.extend_from_slice(args);
        all
    }
}

impl Drop for Rootless {
    fn drop(&mut self) {
        let _ = self.output(&["rm", "--all", "--force", "--time", "0"]);
        if let Some(pid) = self.pause_pid().filter(|p| *p > 1) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGKILL);
        }
    }
}

/// Whether `/etc/subuid` gives `tester` subordinate ids.
fn tester_has_subuids() -> bool {
    let text = fs::read_to_string("/etc/subuid").unwrap_or_default();
    text.lines().any(|l| l.starts_with("tester:"))
}

#[test]
fn rootless_podman_runs_containers_with_runtime_supervisor() {
    if !Path::new(PODMAN).exists() || !Path::new(NEWUIDMAP).exists() {
        skip!("no podman or newuidmap (apt-get install podman uidmap)");
    }
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    let (uid, gid, runtime) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    if !tester_has_subuids() {
        skip!("tester has no subordinate ids in /etc/subuid");
    }
    let p = Rootless::new(uid, gid, &runtime);
    p.ok(&["import", "image.tar", IMAGE]);

    cases::output_and_exit_codes(&p, IMAGE);

    // A running container: exec (uid 0 of Podman's namespace, tester on
    // the host), top through the anchor's namespaces, cp, stop.
    p.ok(&p.run_args(&["-d", "--name", "sleeper", IMAGE, "sleep", "100"]));
    assert_eq!(p.ok(&["exec", "sleeper", "id", "-u"]), "0\n");
    let top = p.ok(&["top", "sleeper", "args"]);
    let mut comms: Vec<&str> = (top.lines().skip(1))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    comms.sort();
    assert_eq!(comms, ["sleep", "supervisor-init"], "{top}");
    // cp both ways while it runs: Podman enters the pid namespace of the
    // container's pid (the anchor's own, which Podman's user namespace
    // owns) and its mount namespace (the sandbox's).
    fs::write(p.dir.join("into.txt"), "in\n").expect("write into.txt");
    p.ok(&["cp", "into.txt", "sleeper:/tmp/into.txt"]);
    assert_eq!(p.ok(&["exec", "sleeper", "cat", "/tmp/into.txt"]), "in\n");
    p.ok(&["exec", "sleeper", "sh", "-c", "echo out > /tmp/out.txt"]);
    p.ok(&["cp", "sleeper:/tmp/out.txt", "out.txt"]);
    let out = fs::read_to_string(p.dir.join("out.txt")).unwrap_or_default();
    assert_eq!(out, "out\n");
    p.ok(&["stop", "--time", "5", "sleeper"]);
    assert_eq!(p.inspect("sleeper", "{{.State.ExitCode}}"), "143");
}
