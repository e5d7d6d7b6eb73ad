//! `supervisor` as Docker's runtime (`--runtime=supervisor`), against
//! the real dockerd of Debian's `docker.io`. The test installs nothing:
//! without dockerd (or busybox-static, whose rootfs is the image) it
//! skips with a printed reason.
//!
//! It starts its own dockerd as Debian installs it, with only its own
//! data root, exec root, pid file and socket in a temp dir, no bridge
//! and no iptables (the host's network is not the test's to change), and
//! a nofile ulimit: its cgroup driver is the default (cgroupfs on this
//! cgroup v1 host), and no `--cgroup-parent`, so every container's cgroup
//! is where Docker puts it, `/docker/<id>` from each hierarchy's root.
//! It imports a busybox-static image, runs the cases one after another
//! (a user-defined bridge network among them: `networks.rs`; a
//! container sharing another's IPC namespace: `pods.rs`),
//! checks that no container's cgroup is left behind, and stops the
//! daemon by pid at the end, also on failure (a Drop guard), unmounting
//! what it left and removing the cgroups that remain beneath `/docker`
//! that were not there before.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::engine::{
    busybox_tarball, dump, output_with_watchdog, poll_until, stdout, stop_daemon, unmount_beneath,
    wait_until_up, EngineCgroups,
};
use common::engine_cli::{self as cases, EngineCli};
use common::oci::{assert_on_range, have_busybox, supervisor_start};
use common::{bin, Tree};

const DOCKERD: &str = "/usr/sbin/dockerd";
const DOCKER: &str = "/usr/bin/docker";
const IMAGE: &str = "supervisor-test-busybox:latest";
/// Where Docker's cgroupfs driver puts containers' cgroups by default.
const DOCKER_CGROUP_PARENT: &str = "/docker";

/// Our own dockerd; stopped, unmounted and removed on drop.
struct Daemon {
    child: Child,
    dir: Tree,
    /// The cgroups beneath Docker's default parent, as they were before.
    cgroups: EngineCgroups,
    /// The host's IPv6 switches as they were before dockerd started:
    /// dockerd 20.10 turns IPv6 off host-wide; the drop puts them back.
    ipv6: Vec<(&'static str, String)>,
}

/// The host sysctls dockerd changes.
const IPV6_SWITCHES: &[&str] = &[
    "/proc/sys/net/ipv6/conf/all/disable_ipv6",
    "/proc/sys/net/ipv6/conf/default/disable_ipv6",
    "/proc/sys/net/ipv6/conf/lo/disable_ipv6",
];

impl Daemon {
    fn start() -> Result<Daemon, String> {
        let dir = Tree::new();
        let cgroups = EngineCgroups::snapshot(DOCKER_CGROUP_PARENT);
        let config = serde_json::json!({"runtimes": {"supervisor": {"path": bin()}}});
        fs::write(dir.join("daemon.json"), config.to_string()).map_err(|e| e.to_string())?;
        let d = |p: &str| dir.join(p);
        let ipv6 = IPV6_SWITCHES
            .iter()
            .filter_map(|&p| Some((p, fs::read_to_string(p).ok()?)))
            .collect();
        let child = Command::new(DOCKERD)
            .arg("--data-root")
            .arg(d("data"))
            .arg("--exec-root")
            .arg(d("exec"))
            .arg("--pidfile")
            .arg(d("docker.pid"))
            .arg("-H")
            .arg(format!("unix://{}", d("docker.sock").display()))
            .arg("--config-file")
            .arg(d("daemon.json"))
            .args(["--bridge=none", "--iptables=false", "--ip6tables=false"])
            .args(["--default-ulimit", "nofile=4096:4096"])
            .stdin(Stdio::null())
            .stdout(fs::File::create(d("dockerd.log")).map_err(|e| e.to_string())?)
            .stderr(Stdio::from(
                fs::File::options()
                    .append(true)
                    .open(d("dockerd.log"))
                    .map_err(|e| e.to_string())?,
            ))
            .spawn()
            .map_err(|e| format!("starting dockerd: {e}"))?;
        let daemon = Daemon {
            child,
            dir,
            cgroups,
            ipv6,
        };
        wait_until_up(
            "dockerd",
            || daemon.output(&["version"]).status.success(),
            || daemon.log(),
        )?;
        Ok(daemon)
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(DOCKER);
        c.env(
            "DOCKER_HOST",
            format!("unix://{}", self.dir.join("docker.sock").display()),
        )
        .args(args);
        c
    }
}

impl EngineCli for Daemon {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn output_in(&self, args: &[&str], stdin: &[u8]) -> Output {
        output_with_watchdog(self.cmd(args), stdin)
    }

