//! Tests of publish.rs: spec parsing, a host client through a Publisher
//! into a unix listener standing in for the guest (TCP, 1 MiB each way
//! with half-close; UDP), and bind errors.

use std::io::{Read, Write};
use std::net::Shutdown as NetShutdown;
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};

use super::*;

fn spec(s: &str) -> Result<PublishSpec, String> {
    s.parse()
}

#[test]
fn specs() {
    let p = spec("8080:80").unwrap();
    assert_eq!(p.host, "127.0.0.1:8080".parse().unwrap());
    assert_eq!((p.guest_port, p.proto), (80, Proto::Tcp));
    let p = spec("0.0.0.0:5353:53/udp").unwrap();
    assert_eq!(p.host, "0.0.0.0:5353".parse().unwrap());
    assert_eq!((p.guest_port, p.proto), (53, Proto::Udp));
    let p = spec("[::1]:8888:8888/tcp").unwrap();
    assert_eq!(p.host, "[::1]:8888".parse().unwrap());
    assert_eq!(p.to_string(), "[::1]:8888:8888/tcp");
    for (bad, want) in [
        ("8080", "expected [HOSTIP:]HOSTPORT:GUESTPORT"),
        ("8080:80/sctp", "not tcp or udp"),
        ("0:80", "from 1 to 65535"),
        ("8080:0", "from 1 to 65535"),
        ("8080:70000", "from 1 to 65535"),
        ("8080:+80", "from 1 to 65535"),
        ("localhost:8080:80", "not an IP address"),
        ("::1:8080:80", "go in brackets"),
        ("[::1:8080:80", "expected [IPV6]"),
        ("[1.2.3.4]:8080:80", "not an IPv6 address"),
        ("", "expected [HOSTIP:]HOSTPORT:GUESTPORT"),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(
            e.starts_with(&format!("publish {bad:?}: ")) && e.contains(want),
            "{bad}: {e}"
        );
    }
}

fn any_port(proto: Proto) -> PublishSpec {
    PublishSpec {
        host: "127.0.0.1:0".parse().unwrap(),
        guest_port: 8888,
        proto,
    }
}

#[test]
fn tcp_host_client_reaches_the_guest_listener() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guest.sock");
    let guest = UnixListener::bind(&path).unwrap();
    let guest_thread = std::thread::spawn(move || {
        let (mut c, _) = guest.accept().unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        let reply: Vec<u8> = got.iter().map(|b| b.wrapping_add(1)).collect();
        c.write_all(&reply).unwrap();
        got.len()
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let asked_in = asked.clone();
    let connect: ConnectGuest = Arc::new(move |port, proto| {
        asked_in.lock().unwrap().push((port, proto));
        Ok(UnixStream::connect(&path)?.into())
    });
    let publisher = Publisher::bind(&any_port(Proto::Tcp)).unwrap();
    let addr = publisher.local_addr().unwrap();
    let serving = publisher.serve(connect).unwrap();

    let mut client = TcpStream::connect(addr).unwrap();
    let sent: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    let writer = {
        let mut w = client.try_clone().unwrap();
        let sent = sent.clone();
        std::thread::spawn(move || {
            w.write_all(&sent).unwrap();
            w.shutdown(NetShutdown::Write).unwrap();
        })
    };
    let mut back = Vec::new();
    client.read_to_end(&mut back).unwrap();
    writer.join().unwrap();
    assert_eq!(guest_thread.join().unwrap(), 1 << 20);
    assert!(
        back.iter().zip(&sent).all(|(b, s)| *b == s.wrapping_add(1)) && back.len() == sent.len()
    );
    assert_eq!(*asked.lock().unwrap(), vec![(8888, Proto::Tcp)]);
    serving.stop();
    assert!(
        TcpStream::connect(addr).is_err(),
        "stopped publisher still accepts"
    );
}

#[test]
fn tcp_without_a_guest_listener_closes_the_host_connection() {
    let connect: ConnectGuest =
        Arc::new(|_, _| Err(io::Error::from_raw_os_error(libc::ECONNREFUSED)));
    let publisher = Publisher::bind(&any_port(Proto::Tcp)).unwrap();
    let addr = publisher.local_addr().unwrap();
    let serving = publisher.serve(connect).unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest);
    assert!(rest.is_empty());
    serving.stop();
}

#[test]
fn udp_host_client_reaches_the_guest() {
    let connect: ConnectGuest = Arc::new(|port, proto| {
        assert_eq!((port, proto), (8888, Proto::Udp));
        let (ours, guest) = UnixDatagram::pair()?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok(n) = guest.recv(&mut buf) {
                let mut reply = b"echo:".to_vec();
                reply.extend_from_slice(&buf[..n]);
                if guest.send(&reply).is_err() {
                    break;
                }
            }
        });
        Ok(ours.into())
    });
    let publisher = Publisher::bind(&any_port(Proto::Udp)).unwrap();
    let addr = publisher.local_addr().unwrap();
    let serving = publisher.serve(connect).unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 2048];
    for msg in [&b"one"[..], b"", b"three"] {
        client.send_to(msg, addr).unwrap();
        let (n, from) = client.recv_from(&mut buf).unwrap();
        assert_eq!(from, addr);
        assert_eq!(&buf[..n], [&b"echo:"[..], msg].concat());
    }
    serving.stop();
}

#[test]
fn port_in_use_is_said_plainly() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let spec = spec(&format!("{port}:80")).unwrap();
    let e = Publisher::bind(&spec).err().unwrap();
    assert_eq!(e, format!("port {port} on 127.0.0.1 is in use"));
    let e = Publisher::bind(&self::spec("192.0.2.1:8080:80").unwrap())
        .err()
        .unwrap();
    assert_eq!(e, "192.0.2.1 is not an address of this host");
}
