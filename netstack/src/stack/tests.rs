//! The stack's bind rules and loopback connections on real host
//! sockets of the test's own network namespace.

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket;

use super::{inode_of, Sock, Stack, EPHEMERAL};
use crate::name::Proto;

fn sock(stack: &Stack, domain: i32, proto: Proto) -> Sock {
    let fd = stack.create(domain, proto, 0, false).unwrap();
    stack.identify(fd).unwrap()
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A UDP socket of `domain` bound to `a`, and its address.
fn udp_bound(stack: &Stack, domain: i32, a: &str) -> (Sock, SocketAddr) {
    let s = sock(stack, domain, Proto::Udp);
    stack.bind(&s, sa(a)).unwrap();
    let at = stack.local_addr(&s);
    (s, at)
}

#[test]
fn bind_listen_connect_accept_by_address() {
    let st = Stack::default();
    let server = sock(&st, libc::AF_INET, Proto::Tcp);
    st.bind(&server, sa("0.0.0.0:0")).unwrap();
    let port = st.local_addr(&server).port();
    assert!((EPHEMERAL.0..=EPHEMERAL.1).contains(&port));
    socket::listen(&server.fd, socket::Backlog::new(8).unwrap()).unwrap();
    let client = sock(&st, libc::AF_INET6, Proto::Tcp);
    let dst = sa(&format!("127.0.0.1:{port}"));
    st.connect_local(&client, dst).unwrap();
    st.set_peer(&client, Some(dst));
    let client = st.identify(client.fd).unwrap();
    let listener = std::os::unix::net::UnixListener::from(server.fd.try_clone().unwrap());
    let conn = OwnedFd::from(listener.accept().unwrap().0);
    let adopted = st.adopt(conn.as_fd(), &server).unwrap();
    let peer = adopted.peer;
    assert_eq!(adopted.local, dst);
    assert_eq!(adopted.inode, inode_of(conn.as_fd()).unwrap());
    assert_eq!(peer.ip(), sa("127.0.0.1:1").ip());
    assert_eq!(peer, st.local_addr(&client));
    assert_eq!(st.peer_addr(&client).unwrap(), dst);
    let accepted = st.identify(conn).unwrap();
    assert_eq!(st.local_addr(&accepted), dst);
}

#[test]
fn bind_rules() {
    let st = Stack::default();
    let a = sock(&st, libc::AF_INET, Proto::Tcp);
    assert_eq!(st.bind(&a, sa("10.0.0.1:80")), Err(Errno::EADDRNOTAVAIL));
    st.bind(&a, sa("127.0.0.1:0")).unwrap();
    let port = st.local_addr(&a).port();
    assert_eq!(st.bind(&a, sa("127.0.0.1:0")), Err(Errno::EINVAL));
    let b = sock(&st, libc::AF_INET, Proto::Tcp);
    assert_eq!(
        st.bind(&b, sa(&format!("0.0.0.0:{port}"))),
        Err(Errno::EADDRINUSE)
    );
    let c = sock(&st, libc::AF_INET6, Proto::Tcp);
    assert_eq!(
        st.bind(&c, sa(&format!("[::]:{port}"))),
        Err(Errno::EADDRINUSE)
    );
    st.bind(&c, sa(&format!("[::1]:{port}"))).unwrap();
    let u = sock(&st, libc::AF_INET, Proto::Udp);
    st.bind(&u, sa(&format!("127.0.0.1:{port}"))).unwrap();
    assert!(st.connect_local(&b, sa("127.0.0.1:1")).is_err());
}

/// A UDP socket's autobind takes a port of the wildcard; a connect sets
/// its source (IPv4 for a UDP IPv6 socket connected to IPv4, which then
/// reaches IPv4 only), a disconnect unsets it.
#[test]
fn udp_source_follows_connect() {
    let st = Stack::default();
    let (_rx, dst) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    let u = sock(&st, libc::AF_INET6, Proto::Udp);
    st.connect_local(&u, dst).unwrap();
    let port = st.local_addr(&u).port();
    assert_eq!(st.local_addr(&u), sa(&format!("[::]:{port}")));
    st.connected_to(&u, dst);
    let u = st.identify(u.fd).unwrap();
    assert_eq!(st.local_addr(&u), sa(&format!("127.0.0.1:{port}")));
    assert_eq!(st.check_source(&u, sa("[::1]:1")), Err(Errno::EAFNOSUPPORT));
    assert_eq!(st.check_source(&u, sa("127.0.0.2:1")), Ok(()));
    // An earlier source stays, as in Linux.
    st.connected_to(&u, sa("[::1]:1"));
    let u = st.identify(u.fd).unwrap();
    assert_eq!(st.local_addr(&u), sa(&format!("127.0.0.1:{port}")));
    st.disconnect(&u).unwrap();
    let u = st.identify(u.fd).unwrap();
    // The autobound port is released (reported 0), and taken again.
    assert_eq!(st.local_addr(&u), sa("[::]:0"));
    st.autobind_port(&u).unwrap();
    let u = st.identify(u.fd).unwrap();
    assert_eq!(st.local_addr(&u), sa(&format!("[::]:{port}")));
    st.connected_to(&u, sa("[::1]:1"));
    let u = st.identify(u.fd).unwrap();
    assert_eq!(st.local_addr(&u), sa(&format!("[::1]:{port}")));
    assert_eq!(st.check_source(&u, dst), Ok(()));
}

/// A sender named by a wildcard shows the loopback address of the
/// family that reached the receiver.
#[test]
fn wildcard_senders_seen_from_loopback() {
    let st = Stack::default();
    let v4 = sock(&st, libc::AF_INET, Proto::Udp);
    assert_eq!(seen(&st, &v4, "[::]:7"), sa("127.0.0.1:7"));
    assert_eq!(seen(&st, &v4, "127.0.0.3:7"), sa("127.0.0.3:7"));
    let v6 = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&v6, sa("[::1]:0")).unwrap();
    assert_eq!(seen(&st, &v6, "[::]:7"), sa("[::1]:7"));
    let mapped = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&mapped, sa("[::ffff:127.0.0.1]:0")).unwrap();
    assert_eq!(seen(&st, &mapped, "[::]:7"), sa("127.0.0.1:7"));
    let dual = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&dual, sa("[::]:0")).unwrap();
    assert_eq!(seen(&st, &dual, "0.0.0.0:7"), sa("127.0.0.1:7"));
    assert_eq!(seen(&st, &dual, "[::]:7"), sa("[::1]:7"));
}

