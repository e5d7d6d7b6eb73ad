//! The netstack's sockets live in the sandbox's own network namespace
//! (issue 4, the socket factory): a host process's abstract unix socket is
//! never reached through the guest's TCP/UDP sockets, an egress relay's
//! socket, or the guest's own unix sockets, with Landlock's scope and
//! without it (the test switch), as root and as the unprivileged user
//! `tester`; the same program run natively does reach it. Also: the
//! loopback suites as `tester`, and the factory dies with the supervisor.
//!
//! The escape runs go through `tests/net/netns_driver.py` inside a fresh
//! network namespace (`unshare -n`): the host listeners, the UDP echo
//! server that `--allow-net` opens to the guest and the supervisor share
//! it, and nothing can leave it.

use crate::common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DRIVER: &str = include_str!("netns_driver.py");
const TCP_SUITE: &str = include_str!("tcp_suite.py");
const UDP: &str = include_str!("udp.py");
const PY: &str = "/usr/bin/python3";
const TESTER: (u32, u32) = (1001, 1001);

/// Environment variable that turns Landlock's scope off (init.rs).
const NO_LANDLOCK: &str = "SUPERVISOR_TEST_NO_LANDLOCK";

/// What a sandboxed run prints: every try refused inside the sandbox's
/// namespace, each as Linux's TCP and UDP answer an `AF_UNIX` name (every
/// call that carries one is serviced); and the netstack's unix names
/// cannot be learned inside (the served /proc/net/unix hides them and no
/// netstack socket can send to a unix socket of the guest's), so the
/// driver reads one from outside and hands it over: the guest's own unix
/// socket is then refused by Landlock's abstract-socket scope (EPERM: the
/// netstack made that socket outside the guest's domain), and reaches it
/// when the test switch leaves Landlock out (`scoped` false), which shows
/// that the scope is what refuses it.
fn sandboxed_expected(scoped: bool) -> String {
    // An AF_UNIX name: the kernel's udp_sendmsg answers EAFNOSUPPORT,
    // udpv6_sendmsg EINVAL (a family it does not know).
    let tries = |kind: &str| {
        let e = if kind == "udp6" {
            "EINVAL"
        } else {
            "EAFNOSUPPORT"
        };
        format!("{kind} sendmsg nosignal {e}\n{kind} sendmmsg {e}\n{kind} sendto {e}\n")
    };
    let handed = if scoped { "EPERM" } else { "reached" };
    format!(
        "{udp}udp connect EAFNOSUPPORT\n{udp6}tcp connect EAFNOSUPPORT\n\
         egress udp connect reached\n{egress}\
         own unix sendto ECONNREFUSED\nown unix to a netstack name: asked\n\
         own unix to a netstack name {handed}\n\
         host datagrams 0\nhost connections 0\n",
        udp = tries("udp"),
        udp6 = tries("udp6"),
        egress = tries("egress udp"),
    )
}

/// The driver's output: `mode` native or sandboxed, as `user` (None:
/// root), with extra environment for the supervisor.
fn drive(mode: &str, user: Option<(u32, u32)>, env: &[(&str, &str)]) -> String {
    let prog = c_prog("netns_escape");
    let drop_to = match user {
        Some((uid, gid)) => {
            format!("setpriv --reuid={uid} --regid={gid} --clear-groups -- ")
        }
        None => String::new(),
    };
    let script = format!("ip link set lo up && exec {drop_to}\"$@\"");
    let stdout = driver_stdout(
        Command::new("unshare")
            .args(["-n", "sh", "-c", &script, "sh", PY, "-c", DRIVER])
            .arg(bin())
            .arg(&prog)
            .arg(c_dir())
            .arg(mode)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .envs(env.iter().copied())
            .current_dir("/")
            .stdin(Stdio::null()),
        mode,
    );
    stdout
}

fn check_sandboxed(user: Option<(u32, u32)>) {
    let out = drive("sandboxed", user, &[]);
    assert_eq!(
        out,
        sandboxed_expected(landlock_abi() >= 6),
        "with Landlock"
    );
    // The case that proves the namespace: no Landlock, and still no host
    // name reached; the netstack's own name is, the scope being off.
    let out = drive("sandboxed", user, &[(NO_LANDLOCK, "1")]);
    assert_eq!(out, sandboxed_expected(false), "without Landlock");
}

#[test]
fn natively_the_program_reaches_the_host_name() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let out = drive("native", None, &[]);
    assert!(out.contains("own unix sendto reached\n"), "{out}");
    assert!(
        out.ends_with("host datagrams 1\nhost connections 0\n"),
        "{out}"
    );
}

#[test]
fn guest_sockets_never_reach_host_abstract_names() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    check_sandboxed(None);
}

#[test]
fn guest_sockets_never_reach_host_abstract_names_as_tester() {
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester (uid 1001)");
    }
    let native = drive("native", Some(TESTER), &[]);
    assert!(
        native.ends_with("host datagrams 1\nhost connections 0\n"),
        "{native}"
    );
    check_sandboxed(Some(TESTER));
}

/// `run` as `tester`: supervised inside a fresh network namespace.
fn as_tester(run: Run) -> Run {
    let mut run = run.cwd("/tmp");
    run.wrap = [
        "unshare",
        "-n",
        "setpriv",
        "--reuid=1001",
        "--regid=1001",
        "--clear-groups",
        "--",
    ]
    .iter()
    .map(Into::into)
    .collect();
    run
}

#[test]
fn loopback_suites_as_tester_match_native() {
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester (uid 1001)");
    }
    for script in [TCP_SUITE, UDP] {
        let run = Run::new(&[PY, "-c", script]).cwd("/tmp");
        let native = run.clone().user(TESTER.0, TESTER.1).native().ok("native");
        let sandboxed = as_tester(run).supervised().ok("sandboxed as tester");
        assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
        assert!(native.stdout.ends_with("done\n"));
    }
}

/// Every child of `pid` (threads included).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[test]
fn the_socket_factory_dies_with_the_supervisor() {
    let mut child = Command::new(bin())
        .args(["run", "--", "/bin/sleep", "60"])
        .current_dir("/tmp")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn supervisor");
    let pid = child.id();
    // Init and the factory; wait until both exist (bounded, not timed).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut kids = children(pid);
    while kids.len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        kids = children(pid);
    }
    assert!(kids.len() >= 2, "children of the supervisor: {kids:?}");
    child.kill().expect("kill our supervisor");
    child.wait().expect("reap it");
    let deadline = Instant::now() + Duration::from_secs(30);
    let alive = |p: &u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .is_ok_and(|s| procfs::StatLine::parse(&s).and_then(|l| l.state()) != Some('Z'))
    };
    while kids.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<_> = kids.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
