//! The command line Docker and Podman share ([`EngineCli`]: `run`,
//! `exec`, `inspect`, `pause`, `stop`, `logs`, `stats`, `cp`...) and the
//! cases both engines' tests put through it with this runtime: output and
//! exit codes, stdin and a terminal, loopback-only networking, exec into a
//! running container (another user, its status, stdin, a terminal), pause
//! and unpause, stop, a signal reaching the command's trap, a memory hog
//! killed at its limit, `stats` and `cp` into a running container,
//! `--ulimit`s as natively.
//!
//! Not here: how an engine is started or configured, and the cases only
//! one engine has (`tests/oci/docker.rs`, `tests/oci/podman.rs`,
//! `tests/oci/rootless.rs`).

use std::process::Output;
use std::time::Duration;

use super::engine::{dump, poll_until, stdout};

/// An engine's client, as the tests drive it.
pub trait EngineCli {
    /// The client's name in messages (`docker`, `podman`).
    fn name(&self) -> &'static str;
    /// `ENGINE ARGS` with `stdin`; killed (and the test fails) after 60 s.
    fn output_in(&self, args: &[&str], stdin: &[u8]) -> Output;
    /// `run` with this runtime (and the engine's own run options), then `args`.
    fn run_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str>;

    /// `ENGINE ARGS`; killed after 60 s.
    fn output(&self, args: &[&str]) -> Output {
        self.output_in(args, b"")
    }

    /// `ENGINE ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            self.name(),
            dump(&out)
        );
        stdout(&out)
    }

    /// `ENGINE run` with this runtime, then `args`.
    fn run(&self, args: &[&str]) -> Output {
        self.output(&self.run_args(args))
    }

    /// `ENGINE inspect -f FORMAT NAME`, trimmed.
    fn inspect(&self, name: &str, format: &str) -> String {
        self.ok(&["inspect", "-f", format, name]).trim().to_string()
    }
}

/// Output, and exit codes: `echo hi` prints, `exit 3` is 3.
pub fn output_and_exit_codes(e: &impl EngineCli, image: &str) {
    let hi = e.run(&["--rm", image, "echo", "hi"]);
    assert_eq!(stdout(&hi), "hi\n", "{}", dump(&hi));
    let three = e.run(&["--rm", image, "sh", "-c", "exit 3"]);
    assert_eq!(three.status.code(), Some(3), "{}", dump(&three));
}

/// `-i`: stdin reaches the container; `-t`: the container's stdio is a
/// pseudo-terminal (its master went to the engine's console socket).
pub fn stdin_and_terminal(e: &impl EngineCli, image: &str) {
    let cat = e.output_in(&e.run_args(&["--rm", "-i", image, "cat"]), b"piped in\n");
    assert_eq!(stdout(&cat), "piped in\n", "{}", dump(&cat));
    let tty = e.run(&["--rm", "-t", image, "sh", "-c", "tty; exit 4"]);
    assert_eq!(stdout(&tty), "/dev/pts/0\r\n", "{}", dump(&tty));
    assert_eq!(tty.status.code(), Some(4));
}

/// The interfaces of `/proc/net/dev` in a container run with `args`
/// (options, then the image): loopback only.
pub fn loopback_only(e: &impl EngineCli, args: &[&str]) {
    let mut all = args.to_vec();
    all.extend(["cat", "/proc/net/dev"]);
    let net = e.run(&all);
    let ifaces: Vec<String> = stdout(&net)
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|s| s.trim().to_string()))
        .collect();
    assert_eq!(ifaces, ["lo"], "{}", dump(&net));
}

/// The first word of the COMMAND column of a `top` listing whose last
/// column is the arguments (init's argv names it; its kernel name is the
/// supervisor's), sorted.
pub fn top_commands(top: &str) -> Vec<String> {
    let mut comms: Vec<String> = (top.lines().skip(1))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect();
    comms.sort();
    comms
}

/// `ENGINE stats` of the running `name`: pids are the anchor, the
/// sandbox's init and the command; the memory used is under the limit,
/// which the engine shows as `limit`.
pub fn stats_show_the_sandbox(e: &impl EngineCli, name: &str, limit: &str) {
    let stats = e.ok(&[
        "stats",
        "--no-stream",
        "--format",
        "{{.PIDs}}|{{.MemUsage}}",
        name,
    ]);
    let (pids, mem) = stats.trim().split_once('|').unwrap_or_default();
    assert_eq!(pids, "3", "stats: {stats}");
    let (used, shown) = mem.split_once(" / ").unwrap_or_default();
    assert_eq!(shown, limit, "stats: {stats}");
    assert!(
        !used.is_empty() && !used.starts_with("0B"),
        "stats: {stats}"
    );
}

/// `ENGINE cp` of the host file `host` (holding `copied in`) into the
/// running `name`, where the guest reads it.
pub fn cp_into(e: &impl EngineCli, name: &str, host: &std::path::Path) {
    std::fs::write(host, "copied in\n").expect("write the file to copy");
    let target = format!("{name}:/tmp/copied.txt");
    e.ok(&["cp", host.to_str().unwrap(), &target]);
    assert_eq!(
        e.ok(&["exec", name, "cat", "/tmp/copied.txt"]),
        "copied in\n"
    );
}

