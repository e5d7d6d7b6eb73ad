//! The netstack's UDP and the C-level socket semantics (issue 4):
//! sendto/recvfrom v4 and v6, connected UDP, asyncio datagram endpoints,
//! and a C program (tests/c/netprobe.c) checking options, non-blocking
//! connect, half-close, MSG_PEEK/MSG_DONTWAIT/MSG_TRUNC and errnos,
//! compared with a native run; a UDP IPv6 socket talking to IPv4
//! through v4-mapped addresses and UDP disconnects (tests/c/udp6map.c) and glibc's
//! getaddrinfo, which sorts its answers that way (tests/net/gai.py), and
//! sends and receives on sockets without a peer (tests/c/nopeer.c), each
//! compared with a native run in a network namespace of its own.

use crate::common;
use common::*;

use std::path::Path;

const PY: &str = "/usr/bin/python3";
const UDP: &str = include_str!("udp.py");

fn isolated(mut run: Run) -> Run {
    run.wrap = vec!["unshare".into(), "-n".into()];
    run
}

#[test]
fn c_socket_semantics_match_native() {
    let prog = c_prog("netprobe");
    let run = Run::new(&[&prog]).sup(&c_mounts());
    let native = run.native().ok("native netprobe");
    let sandboxed = isolated(run).supervised().ok("sandboxed netprobe");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

#[test]
fn python_udp_matches_native() {
    let run = Run::new(&[PY, "-c", UDP]);
    let native = run.native().ok("native udp");
    let sandboxed = isolated(run).supervised().ok("sandboxed udp");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    assert!(native.stdout.ends_with("done\n"));
}

#[test]
fn python_udp_over_ipv6() {
    let out = isolated(Run::new(&[PY, "-c", UDP, "v6"]))
        .supervised()
        .ok("udp v6");
    out.assert_lines(&[
        "udp ::1 b'ping' True",
        "back b'pong'",
        "connected ::1 b'conn' True True",
        "asyncio udp ::1 b'PING'",
        "done",
    ]);
}

/// `unshare -n` with `lo` up, and `binds` (host file, target) mounted
/// over the native run's files (a private mount namespace).
fn native_netns(argv: &[&str], binds: &[(&Path, &str)]) -> Run {
    let mut script = String::new();
    for (i, _) in binds.iter().enumerate() {
        script += &format!("mount --bind \"${}\" \"${}\" && ", 2 * i + 1, 2 * i + 2);
    }
    let n = 2 * binds.len();
    script += &format!("shift {n} && ip link set lo up && exec \"$@\"");
    let mut v: Vec<String> = ["unshare", "-n", "-m", "sh", "-c", &script, "sh"]
        .map(String::from)
        .to_vec();
    for (host, target) in binds {
        v.push(host.display().to_string());
        v.push((*target).to_owned());
    }
    v.extend(argv.iter().map(|a| a.to_string()));
    Run::new(&v)
}

/// tests/c/NAME run natively in a network namespace of its own (`lo`
/// up) and sandboxed in another: (native, sandboxed), both successful.
fn native_and_sandboxed(name: &str) -> (Out, Out) {
    let prog = c_prog(name);
    let prog = prog.to_str().expect("utf-8 path");
    let native = native_netns(&[prog], &[])
        .native()
        .ok(&format!("native {name}"));
    let run = Run::new(&[prog]).sup(&c_mounts());
    let sandboxed = isolated(run).supervised().ok(&format!("sandboxed {name}"));
    (native, sandboxed)
}

/// A UDP IPv6 socket talking to an IPv4 one (v4-mapped): connect with an
/// AF_INET or a v4-mapped address, the names, both directions of data,
/// sendto without connect, a disconnect and reconnect to the other
/// family, and IPV6_V6ONLY's refusals; a dual-stack receiver's view of a
/// sender bound to `::` (v4-mapped over IPv4); what a disconnect keeps
/// of UDP sockets bound every way, of both families (tests/c/udp6map.c),
/// as natively.
#[test]
fn udp6_talks_to_ipv4_as_native() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let (native, sandboxed) = native_and_sandboxed("udp6map");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    for line in [
        "inet connect = 0\n",
        "dual inet dual received ping from: inet6 ::ffff:127.0.0.1 port len 28\n",
        "disconnect inet6 none connected getsockname after: inet6 :: port0 len 28\n",
    ] {
        assert!(native.stdout.contains(line), "{line}: {}", native.stdout);
    }
}

