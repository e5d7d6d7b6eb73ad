//! A connected UDP socket whose destination refuses it (a 127.0.0.1 port
//! nobody has bound): Linux answers each datagram with a port
//! unreachable, kept as the socket's error and reported once — POLLERR,
//! a waiting receive woken, the next receive, send or SO_ERROR failing
//! with ECONNREFUSED. Under the supervisor the refusal is the sandbox's
//! loopback's (a stand-in for the closed port, `netstack::refused`) or
//! an egress relay's (`--allow-net 127.0.0.1:PORT`,
//! `netstack::outbound`), and both mark the guest's host socket
//! (`netstack::mark`). `tests/net/udp_refused.py` natively and under the
//! supervisor: the same lines, but for the calls that pass the filter
//! to the host `AF_UNIX` socket (a plain `recv`, `send`), which meet the
//! mark as the kernel's ECONNRESET (docs/network.md, "Sends and receives
//! that take a msghdr").

use crate::common;
use common::*;

const GUEST: &str = include_str!("udp_refused.py");

/// What Linux answers (the native run).
const LINUX: &str = "connect ok\nsend ok\nrecv ECONNREFUSED\nrecv again EAGAIN\n\
                     poll again none\nsend ok\npoll ERR\npoll in|out OUT|ERR\n\
                     recvfrom ECONNREFUSED\npoll after OUT\nsend ok\npoll ERR\n\
                     send after ECONNREFUSED\nsend ok\npoll ERR\nso_error ECONNREFUSED\n\
                     so_error again 0\nsend ok\npoll ERR\nrecvmmsg ECONNREFUSED\n\
                     recvmmsg again EAGAIN\ndone\n";

/// A UDP port of the host's loopback nobody had bound a moment ago.
fn closed_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("binding a free port");
    s.local_addr().expect("its address").port()
}

/// The guest natively and supervised (`bin`, as `user` if given; the
/// closed port the sandbox's, or with `egress` the host's through a
/// relay): Linux's lines both, but the plain calls' errno.
fn compare(bin: &std::path::Path, user: Option<(u32, u32)>, egress: bool) {
    let port = closed_udp_port().to_string();
    let allow = format!("127.0.0.1:{port}");
    let sup = if egress {
        vec!["--allow-net", &allow]
    } else {
        vec![]
    };
    let mut run = Run::new(&["/usr/bin/python3", "-c", GUEST, &port])
        .bin(bin)
        .sup(&sup);
    if let Some((uid, gid)) = user {
        run = run.user(uid, gid);
    }
    let native = run.native().ok("native");
    assert_eq!(native.stdout, LINUX, "{}", native.dump());
    let sandboxed = run.supervised().ok("sandboxed");
    let expected = LINUX
        .replace("\nrecv ECONNREFUSED", "\nrecv ECONNRESET")
        .replace("send after ECONNREFUSED", "send after ECONNRESET");
    assert_eq!(sandboxed.stdout, expected, "{}", sandboxed.dump());
}

#[test]
fn a_udp_socket_connected_to_a_closed_loopback_port_is_refused_as_natively() {
    compare(&bin(), None, false);
}

#[test]
fn a_relayed_udp_socket_is_refused_as_natively() {
    compare(&bin(), None, true);
}

#[test]
fn an_unprivileged_udp_socket_is_refused_as_natively() {
    let Ok((uid, gid, bin)) = tester_bin() else {
        skip!("needs root and the user tester");
    };
    compare(&bin, Some((uid, gid)), false);
    compare(&bin, Some((uid, gid)), true);
}
