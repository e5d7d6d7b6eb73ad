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
