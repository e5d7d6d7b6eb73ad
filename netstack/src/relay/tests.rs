//! Tests of relay.rs: 1 MiB each way with half-close over socketpairs and
//! through a 127.0.0.1 TCP server, datagram boundaries, and endings.

use std::io::{Read, Write};
use std::net::{Shutdown as NetShutdown, TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::thread;

use super::*;

const MIB: usize = 1 << 20;

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Writes `out`, half-closes, then reads to EOF: what a client does.
fn client<S: Read + Write + Send + 'static>(
    mut s: S,
    out: Vec<u8>,
    half: impl Fn(&S) + Send + 'static,
) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        s.write_all(&out).unwrap();
        half(&s);
        let mut back = Vec::new();
        s.read_to_end(&mut back).unwrap();
        back
    })
}

/// Reads to EOF, then answers `reply` and closes: a server that needs
/// the half-close to know the request is complete.
fn server<S: Read + Write + Send + 'static>(
    mut s: S,
    reply: Vec<u8>,
) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        s.write_all(&reply).unwrap();
        got
    })
}

#[test]
fn stream_one_mib_each_way_with_half_close_over_socketpairs() {
    let (guest_app, guest_end) = UnixStream::pair().unwrap();
    let (host_end, host_app) = UnixStream::pair().unwrap();
    let relay = thread::spawn(move || relay_stream(guest_end.into(), host_end.into()));
    let c = client(guest_app, pattern(1, MIB), |s| {
        s.shutdown(NetShutdown::Write).unwrap()
    });
    let s = server(host_app, pattern(2, MIB));
    assert!(s.join().unwrap() == pattern(1, MIB));
    assert!(c.join().unwrap() == pattern(2, MIB));
    let stats = relay.join().unwrap();
    assert_eq!(
        stats,
        StreamStats {
            a_to_b: MIB as u64,
            b_to_a: MIB as u64
        }
    );
}

#[test]
fn stream_relays_non_blocking_descriptors() {
    let (guest_app, guest_end) = UnixStream::pair().unwrap();
    let (host_end, host_app) = UnixStream::pair().unwrap();
    guest_end.set_nonblocking(true).unwrap();
    host_end.set_nonblocking(true).unwrap();
    let relay = thread::spawn(move || relay_stream(guest_end.into(), host_end.into()));
    let c = client(guest_app, pattern(6, MIB), |s| {
        s.shutdown(NetShutdown::Write).unwrap()
    });
    let s = server(host_app, pattern(7, MIB));
    assert!(s.join().unwrap() == pattern(6, MIB));
    assert!(c.join().unwrap() == pattern(7, MIB));
    assert_eq!(relay.join().unwrap().a_to_b, MIB as u64);
}

#[test]
fn stream_through_a_loopback_tcp_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        server(conn, pattern(4, MIB)).join().unwrap()
    });
    let (guest_app, guest_end) = UnixStream::pair().unwrap();
    let upstream = TcpStream::connect(addr).unwrap();
    let relay = thread::spawn(move || relay_stream(guest_end.into(), upstream.into()));
    let c = client(guest_app, pattern(3, MIB), |s| {
        s.shutdown(NetShutdown::Write).unwrap()
    });
    assert!(srv.join().unwrap() == pattern(3, MIB));
    assert!(c.join().unwrap() == pattern(4, MIB));
    assert_eq!(relay.join().unwrap().b_to_a, MIB as u64);
}

#[test]
fn stream_ends_when_a_peer_vanishes() {
    let (guest_app, guest_end) = UnixStream::pair().unwrap();
    let (host_end, host_app) = UnixStream::pair().unwrap();
    let relay = thread::spawn(move || relay_stream(guest_end.into(), host_end.into()));
    // The host side goes away: the guest reads EOF, and what it then
    // writes has nowhere to go, which ends the relay rather than hanging.
    drop(host_app);
    let mut g = guest_app;
    let mut rest = Vec::new();
    g.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    let _ = g.write_all(&pattern(5, MIB));
    let stats = relay.join().unwrap();
    assert_eq!(stats.b_to_a, 0);
    assert!(stats.a_to_b < MIB as u64);
}