    fn run_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["run", "--runtime=supervisor"];
        all.extend_from_slice(args);
        all
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let names = self.output(&["ps", "-aq"]);
        for id in String::from_utf8_lossy(&names.stdout).split_whitespace() {
            let _ = self.output(&["rm", "-f", id]);
        }
        // A network a failed case left (its bridge would outlive dockerd).
        let _ = self.output(&["network", "prune", "-f"]);
        stop_daemon(&mut self.child);
        unmount_beneath(self.dir.path());
        self.cgroups.remove_left();
        for (path, value) in &self.ipv6 {
            let _ = fs::write(path, value);
        }
    }
}

/// The `sleeper` container's command: it writes two files (for `docker
/// cp` out) and becomes `sleep`.
const WRITER: &str =
    "echo from-tmp > /tmp/out; busybox mkdir -p /root; echo from-root > /root/file; \
                      exec sleep 100";

/// A busybox-static image, imported from a tarball of the rootfs.
fn import_image(d: &Daemon) {
    let tar = busybox_tarball(d.dir.path());
    d.ok(&["import", tar.to_str().unwrap(), IMAGE]);
}

#[test]
fn docker_runs_containers_with_runtime_supervisor() {
    if !Path::new(DOCKERD).exists() || !Path::new(DOCKER).exists() {
        skip!("no dockerd ({DOCKERD}; apt-get install docker.io)");
    }
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if !common::is_root() {
        skip!("dockerd needs root");
    }
    let d = match Daemon::start() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    import_image(&d);

    cases::output_and_exit_codes(&d, IMAGE);
    pids_limit(&d);
    // -u: the command runs as that user, with that user's file access
    // (the image's / is root's, 0755).
    let script = "id -u; id -g; touch /x 2>/dev/null || echo denied; \
                  touch /tmp/u && stat -c %u:%g /tmp/u";
    let user = d.run(&["--rm", "-u", "1000:1000", IMAGE, "sh", "-c", script]);
    assert_eq!(
        stdout(&user),
        "1000\n1000\ndenied\n1000:1000\n",
        "{}",
        dump(&user)
    );
    guest_sees_its_limits(&d);
    update_shows_to_the_guest(&d);

    // -i and -t (the terminal's master went to the shim's console socket).
    cases::stdin_and_terminal(&d, IMAGE);
    // --network none: loopback only.
    cases::loopback_only(&d, &["--rm", "--network", "none", IMAGE]);

    // top lists the container's processes (host pids via `ps --format json`).
    d.ok(&d.run_args(&[
        "-d", "--name", "sleeper", "--memory", "64m", IMAGE, "sh", "-c", WRITER,
    ]));
    // Only the sandbox's: its init and the command, not the runtime's
    // anchor and monitor.
    let top = d.ok(&["top", "sleeper", "-o", "pid,args"]);
    let comms = cases::top_commands(&top);
    assert_eq!(comms, ["sleep", "supervisor-init"], "top:\n{top}");
    no_process_is_host_root(&d, "sleeper");
    stats_and_cp(&d);
    cases::exec_cases(&d, "sleeper");
    cases::pause_then_stop(&d, "sleeper");
    cases::signal_reaches_the_trap(&d, IMAGE);
    cases::memory_hog_is_killed(&d, IMAGE);
    // Docker saw the OOM.
    assert_eq!(d.inspect("hog", "{{.State.OOMKilled}}"), "true");
    d.ok(&["rm", "hog"]);
    read_only_root(&d);
    cases::ulimits(&d, IMAGE);
    // A user-defined bridge network (no iptables on the host: Docker's
    // proxy carries -p), on a documentation subnet the host routes nowhere.
    crate::networks::container_networks(&d, IMAGE, "sbxnet", "198.51.100.0/24");
    // --ipc container:X and --pid container:X.
    crate::pods::shared_namespaces(&d, IMAGE);

    // Every container is gone, and so is its cgroup.
    let left = d.cgroups.left();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

/// Read from the host, every process of container `name` (an overlay2
/// rootfs, Docker's default) runs as ids of the `supervisor` subordinate
/// range: none is host root.
fn no_process_is_host_root(d: &Daemon, name: &str) {
    let start = supervisor_start("/etc/subuid");
    let top = d.ok(&["top", name, "-o", "pid"]);
    let pids: Vec<i32> = (top.lines().skip(1))
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(!pids.is_empty(), "top:\n{top}");
    assert_on_range(&pids, start);
}

/// `--read-only`: the container cannot write to its root (EROFS), /tmp
/// included, as under runc; a `--tmpfs /tmp` on it is writable.
fn read_only_root(d: &Daemon) {
    let script = "touch /x 2>/dev/null || echo root-ro; touch /tmp/x 2>/dev/null || echo tmp-ro; \
                  touch /x 2>&1 | busybox grep -q 'Read-only file system' && echo erofs";
    let out = d.run(&["--rm", "--read-only", IMAGE, "sh", "-c", script]);
    assert_eq!(stdout(&out), "root-ro\ntmp-ro\nerofs\n", "{}", dump(&out));
    let script = "touch /x 2>/dev/null || echo root-ro; echo hi > /tmp/x && cat /tmp/x";
    let out = d.run(&[
        "--rm",
        "--read-only",
        "--tmpfs",
        "/tmp",
        IMAGE,
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(stdout(&out), "root-ro\nhi\n", "{}", dump(&out));
}

/// `docker stats` of the running `sleeper` (started with `--memory
/// 64m`): the shim reads the cgroups of the container's pid (the
/// anchor): its memory under the limit, and pids: the anchor, the
/// sandbox's init and `sleep`. Then `docker cp` in and back out, and out
/// of the files the container wrote itself (dockerd copies through the
/// bundle's rootfs, which the guest writes in place: see docs/oci.md).
fn stats_and_cp(d: &Daemon) {
    cases::stats_show_the_sandbox(d, "sleeper", "64MiB");
    cases::cp_into(d, "sleeper", &d.dir.join("to-container.txt"));
    let back = d.dir.join("from-container.txt");
    d.ok(&["cp", "sleeper:/tmp/copied.txt", back.to_str().unwrap()]);
    assert_eq!(fs::read_to_string(&back).unwrap_or_default(), "copied in\n");
    // What the container wrote (WRITER: done once /root/file is there).
    assert!(
        poll_until(Duration::from_secs(30), || d
            .output(&["exec", "sleeper", "busybox", "test", "-s", "/root/file"])
            .status
            .success()),
        "the container never wrote /root/file"
    );
    for (inside, want) in [("/tmp/out", "from-tmp\n"), ("/root/file", "from-root\n")] {
        let out = d.dir.join("copied-out");
        d.ok(&["cp", &format!("sleeper:{inside}"), out.to_str().unwrap()]);
        assert_eq!(
            fs::read_to_string(&out).unwrap_or_default(),
            want,
            "{inside}"
        );
        fs::remove_file(&out).expect("remove the copy");
    }
    // And the engine sees them as the container's changes.
    let diff = d.ok(&["diff", "sleeper"]);
    assert!(diff.lines().any(|l| l == "A /root/file"), "diff:\n{diff}");
}

/// `--pids-limit 4` counts the container's processes as under runc (the
/// runtime's own tasks are not charged to it): the shell and three
/// children run, the fourth fork fails, and the shell exits 2.
fn pids_limit(d: &Daemon) {
    let script = "sleep 100 & sleep 100 & sleep 100 & echo three; sleep 100 & echo four";
    let out = d.run(&["--rm", "--pids-limit", "4", IMAGE, "sh", "-c", script]);
    assert_eq!(
        (stdout(&out).as_str(), out.status.code()),
        ("three\n", Some(2)),
        "{}",
        dump(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("can't fork"),
        "{}",
        dump(&out)
    );
}

/// `--memory 64m --cpus 1`: the container reads its limits, not the
/// host's, as under runsc (MemTotal is /proc/meminfo's first line).
fn guest_sees_its_limits(d: &Daemon) {
    let script = "head -1 /proc/meminfo; busybox nproc";
    let out = d.run(&[
        "--rm", "--memory", "64m", "--cpus", "1", IMAGE, "sh", "-c", script,
    ]);
    let seen: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(seen, ["MemTotal: 65536 kB", "1"], "{}", dump(&out));
}

/// `docker update --cpus 1 --pids-limit 8 --memory 96m` of a container
/// started with `--cpus 2 --pids-limit 50 --memory 64m`: `nproc`,
/// /sys/devices/system/cpu/online (what `os.cpu_count()` reads),
/// threads-max and MemTotal follow, and `docker stats` shows the new
/// memory limit (read from the container's cgroup).
fn update_shows_to_the_guest(d: &Daemon) {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return; // one CPU: a limit of 2 reads 1 already
    }
    let read = [
        "exec",
        "upd",
        "sh",
        "-c",
        "busybox nproc; cat /sys/devices/system/cpu/online /proc/sys/kernel/threads-max; \
         head -1 /proc/meminfo | tr -s ' '",
    ];
    d.ok(&d.run_args(&[
        "-d",
        "--name",
        "upd",
        "--cpus",
        "2",
        "--pids-limit",
        "50",
        "--memory",
        "64m",
        IMAGE,
        "sleep",
        "100",
    ]));
    assert_eq!(d.ok(&read), "2\n0-1\n50\nMemTotal: 65536 kB\n");
    d.ok(&[
        "update",
        "--cpus",
        "1",
        "--pids-limit",
        "8",
        "--memory",
        "96m",
        "--memory-swap",
        "192m",
        "upd",
    ]);
    assert_eq!(d.ok(&read), "1\n0\n8\nMemTotal: 98304 kB\n");
    let stats = d.ok(&["stats", "--no-stream", "--format", "{{.MemUsage}}", "upd"]);
    assert!(stats.trim().ends_with("/ 96MiB"), "stats: {stats}");
    d.ok(&["rm", "-f", "upd"]);
}
