use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::{UnixDatagram, UnixStream};

use super::*;
use crate::rules::Rule;

fn outbound(rules: &[&str]) -> Outbound {
    let rules = rules.iter().map(|r| Rule::parse(r).unwrap()).collect();
    Outbound::new(
        Arc::new(AllowList::new(rules)),
        Arc::new(Resolved::new()),
        Namer::new("0123456789abcdef"),
        Arc::new(crate::sockets::LocalSockets),
    )
}

#[test]
fn tcp_to_an_allowed_host_loopback_server_is_relayed() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = server.local_addr().unwrap();
    let out = outbound(&[&format!("127.0.0.1:{}", dst.port())]);
    let conn = out.connect(dst, Proto::Tcp).unwrap();
    let mut guest = UnixStream::from(conn);
    let (mut peer, _) = server.accept().unwrap();
    guest.write_all(b"ping").unwrap();
    guest.shutdown(std::net::Shutdown::Write).unwrap();
    let mut got = Vec::new();
    peer.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"ping");
    peer.write_all(b"pong").unwrap();
    drop(peer);
    let mut back = Vec::new();
    guest.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"pong");
}

#[test]
fn refused_host_connect_is_the_errno_not_a_denial() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = server.local_addr().unwrap();
    drop(server);
    let out = outbound(&[&format!("127.0.0.1:{}", dst.port())]);
    assert_eq!(
        out.connect(dst, Proto::Tcp).unwrap_err(),
        Refusal::Failed(Errno::ECONNREFUSED)
    );
}

#[test]
fn host_loopback_needs_an_explicit_rule() {
    let dst: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for rules in [&[][..], &["0.0.0.0/0"][..], &["127.0.0.1:10"][..]] {
        match outbound(rules).connect(dst, Proto::Tcp) {
            Err(Refusal::Denied(_)) => {}
            other => panic!("{rules:?}: {other:?}"),
        }
    }
}

#[test]
fn unconnected_udp_replies_come_from_the_destination_name() {
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dst = echo.local_addr().unwrap();
    let out = outbound(&["127.0.0.1"]);
    let namer = Namer::new("0123456789abcdef");
    let guest = UnixDatagram::unbound().unwrap();
    let me = namer.encode(Proto::Udp, "127.0.0.1:40000".parse().unwrap(), false);
    socket::bind(guest.as_raw_fd(), &UnixAddr::new_abstract(&me).unwrap()).unwrap();
    let fd = std::os::fd::AsFd::as_fd(&guest);
    assert_eq!(out.send_to(fd, dst, b"one").unwrap(), 3);
    let mut buf = [0u8; 16];
    let (n, from) = echo.recv_from(&mut buf).unwrap();
    echo.send_to(&buf[..n], from).unwrap();
    let (n, from) = socket::recvfrom::<UnixAddr>(guest.as_raw_fd(), &mut buf).unwrap();
    assert_eq!(&buf[..n], b"one");
    let name = from
        .and_then(|a| a.as_abstract().map(<[u8]>::to_vec))
        .unwrap();
    assert_eq!(namer.decode(&name).unwrap().addr, dst);
    // A second datagram reuses the session (same host port).
    out.send_to(fd, dst, b"two").unwrap();
    let (_, again) = echo.recv_from(&mut buf).unwrap();
    assert_eq!(again, from_session(&out));
    assert_eq!(out.sessions.lock().len(), 1);
}

fn from_session(out: &Outbound) -> SocketAddr {
    let sessions = out.sessions.lock();
    let s = sessions.values().next().unwrap();
    s.host.local_addr().unwrap()
}

#[test]
fn relays_are_bounded_and_freed() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = server.local_addr().unwrap();
    let out = outbound(&[&format!("127.0.0.1:{}", dst.port())]);
    out.relays.store(MAX_RELAYS - 1, Ordering::SeqCst);
    let last = out.connect(dst, Proto::Tcp).unwrap();
    assert_eq!(
        out.connect(dst, Proto::Tcp).unwrap_err(),
        Refusal::Failed(Errno::ENOBUFS)
    );
    // Both ends closing ends the relay, which frees its slot.
    drop(last);
    drop(server.accept().unwrap());
    while out.relays.load(Ordering::SeqCst) == MAX_RELAYS {
        thread::sleep(Duration::from_millis(5));
    }
    assert!(out.connect(dst, Proto::Tcp).is_ok());
}
