//! A connected UDP socket's port unreachable through an egress relay
//! (`--allow-net 127.0.0.1:PORT` to a host port nobody has bound):
//! Linux keeps the ICMP error as the socket's and reports it once, at
//! its next receive, send or SO_ERROR. The relay's host socket meets it
//! and keeps it for the guest socket's next serviced call
//! (`netstack::Egress::take_error`; docs/egress.md, "What the guest sees
//! of its relays"). `tests/net/egress_refused.py` natively and under the
//! supervisor, as root and as `tester`: the same lines, but for a plain
//! `recv`, which passes the filter to the host `AF_UNIX` socket and meets
//! the relay's mark (`netstack::mark`) as the kernel's ECONNRESET.

use crate::common;
use common::*;

const GUEST: &str = include_str!("egress_refused.py");

/// What Linux answers (the native run).
const LINUX: &str = "send ok\nrecvfrom ECONNREFUSED\nrecvfrom again EAGAIN\n\
                     send ok\nrecvmsg ECONNREFUSED\nsend ok\n\
                     so_error ECONNREFUSED\nso_error again 0\n\
                     sendmsg ECONNREFUSED\nsendto peer ECONNREFUSED\n\
                     unconnected sendto ok\nunconnected recvfrom EAGAIN\n\
                     recv ECONNREFUSED\ndone\n";

/// A UDP port of the host's loopback nobody had bound a moment ago.
fn closed_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("binding a free port");
    s.local_addr().expect("its address").port()
}

/// The guest natively and supervised (`bin`, as `user` if given) against
/// a closed port: Linux's lines both, but the plain `recv`'s.
fn compare(bin: &std::path::Path, user: Option<(u32, u32)>) {
    let port = closed_udp_port().to_string();
    let mut run = Run::new(&["/usr/bin/python3", "-c", GUEST, &port])
        .bin(bin)
        .sup(&["--allow-net", &format!("127.0.0.1:{port}")]);
    if let Some((uid, gid)) = user {
        run = run.user(uid, gid);
    }
    let native = run.native().ok("native");
    assert_eq!(native.stdout, LINUX, "{}", native.dump());
    let sandboxed = run.supervised().ok("sandboxed");
    let expected = LINUX.replace("\nrecv ECONNREFUSED", "\nrecv ECONNRESET");
    assert_eq!(sandboxed.stdout, expected, "{}", sandboxed.dump());
}

#[test]
fn a_relayed_connected_udp_socket_reports_a_port_unreachable_as_natively() {
    compare(&bin(), None);
}

#[test]
fn an_unprivileged_relayed_connected_udp_socket_reports_a_port_unreachable() {
    let Ok((uid, gid, bin)) = tester_bin() else {
        skip!("needs root and the user tester");
    };
    compare(&bin, Some((uid, gid)));
}