fn check_datagrams(mut a_app: impl FnMut(&[u8]), mut b_recv: impl FnMut(&mut [u8]) -> usize) {
    let sizes = [1usize, 0, 1000, 60000, 7];
    for (i, n) in sizes.iter().enumerate() {
        a_app(&pattern(i as u8, *n));
    }
    let mut buf = vec![0u8; 70000];
    for (i, n) in sizes.iter().enumerate() {
        let got = b_recv(&mut buf);
        assert_eq!(got, *n, "datagram {i}");
        assert!(buf[..got] == pattern(i as u8, *n)[..], "datagram {i}");
    }
}

#[test]
fn datagrams_keep_their_boundaries() {
    let (guest_app, guest_end) = UnixDatagram::pair().unwrap();
    let (host_end, host_app) = UnixDatagram::pair().unwrap();
    guest_app
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    host_app
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let relay = thread::spawn(move || {
        relay_datagrams(
            guest_end.into(),
            host_end.into(),
            Duration::from_secs(60),
            drop,
        )
    });
    check_datagrams(
        |d| {
            guest_app.send(d).unwrap();
        },
        |b| host_app.recv(b).unwrap(),
    );
    check_datagrams(
        |d| {
            host_app.send(d).unwrap();
        },
        |b| guest_app.recv(b).unwrap(),
    );
    // The guest's side going away ends the relay at the next datagram.
    drop(guest_app);
    host_app.send(b"late").unwrap();
    let stats = relay.join().unwrap();
    assert_eq!((stats.a_to_b, stats.b_to_a), (5, 5));
}

#[test]
fn datagrams_through_loopback_udp() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    upstream.connect(server.local_addr().unwrap()).unwrap();
    let (guest_app, guest_end) = UnixDatagram::pair().unwrap();
    guest_app
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let relay = thread::spawn(move || {
        relay_datagrams(
            guest_end.into(),
            upstream.into(),
            Duration::from_millis(300),
            |e| panic!("no error expected: {e}"),
        )
    });
    let mut peer = None;
    check_datagrams(
        |d| {
            guest_app.send(d).unwrap();
        },
        |b| {
            let (n, from) = server.recv_from(b).unwrap();
            peer = Some(from);
            n
        },
    );
    let peer = peer.unwrap();
    check_datagrams(
        |d| {
            server.send_to(d, peer).unwrap();
        },
        |b| guest_app.recv(b).unwrap(),
    );
    // Nothing more: the relay ends once it has been idle.
    let stats = relay.join().unwrap();
    assert_eq!((stats.a_to_b, stats.b_to_a, stats.dropped), (5, 5, 0));
}

#[test]
fn datagram_relay_ends_on_shutdown() {
    let (_guest_app, guest_end) = UnixDatagram::pair().unwrap();
    let (host_end, _host_app) = UnixDatagram::pair().unwrap();
    let stopper = host_end.try_clone().unwrap();
    let relay = thread::spawn(move || {
        relay_datagrams(
            guest_end.into(),
            host_end.into(),
            Duration::from_secs(3600),
            drop,
        )
    });
    stopper.shutdown(NetShutdown::Both).unwrap();
    assert_eq!(relay.join().unwrap(), DatagramStats::default());
}

/// A connected UDP socket's port unreachable is taken from it and told,
/// once per datagram refused, and the relay goes on (the pending error no
/// longer polls POLLERR): idle, it ends.
#[test]
fn a_port_unreachable_is_told_and_taken() {
    let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    upstream.connect(closed.local_addr().unwrap()).unwrap();
    drop(closed);
    let (guest_app, guest_end) = UnixDatagram::pair().unwrap();
    let (told, errors) = std::sync::mpsc::channel();
    let (ended, end) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let stats = relay_datagrams(
            guest_end.into(),
            upstream.into(),
            Duration::from_millis(300),
            |e| told.send(e).unwrap(),
        );
        ended.send(stats).unwrap();
    });
    let wait = Duration::from_secs(30);
    for _ in 0..2 {
        guest_app.send(b"x").unwrap();
        assert_eq!(errors.recv_timeout(wait), Ok(Errno::ECONNREFUSED));
    }
    let stats = end
        .recv_timeout(wait)
        .expect("the relay went idle and ended");
    assert_eq!(stats.a_to_b, 2);
}