/// exec into the running `name`: a new process in the running sandbox,
/// its status and stdin; `-u` another user gets its ids (container ids
/// map onto the same host ids; the runtime switches them, as runc does);
/// `-t` the process's own terminal (its master went to the console socket).
pub fn exec_cases(e: &impl EngineCli, name: &str) {
    let other = e.output(&["exec", "-u", "1000:1000", name, "sh", "-c", "id -u; id -g"]);
    assert_eq!(stdout(&other), "1000\n1000\n", "{}", dump(&other));
    let ex = e.output(&["exec", name, "sh", "-c", "echo from-exec; exit 9"]);
    assert_eq!(
        (stdout(&ex).as_str(), ex.status.code()),
        ("from-exec\n", Some(9)),
        "{}",
        dump(&ex)
    );
    let exi = e.output_in(&["exec", "-i", name, "cat"], b"exec stdin\n");
    assert_eq!(stdout(&exi), "exec stdin\n", "{}", dump(&exi));
    let ext = e.output(&["exec", "-t", name, "sh", "-c", "tty; exit 2"]);
    let shown = stdout(&ext);
    assert!(
        shown.starts_with("/dev/pts/") && shown.ends_with("\r\n") && ext.status.code() == Some(2),
        "{}",
        dump(&ext)
    );
}

/// pause and unpause the running `name` (the cgroup freezer), then stop
/// it: SIGTERM reaches its command (not pid 1 here, so it dies of it:
/// 143), and remove it.
pub fn pause_then_stop(e: &impl EngineCli, name: &str) {
    e.ok(&["pause", name]);
    assert_eq!(e.inspect(name, "{{.State.Status}}"), "paused");
    e.ok(&["unpause", name]);
    assert_eq!(e.inspect(name, "{{.State.Status}}"), "running");
    e.ok(&["stop", name]);
    assert_eq!(e.inspect(name, "{{.State.ExitCode}}"), "143");
    e.ok(&["rm", name]);
}

/// `kill -s USR1` reaches the command's trap, whose exit status and
/// output the engine then shows.
pub fn signal_reaches_the_trap(e: &impl EngineCli, image: &str) {
    let script = "trap 'echo got-usr1; exit 7' USR1; echo ready; while :; do sleep 0.05; done";
    e.ok(&e.run_args(&["-d", "--name", "trapper", image, "sh", "-c", script]));
    assert!(
        poll_until(Duration::from_secs(30), || e
            .ok(&["logs", "trapper"])
            .contains("ready")),
        "trapper never got ready"
    );
    e.ok(&["kill", "-s", "USR1", "trapper"]);
    assert_eq!(e.ok(&["wait", "trapper"]).trim(), "7");
    assert_eq!(e.ok(&["logs", "trapper"]), "ready\ngot-usr1\n");
    e.ok(&["rm", "trapper"]);
}

/// `--memory 64m`: a hog (it runs only under the supervisor) is killed,
/// 137, which the engine shows as the exit code of the container `hog`;
/// the caller checks what the engine says of the OOM, then removes it.
pub fn memory_hog_is_killed(e: &impl EngineCli, image: &str) {
    let hog = e.run(&[
        "--name",
        "hog",
        "--memory",
        "64m",
        image,
        "sh",
        "-c",
        "x=a; while :; do x=$x$x; done",
    ]);
    assert_eq!(hog.status.code(), Some(137), "{}", dump(&hog));
    assert_eq!(e.inspect("hog", "{{.State.ExitCode}}"), "137");
}

/// `--ulimit`: the container's processes have the rlimits asked for,
/// soft and hard apart (nofile, nproc, and the core size), as the same
/// shell has them natively under `prlimit` (busybox shows the core size
/// in 512-byte blocks), and the soft nofile limit holds: the ninth
/// descriptor cannot be opened.
pub fn ulimits(e: &impl EngineCli, image: &str) {
    let script = "ulimit -Sn; ulimit -Hn; ulimit -Su; ulimit -Hu; ulimit -Sc; ulimit -Hc; \
                  (exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null \
                  8</dev/null 9</dev/null) 2>/dev/null || echo no-more-fds";
    let out = e.run(&[
        "--rm",
        "--ulimit",
        "nofile=8:200",
        "--ulimit",
        "nproc=50:60",
        "--ulimit",
        "core=0:1024",
        image,
        "sh",
        "-c",
        script,
    ]);
    let native = std::process::Command::new("prlimit")
        .args(["--nofile=8:200", "--nproc=50:60", "--core=0:1024"])
        .args([super::oci::BUSYBOX, "sh", "-c", script])
        .output()
        .expect("run prlimit (util-linux)");
    assert_eq!(
        stdout(&native),
        "8\n200\n50\n60\n0\n2\nno-more-fds\n",
        "natively: {}",
        dump(&native)
    );
    assert_eq!(stdout(&out), stdout(&native), "{}", dump(&out));
}
