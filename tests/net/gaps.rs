//! Where TCP and the netstack's host `AF_UNIX` sockets part (issue 4):
//! listen on an unbound socket autobinds (wildcard, ephemeral port); an
//! empty send on a connection whose peer closed returns 0; a
//! non-blocking connect to a listener whose backlog is full answers
//! EINPROGRESS, polls nothing until the listener accepts, then writable
//! with SO_ERROR 0 (ECONNREFUSED when the listener closes instead);
//! /proc/net/tcp, tcp6, udp and udp6 list the guest's sockets (state,
//! addresses, owner, the inode of its descriptors; psutil finds them),
//! and /proc/net/unix lists the guest's own unix sockets, none of the
//! netstack's; a UDP connect to a loopback port nobody has bound
//! succeeds (autobound, peer reported), ECONNREFUSED comes after it, and
//! a reconnect to a bound port keeps the local port.
//! `tests/net/gaps.py` runs each case natively and sandboxed, as root
//! and as `tester`; the outputs must match.

use crate::common;
use common::*;

const SCRIPT: &str = include_str!("gaps.py");
const PY: &str = "/usr/bin/python3";

/// Runs one case natively and sandboxed (as `user` when given), checks
/// the native output has `want` and the sandboxed one is the same.
fn like_native(case: &str, user: Option<(u32, u32)>, want: &[&str]) {
    let mut run = Run::new(&[PY, "-c", SCRIPT, case]).cwd("/tmp");
    if let Some((uid, gid)) = user {
        run = run.user(uid, gid);
    }
    let native = run.native().ok("native");
    for line in want {
        assert!(
            native.stdout.contains(line),
            "{line:?} not in {}",
            native.stdout
        );
    }
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

const LISTEN: &[&str] = &[
    "AF_INET autobound 0.0.0.0 True\nAF_INET data b'hi'\n",
    "AF_INET6 autobound :: True\nAF_INET6 data b'hi'\n",
    "bound keeps its port True\nudp listen ENOTSUP\nexit 0\n",
];
const EMPTY: &[&str] = &["recv after close b''\nempty send 0\nsendall empty ok\n"];
const BACKLOG: &[&str] = &[
    "connect EINPROGRESS\npoll []\nso_error pending 0\nagain EALREADY\n",
    "done events [4]\nso_error 0\nconnect after 0\nname 127.0.0.1 True\n",
    "accepted b'ping' True\nreply b'pong'\n",
    "connect2 EINPROGRESS\nclosed listener polls True\nso_error2 ECONNREFUSED\n",
    "connect3 EINPROGRESS\nfirst accepted True\nabandoned connect never arrives\n",
];

#[test]
fn listen_autobinds_like_native() {
    like_native("listen", None, LISTEN);
}

#[test]
fn an_empty_send_after_the_peer_closed_like_native() {
    like_native("empty", None, EMPTY);
}

#[test]
fn a_nonblocking_connect_to_a_full_backlog_like_native() {
    like_native("backlog", None, BACKLOG);
}

const PROCNET: &[&str] = &["tcp accepted state 01 local True remote True uid True\n\
     tcp client state 01 local True remote True uid True\n\
     tcp listener state 0A local True remote True uid True\n\
     tcp6 listener6 state 0A local True remote True uid True\n\
     udp udp state 07 local True remote True uid True\n\
     udp6 udp6 state 07 local True remote True uid True\n\
     unix own 1\nunix netstack names 0\npsutil ['ESTABLISHED', 'LISTEN']\n"];

const UDP_CONNECT: &[&str] = &[
    "AF_INET connect 0\nAF_INET autobound 127.0.0.1 True\nAF_INET peer True\n",
    "AF_INET refused ECONNREFUSED\nAF_INET reconnect 0 True\nAF_INET delivered b'hi' True\n",
    "AF_INET6 connect 0\nAF_INET6 autobound ::1 True\nAF_INET6 peer True\n",
    "AF_INET6 refused ECONNREFUSED\nAF_INET6 reconnect 0 True\n",
    "trick 127.0.0.1\n",
];

#[test]
fn a_udp_connect_to_an_unbound_port_like_native() {
    like_native("udpconnect", None, UDP_CONNECT);
}

#[test]
fn proc_net_lists_the_guests_sockets_like_native() {
    like_native("procnet", None, PROCNET);
}

/// `ss` cannot open its netlink socket inside (sock_diag is refused), and
/// falls back to /proc/net/tcp: it shows the guest's listener.
#[test]
fn ss_and_netstat_show_a_guest_listener() {
    let script = r#"
import socket, subprocess
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen()
port = str(l.getsockname()[1])
for argv in (["ss", "-ltn"], ["netstat", "-ltn"]):
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    print(argv[0], any(("127.0.0.1:" + port) in line and "LISTEN" in line
                       for line in out.splitlines()))
"#;
    if !have("ss") || !have("netstat") {
        skip!("needs ss and netstat");
    }
    let run = Run::new(&[PY, "-c", script]).cwd("/tmp");
    let native = run.native().ok("native");
    assert_eq!(native.stdout, "ss True\nnetstat True\n");
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

#[test]
fn the_gaps_as_tester() {
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester (uid 1001)");
    }
    let cases = [
        ("listen", LISTEN),
        ("empty", EMPTY),
        ("backlog", BACKLOG),
        ("procnet", PROCNET),
        ("udpconnect", UDP_CONNECT),
    ];
    for (case, want) in cases {
        like_native(case, Some((1001, 1001)), want);
    }
}