/// What `to` sees of a datagram from a sender that has no name.
fn seen(st: &Stack, to: &Sock, from: &str) -> SocketAddr {
    st.source_seen(to, sa(from), b"", b"", false)
}

/// Receives one datagram on `rx` and returns the sender it shows.
fn received_from(st: &Stack, rx: &Sock) -> SocketAddr {
    let mut buf = [0u8; 16];
    let (n, from) =
        socket::recvfrom::<socket::UnixAddr>(std::os::fd::AsRawFd::as_raw_fd(&rx.fd), &mut buf)
            .unwrap();
    let from = from.unwrap();
    let name = crate::name::abstract_of(&from).unwrap();
    let addr = st.namer.decode(name).unwrap().addr;
    st.source_seen(rx, addr, name, &buf[..n], false)
}

/// A dual-stack receiver bound to `::` sees a sender bound to `::` from
/// `::ffff:127.0.0.1` when its datagram went over IPv4 (a send to an
/// IPv4 address, or any send once connected to one), from ::1 otherwise.
#[test]
fn dual_stack_receiver_sees_the_family_sent_over() {
    let st = Stack::default();
    let (dual, at) = udp_bound(&st, libc::AF_INET6, "[::]:0");
    let port = at.port();
    let (to4, to6) = (
        sa(&format!("127.0.0.1:{port}")),
        sa(&format!("[::1]:{port}")),
    );
    let u = sock(&st, libc::AF_INET6, Proto::Udp);
    let flags = socket::MsgFlags::empty();
    st.send_local(&u, to4, b"four", flags).unwrap();
    let mine = st.identify(u.fd.try_clone().unwrap()).unwrap();
    let mine = |ip: &str| sa(&format!("{ip}:{}", st.local_addr(&mine).port()));
    assert_eq!(received_from(&st, &dual), mine("127.0.0.1"));
    st.send_local(&u, to6, b"six", flags).unwrap();
    assert_eq!(received_from(&st, &dual), mine("[::1]"));
    st.connect_local(&u, to4).unwrap();
    st.connected_to(&u, to4);
    socket::send(std::os::fd::AsRawFd::as_raw_fd(&u.fd), b"conn", flags).unwrap();
    assert_eq!(received_from(&st, &dual), mine("127.0.0.1"));
    st.disconnect(&u).unwrap();
    let u = st.identify(u.fd).unwrap();
    st.send_local(&u, to6, b"six", flags).unwrap();
    assert_eq!(received_from(&st, &dual), mine("[::1]"));
}

