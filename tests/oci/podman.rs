//! `supervisor` as Podman's runtime (`--runtime supervisor`), against
//! Debian's podman 4 (with conmon). The test installs nothing: without
//! podman (or busybox-static, whose rootfs is the image) it skips with a
//! printed reason.
//!
//! Podman is configured by environment only: `CONTAINERS_CONF` and
//! `CONTAINERS_STORAGE_CONF` name files in a temp dir (graph root, run
//! root, tmp dir and file locks there; the vfs driver; the cgroupfs
//! manager; nofile and nproc ulimits of 4096; the runtime registered
//! under `[engine.runtimes]`), every container gets `--network none`
//! and no `--cgroup-parent`: Podman's cgroupfs manager puts conmon in
//! `/libpod_parent/conmon` and the container in
//! `/libpod_parent/libpod-<id>`, from each hierarchy's root, and the
//! runtime uses that. Every podman command runs in the temp dir. At the
//! end no container's cgroup is left; then (also on failure: a Drop
//! guard) the containers are removed, what podman mounted beneath the
//! temp dir is unmounted and the cgroups beneath `/libpod_parent` that
//! were not there before (conmon's) are removed.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::engine::{busybox_tarball, output_with_watchdog, unmount_beneath, EngineCgroups};
use common::engine_cli::{self as cases, EngineCli};
use common::oci::have_busybox;
use common::{bin, Tree};

const PODMAN: &str = "/usr/bin/podman";
const IMAGE: &str = "localhost/supervisor-test-busybox:latest";
/// Where Podman's cgroupfs manager puts conmon and containers by default.
const PODMAN_CGROUP_PARENT: &str = "/libpod_parent";

/// Podman with its own configuration and storage; cleaned up on drop.
struct Podman {
    dir: Tree,
    /// The cgroups beneath Podman's default parent, as they were before.
    cgroups: EngineCgroups,
}

impl Podman {
    fn new() -> Result<Podman, String> {
        let dir = Tree::new();
        let cgroups = EngineCgroups::snapshot(PODMAN_CGROUP_PARENT);
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
        Ok(Podman { dir, cgroups })
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(PODMAN);
        c.env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))
            .current_dir(self.dir.path())
            .args(args);
        c
    }
}

impl EngineCli for Podman {
    fn name(&self) -> &'static str {
        "podman"
    }

    fn output_in(&self, args: &[&str], stdin: &[u8]) -> Output {
        output_with_watchdog(self.cmd(args), stdin)
    }

    /// `run` with our runtime and network, then `args`.
    fn run_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["run", "--runtime", "supervisor", "--network", "none"];
        all.extend_from_slice(args);
        all
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.output(&["rm", "--all", "--force", "--time", "0"]);
        unmount_beneath(self.dir.path());
        self.cgroups.remove_left();
    }
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

    cases::output_and_exit_codes(&p, IMAGE);
    // -i and -t (the terminal's master went to conmon's console socket).
    cases::stdin_and_terminal(&p, IMAGE);
    // --network none (every run's): loopback only.
    cases::loopback_only(&p, &["--rm", IMAGE]);

    detached_container_cases(&p);
    signal_and_oom_cases(&p);
    read_only_and_ulimits(&p);
    // Every container is gone, and so is its cgroup (conmon's stays
    // Podman's, as with runc; the Drop guard removes it).
    let left: Vec<_> = (p.cgroups.left().into_iter())
        .filter(|d| !d.ends_with("conmon"))
        .collect();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

/// exec, pause/unpause and stop on a running container.
fn detached_container_cases(p: &Podman) {
    p.ok(&p.run_args(&[
        "-d", "--name", "sleeper", "--memory", "64m", IMAGE, "sleep", "100",
    ]));
    assert_eq!(p.inspect("sleeper", "{{.State.Status}}"), "running");
    stats_and_cp(p);
    update(p);
    // top: the sandbox's processes only (its init and the command), as
    // the sandbox's own /proc shows them, not the host's.
    let top = p.ok(&["top", "sleeper", "pid", "args"]);
    assert_eq!(
        cases::top_commands(&top),
        ["sleep", "supervisor-init"],
        "{top}"
    );
    cases::exec_cases(p, "sleeper");
    cases::pause_then_stop(p, "sleeper");
}

/// `podman stats` of the running `sleeper` (`--memory 64m`): its memory
/// under the limit, and pids: the anchor, the sandbox's init and
/// `sleep`. Then `podman cp` both ways, which Podman does in the
/// anchor's mount namespace, the sandbox's: a file the guest wrote comes
/// out, and one copied in is there for the guest.
fn stats_and_cp(p: &Podman) {
    cases::stats_show_the_sandbox(p, "sleeper", "67.11MB");
    cases::cp_into(p, "sleeper", &p.dir.join("to-container.txt"));
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

/// `podman update --memory 96m --cpus 1` of the running `sleeper`
/// (`--memory 64m`): the runtime writes the container's cgroup, where
/// Podman placed it (`/libpod_parent/libpod-<id>`), and the guest is
/// told of it (MemTotal, `nproc`). (Podman 4.3's `stats` shows the limit
/// of the container's config, which its `update` leaves as it was.)
fn update(p: &Podman) {
    let script = "head -1 /proc/meminfo | tr -s ' '; busybox nproc";
    let read = ["exec", "sleeper", "sh", "-c", script];
    p.ok(&["update", "--memory", "96m", "--cpus", "1", "sleeper"]);
    assert_eq!(p.ok(&read), "MemTotal: 98304 kB\n1\n");
    let id = p.inspect("sleeper", "{{.Id}}");
    let limit =
        format!("/sys/fs/cgroup/memory{PODMAN_CGROUP_PARENT}/libpod-{id}/memory.limit_in_bytes");
    let limit = fs::read_to_string(&limit).unwrap_or_else(|e| panic!("{limit}: {e}"));
    assert_eq!(limit.trim(), (96u64 << 20).to_string());
}

/// `--read-only`: the container cannot write to its root (Podman mounts
/// tmpfs file systems on /tmp, /var/tmp and /run, which it can), and
/// `--ulimit`s as natively.
fn read_only_and_ulimits(p: &Podman) {
    let script = "touch /x 2>/dev/null || echo root-ro; echo hi > /tmp/x && cat /tmp/x";
    let out = p.run(&["--rm", "--read-only", IMAGE, "sh", "-c", script]);
    assert_eq!(cases_stdout(&out), "root-ro\nhi\n", "{out:?}");
    cases::ulimits(p, IMAGE);
}

fn cases_stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kill -s USR1, and an OOM-killed hog.
fn signal_and_oom_cases(p: &Podman) {
    cases::signal_reaches_the_trap(p, IMAGE);
    // conmon saw the OOM event on the container's cgroup: it creates
    // `oom` in its working directory (ours). Podman 4.3 reads it from the
    // bundle instead, so its OOMKilled stays false with any runtime
    // (podman#13102, fixed in 5.0).
    cases::memory_hog_is_killed(p, IMAGE);
    assert!(
        p.dir.join("oom").exists(),
        "conmon saw no OOM event on the container's cgroup"
    );
    p.ok(&["rm", "hog"]);
}