/// glibc's getaddrinfo sorts its answers with a UDP socket per family
/// (an AF_INET6 one connected to an IPv4 answer must report a v4-mapped
/// source): the same list in the same order as natively with the
/// sandbox's /etc/hosts, under the default address selection and one
/// that prefers IPv4 (where an answer whose connect failed would sort
/// last).
#[test]
fn getaddrinfo_sorts_as_native() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    const GAI: &str = include_str!("gai.py");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gai");
    std::fs::create_dir_all(&dir).expect("gai dir");
    let hosts = Run::new(&["/bin/cat", "/etc/hosts"])
        .supervised()
        .ok("the sandbox's /etc/hosts");
    let hosts_file = dir.join("hosts");
    std::fs::write(&hosts_file, &hosts.stdout).expect("write hosts");
    let prefer_v4 = dir.join("gai.conf");
    std::fs::write(
        &prefer_v4,
        "precedence ::1/128 50\nprecedence ::/0 40\nprecedence 2002::/16 30\n\
         precedence ::/96 20\nprecedence ::ffff:0:0/96 100\n",
    )
    .expect("write gai.conf");
    let default = Path::new("/etc/gai.conf");
    for conf in [default, prefer_v4.as_path()] {
        let mut binds = vec![(hosts_file.as_path(), "/etc/hosts")];
        let mut sup = vec![];
        if conf != default {
            binds.push((conf, "/etc/gai.conf"));
            sup = vec![
                "--ro".to_string(),
                format!("{}:/etc/gai.conf", conf.display()),
            ];
        }
        let native = native_netns(&[PY, "-c", GAI], &binds)
            .native()
            .ok("native getaddrinfo");
        let run = Run::new(&[PY, "-c", GAI]).sup(&sup);
        let sandboxed = isolated(run).supervised().ok("sandboxed getaddrinfo");
        assert_eq!(
            sandboxed.stdout,
            native.stdout,
            "{conf:?}: {}",
            sandboxed.dump()
        );
        assert!(native.stdout.ends_with("done\n"));
    }
}

/// What tests/c/nopeer.c prints differently in the sandbox: (kind, the
/// label's last words, Linux's answer, the sandbox's). These calls run
/// natively on the host `AF_UNIX` socket, which answers as a unix socket
/// does (a unix datagram socket without a peer ENOTCONN, a unix stream
/// socket never connected ENOTCONN on a send, without SIGPIPE, and
/// EINVAL on a receive), and a disconnect cannot release an autobound
/// UDP port (docs/network.md, "UDP disconnect").
const NOPEER_GAPS: &[(&str, &str, &str, &str)] = &[
    ("udp", "sendto NULL", "-1 EDESTADDRREQ", "-1 ENOTCONN"),
    ("udp", "send", "-1 EDESTADDRREQ", "-1 ENOTCONN"),
    ("udp", "write", "-1 EDESTADDRREQ", "-1 ENOTCONN"),
    ("udp", "write empty", "-1 EDESTADDRREQ", "-1 ENOTCONN"),
    ("tcp", "send", "-1 EPIPE", "-1 ENOTCONN"),
    ("tcp", "send sigpipe", "1", "0"),
    ("tcp", "write", "-1 EPIPE", "-1 ENOTCONN"),
    ("tcp", "write sigpipe", "1", "0"),
    ("tcp", "send nosignal", "-1 EPIPE", "-1 ENOTCONN"),
    ("tcp", "recv", "-1 ENOTCONN", "-1 EINVAL"),
    ("tcp", "read", "-1 ENOTCONN", "-1 EINVAL"),
    ("release", "other binds the old port", "0", "-1 EADDRINUSE"),
    ("release", "a new port", "1", "0"),
];

/// The known difference `label` falls under, if any.
fn nopeer_gap(label: &str) -> Option<usize> {
    NOPEER_GAPS.iter().position(|(kind, last, _, _)| {
        label.starts_with(&format!("{kind} ")) && label.ends_with(&format!(" {last}"))
    })
}

/// Sends and receives on UDP and TCP sockets without a peer, the port
/// of a disconnected UDP socket, and the queue of a connected one that
/// disconnects and connects elsewhere (tests/c/nopeer.c): as natively,
/// line by line, but for the calls that run natively on the host socket
/// ([`NOPEER_GAPS`], each checked for both its answers). The serviced
/// ones answer as Linux: an empty `sendto` without an address, and a
/// `sendmsg` or `sendmmsg` without a name (MSG_NOSIGNAL or not), on an
/// unconnected UDP socket EDESTADDRREQ
/// after an autobind, a TCP `recvmsg` before connect ENOTCONN, a TCP
/// send's EPIPE with its SIGPIPE, and the datagrams queued on a UDP
/// socket stay when its peer changes.
#[test]
fn no_peer_answers_as_native() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let (native, sandboxed) = native_and_sandboxed("nopeer");
    let (ours, linux): (Vec<_>, Vec<_>) = (
        sandboxed.stdout.lines().collect(),
        native.stdout.lines().collect(),
    );
    assert_eq!(ours.len(), linux.len(), "{}", sandboxed.dump());
    let mut seen = vec![0; NOPEER_GAPS.len()];
    for (o, l) in ours.iter().zip(&linux) {
        let (label, value) = l.split_once(" = ").unwrap_or((l, ""));
        let Some(i) = nopeer_gap(label) else {
            assert_eq!(o, l, "{}", sandboxed.dump());
            continue;
        };
        let (_, _, theirs, mine) = NOPEER_GAPS[i];
        assert_eq!((value, *o), (theirs, format!("{label} = {mine}").as_str()));
        seen[i] += 1;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}: {}", native.stdout);
    for line in [
        "udp inet none sendmsg = -1 EDESTADDRREQ",
        "udp inet6 port0 sendto NULL empty bound = 1",
        "tcp inet fresh recvmsg = -1 ENOTCONN",
        "tcp inet6 listening sendmsg sigpipe = 1",
        "release inet sent port 0 = 1",
        "kept inet6 peer sends again = 1",
        "kept inet6 received b from = 1",
    ] {
        assert!(linux.contains(&line), "{line}: {}", native.stdout);
    }
}