/// A disconnect dissolves the host association; a port bound explicitly
/// stays, an address bound explicitly with port 0 keeps the address.
#[test]
fn disconnect_releases_what_was_not_bound() {
    let st = Stack::default();
    let (_rx, dst) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    // A free port, for `b` to bind explicitly.
    let (probe, free) = udp_bound(&st, libc::AF_INET, "0.0.0.0:0");
    let port = free.port();
    let (a, _) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    let b = sock(&st, libc::AF_INET, Proto::Udp);
    drop(probe);
    st.bind(&b, sa(&format!("0.0.0.0:{port}"))).unwrap();
    for s in [&a, &b] {
        let s = st.identify(s.fd.try_clone().unwrap()).unwrap();
        st.connect_local(&s, dst).unwrap();
        st.disconnect(&s).unwrap();
        let s = st.identify(s.fd.try_clone().unwrap()).unwrap();
        assert_eq!(st.peer_addr(&s), Err(Errno::ENOTCONN));
    }
    let a = st.identify(a.fd).unwrap();
    assert_eq!(st.local_addr(&a), sa("127.0.0.1:0"));
    let b = st.identify(b.fd).unwrap();
    assert_eq!(st.local_addr(&b), sa(&format!("0.0.0.0:{port}")));
}

/// What a connected UDP socket has queued stays, from the same sender,
/// through a disconnect and a connect to another peer (a unix datagram
/// socket leaving its peer purges its queue).
#[test]
fn queued_datagrams_stay_when_the_peer_changes() {
    let st = Stack::default();
    let flags = socket::MsgFlags::empty();
    let (r1, at1) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    let (_r2, at2) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    let (u, at) = udp_bound(&st, libc::AF_INET, "127.0.0.1:0");
    st.connect_local(&u, at1).unwrap();
    st.send_local(&r1, at, b"one", flags).unwrap();
    st.disconnect(&u).unwrap();
    let u = st.identify(u.fd).unwrap();
    st.send_local(&r1, at, b"two", flags).unwrap();
    st.connect_local(&u, at2).unwrap();
    for want in [&b"one"[..], b"two"] {
        let mut buf = [0u8; 8];
        let raw = std::os::fd::AsRawFd::as_raw_fd(&u.fd);
        let flags = socket::MsgFlags::MSG_PEEK | socket::MsgFlags::MSG_DONTWAIT;
        let n = socket::recv(raw, &mut buf, flags).unwrap();
        assert_eq!(&buf[..n], want);
        assert_eq!(received_from(&st, &u), at1);
    }
}

/// An egress that names every even loopback port as the host's.
struct EvenPortsToHost;

impl crate::Egress for EvenPortsToHost {
    fn connect(&self, dst: SocketAddr, _proto: Proto) -> Result<OwnedFd, crate::Refusal> {
        Err(crate::Refusal::Failed(match dst.port() % 2 {
            0 => Errno::ECONNREFUSED,
            _ => Errno::ENETUNREACH,
        }))
    }

    fn takes_loopback(&self, dst: SocketAddr, _proto: Proto) -> bool {
        dst.port().is_multiple_of(2)
    }
}

#[test]
fn ephemeral_ports_skip_the_hosts_loopback_ports() {
    let st = Stack::new(Box::new(EvenPortsToHost));
    for _ in 0..64 {
        let listener = sock(&st, libc::AF_INET, Proto::Tcp);
        st.bind(&listener, sa("127.0.0.1:0")).unwrap();
        let client = sock(&st, libc::AF_INET6, Proto::Tcp);
        st.autobind(&client, sa("[::1]:9")).unwrap();
        let udp = sock(&st, libc::AF_INET, Proto::Udp);
        st.autobind_port(&udp).unwrap();
        for s in [&listener, &client, &udp] {
            assert_eq!(st.local_addr(s).port() % 2, 1, "{}", st.local_addr(s));
        }
    }
}
