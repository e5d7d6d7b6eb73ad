//! The stack's bind rules and loopback connections on real host
//! sockets of the test's own network namespace.

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket;

use super::{Sock, Stack, EPHEMERAL};
use crate::name::Proto;

fn sock(stack: &Stack, domain: i32, proto: Proto) -> Sock {
    let fd = stack.create(domain, proto, 0, false).unwrap();
    stack.identify(fd).unwrap()
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
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
    let peer = st.adopt(conn.as_fd(), &server).unwrap();
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
    let rx = sock(&st, libc::AF_INET, Proto::Udp);
    st.bind(&rx, sa("127.0.0.1:0")).unwrap();
    let dst = st.local_addr(&rx);
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
    st.disconnect(&u);
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
    assert_eq!(st.source_seen(&v4, sa("[::]:7")), sa("127.0.0.1:7"));
    assert_eq!(st.source_seen(&v4, sa("127.0.0.3:7")), sa("127.0.0.3:7"));
    let v6 = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&v6, sa("[::1]:0")).unwrap();
    assert_eq!(st.source_seen(&v6, sa("[::]:7")), sa("[::1]:7"));
    let mapped = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&mapped, sa("[::ffff:127.0.0.1]:0")).unwrap();
    assert_eq!(st.source_seen(&mapped, sa("[::]:7")), sa("127.0.0.1:7"));
    let dual = sock(&st, libc::AF_INET6, Proto::Udp);
    st.bind(&dual, sa("[::]:0")).unwrap();
    assert_eq!(st.source_seen(&dual, sa("0.0.0.0:7")), sa("127.0.0.1:7"));
    assert_eq!(st.source_seen(&dual, sa("[::]:7")), sa("[::1]:7"));
}
