//! Tests of the DNS stub: real query bytes (glibc's and dig's), refusals,
//! every response code, truncation, TCP framing, and random bytes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use proptest::prelude::*;

use super::*;
use crate::rules::Rule;

/// A resolver that knows a fixed table and counts its calls.
#[derive(Default)]
struct FakeResolver {
    table: HashMap<String, Lookup>,
    calls: Arc<AtomicUsize>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl HostResolver for FakeResolver {
    fn lookup(&self, name: &str) -> Lookup {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().unwrap().push(name.to_string());
        self.table.get(name).cloned().unwrap_or(Lookup::NoSuchName)
    }
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

struct Fixture {
    stub: DnsStub,
    resolved: Arc<Resolved>,
    calls: Arc<AtomicUsize>,
}

fn fixture(rules: &[&str]) -> Fixture {
    let mut fake = FakeResolver::default();
    fake.table.insert(
        "pkg.example.net".into(),
        Lookup::Found(ips(&["203.0.113.200", "203.0.113.201", "2001:db8::223"])),
    );
    fake.table
        .insert("broken.example.org".into(), Lookup::Failed);
    let many: Vec<IpAddr> = (0..100u32)
        .map(|i| IpAddr::V4((0xcb00_7100 + i).into()))
        .collect();
    fake.table
        .insert("many.example.org".into(), Lookup::Found(many));
    let calls = fake.calls.clone();
    let allow = AllowList::new(rules.iter().map(|r| Rule::parse(r).unwrap()).collect());
    let resolved = Arc::new(Resolved::new());
    Fixture {
        stub: DnsStub::new(Arc::new(allow), resolved.clone(), Box::new(fake)),
        resolved,
        calls,
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// glibc 2.36's A and AAAA queries (captured from Python's getaddrinfo
/// under a resolv.conf naming a local server), the name in them replaced
/// by the reserved "Pkg.Example.NET", its case kept mixed.
const GLIBC_A: &str = "83290100000100000000000003506b67074578616d706c65034e45540000010001";
const GLIBC_AAAA: &str = "4e2f0100000100000000000003506b67074578616d706c65034e455400001c0001";
/// dig 9.18's query for pkg.example.net A: AD and RD set, EDNS (1232) with a cookie.
const DIG_A: &str = "be1d 0120 0001 0000 0000 0001 \
    03 706b67 07 6578616d706c65 03 6e6574 00 0001 0001 \
    00 0029 04d0 00000000 000c 000a 0008 0123456789abcdef";

fn dig() -> Vec<u8> {
    hex(&DIG_A.replace(' ', ""))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// (id, flags, ancount, arcount, addresses) of a response.
fn read(resp: &[u8]) -> (u16, u16, u16, u16, Vec<IpAddr>) {
    let (_, end) = wire::read_name(resp, 12).unwrap();
    let mut pos = end + 4;
    let mut addrs = Vec::new();
    for _ in 0..u16_at(resp, 6) {
        let (_, e) = wire::read_name(resp, pos).unwrap();
        let rdlen = usize::from(u16_at(resp, e + 8));
        let data = &resp[e + 10..e + 10 + rdlen];
        addrs.push(match rdlen {
            4 => IpAddr::from(<[u8; 4]>::try_from(data).unwrap()),
            _ => IpAddr::from(<[u8; 16]>::try_from(data).unwrap()),
        });
        assert_eq!(
            u32::from_be_bytes(resp[e + 4..e + 8].try_into().unwrap()),
            TTL
        );
        pos = e + 10 + rdlen;
    }
    (
        u16_at(resp, 0),
        u16_at(resp, 2),
        u16_at(resp, 6),
        u16_at(resp, 10),
        addrs,
    )
}

#[test]
fn glibc_queries_for_allowed_names_are_resolved_and_recorded() {
    let f = fixture(&["pkg.example.net:443"]);
    let q = hex(GLIBC_A);
    let resp = f.stub.answer(&q, Transport::Udp).unwrap();
    let (id, flags, an, ar, addrs) = read(&resp);
    assert_eq!((id, flags, an, ar), (0x8329, 0x8180, 2, 0));
    assert_eq!(addrs, ips(&["203.0.113.200", "203.0.113.201"]));
    // The question comes back byte for byte, case included.
    assert_eq!(&resp[12..q.len()], &q[12..]);
    assert_eq!(
        f.resolved.names_of(addrs[0]),
        vec!["pkg.example.net".to_string()]
    );

    let resp = f.stub.answer(&hex(GLIBC_AAAA), Transport::Udp).unwrap();
    let (id, flags, an, _, addrs) = read(&resp);
    assert_eq!((id, flags, an), (0x4e2f, 0x8180, 1));
    assert_eq!(addrs, ips(&["2001:db8::223"]));
    assert_eq!(
        f.resolved.names_of(addrs[0]),
        vec!["pkg.example.net".to_string()]
    );
}

#[test]
fn dig_query_with_edns_gets_an_opt_record() {
    let f = fixture(&["pkg.example.net"]);
    let resp = f.stub.answer(&dig(), Transport::Udp).unwrap();
    let (id, flags, an, ar, _) = read(&resp);
    assert_eq!((id, flags, an, ar), (0xbe1d, 0x8180, 2, 1));
    // The OPT record closes the message: root name, type 41, 1232 bytes.
    assert_eq!(
        &resp[resp.len() - 11..],
        &[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]
    );
}

#[test]
fn other_names_get_nxdomain_without_asking_the_host() {
    let f = fixture(&["*.example.org", "203.0.113.0/24"]);
    for q in [hex(GLIBC_A), hex(GLIBC_AAAA), dig()] {
        let resp = f.stub.answer(&q, Transport::Udp).unwrap();
        let (_, flags, an, _, _) = read(&resp);
        assert_eq!((flags & 0xf, an), (3, 0));
        assert_eq!(flags & 0x8180, 0x8180);
    }
    assert_eq!(f.calls.load(Ordering::SeqCst), 0);
    assert!(f
        .resolved
        .names_of("203.0.113.200".parse().unwrap())
        .is_empty());
}

fn query(id: u16, name: &[&[u8]], qtype: u16, qclass: u16) -> Vec<u8> {
    let mut q = Vec::new();
    for v in [id, 0x0100, 1, 0, 0, 0] {
        q.extend_from_slice(&v.to_be_bytes());
    }
    for l in name {
        q.push(l.len() as u8);
        q.extend_from_slice(l);
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&qclass.to_be_bytes());
    q
}

fn rcode(f: &Fixture, q: &[u8]) -> u16 {
    u16_at(&f.stub.answer(q, Transport::Udp).unwrap(), 2) & 0xf
}

#[test]
fn response_codes() {
    let f = fixture(&["*.example.org", "pkg.example.net"]);
    let pkg: &[&[u8]] = &[b"pkg", b"example", b"net"];
    assert_eq!(
        rcode(&f, &query(1, pkg, 16, 1)),
        0,
        "TXT of an allowed name"
    );
    assert_eq!(
        read(
            &f.stub
                .answer(&query(1, pkg, 16, 1), Transport::Udp)
                .unwrap()
        )
        .2,
        0
    );
    assert_eq!(
        rcode(&f, &query(1, &[b"nope", b"example", b"org"], 1, 1)),
        3
    );
    assert_eq!(
        rcode(&f, &query(1, &[b"broken", b"example", b"org"], 1, 1)),
        2
    );
    assert_eq!(rcode(&f, &query(1, &[b"example", b"org"], 1, 1)), 3, "apex");
    assert_eq!(rcode(&f, &query(1, pkg, 1, 3)), 4, "class CH");
    assert_eq!(rcode(&f, &query(1, &[b"x\0", b"example", b"org"], 1, 1)), 3);
    assert_eq!(rcode(&f, &query(1, &[b"x.y", b"example", b"org"], 1, 1)), 3);
    let mut status = query(1, pkg, 1, 1);
    status[2] |= 2 << 3; // opcode STATUS
    assert_eq!(rcode(&f, &status), 4);
    let mut two = query(1, pkg, 1, 1);
    two[5] = 2;
    assert_eq!(rcode(&f, &two), 1);
    let mut response = query(1, pkg, 1, 1);
    response[2] |= 0x80;
    assert_eq!(f.stub.answer(&response, Transport::Udp), None);
    assert_eq!(f.stub.answer(&[1, 2, 3], Transport::Udp), None);
    assert_eq!(f.stub.answer(&[], Transport::Udp), None);
}

#[test]
fn hostile_names_are_formerr() {
    let f = fixture(&["pkg.example.net"]);
    let header = &hex(GLIBC_A)[..12];
    let cases: &[&[u8]] = &[
        &[0xc0, 12, 0, 1, 0, 1],      // pointer to itself
        &[0xc0, 40, 0, 1, 0, 1],      // forward pointer
        &[0x80, 0, 0, 1, 0, 1],       // reserved label type
        &[4, b'p', b'y', 0, 1],       // label past the end
        &[4, b'p', b'y', b'p', b'i'], // no terminator
        &[0],                         // no type and class
    ];
    for tail in cases {
        let q = [header, tail].concat();
        assert_eq!(rcode(&f, &q), 1, "{tail:?}");
    }
    let mut long = header.to_vec();
    for _ in 0..5 {
        long.push(63);
        long.extend_from_slice(&[b'a'; 63]);
    }
    long.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert_eq!(rcode(&f, &long), 1, "name over 255 bytes");
}

#[test]
fn udp_answers_are_truncated_tcp_ones_are_not() {
    let f = fixture(&["many.example.org"]);
    let q = query(7, &[b"many", b"example", b"org"], 1, 1);
    let udp = f.stub.answer(&q, Transport::Udp).unwrap();
    let (_, flags, an, _, _) = read(&udp);
    assert!(
        udp.len() <= 512 && an > 0 && an < 100,
        "{} bytes, {an} answers",
        udp.len()
    );
    assert_eq!(flags & 0x0200, 0x0200, "TC");
    let tcp = f.stub.answer(&q, Transport::Tcp).unwrap();
    let (_, flags, an, _, _) = read(&tcp);
    assert_eq!((an, flags & 0x0200), (100, 0));
}

#[test]
fn tcp_framing() {
    use std::os::unix::net::UnixStream;
    let f = fixture(&["pkg.example.net"]);
    let (mut client, server) = UnixStream::pair().unwrap();
    let stub = std::thread::scope(|s| {
        let h = s.spawn(|| f.stub.serve_stream(server));
        let mut both = frame(&hex(GLIBC_A));
        both.extend_from_slice(&frame(&hex(GLIBC_AAAA)));
        client.write_all(&both).unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let a = read_frame(&mut client).unwrap().unwrap();
        let aaaa = read_frame(&mut client).unwrap().unwrap();
        assert_eq!(read(&a).0, 0x8329);
        assert_eq!(read(&aaaa).4, ips(&["2001:db8::223"]));
        assert_eq!(read_frame(&mut client).unwrap(), None);
        h.join().unwrap()
    });
    stub.unwrap();
    // A frame cut short is an error, not a hang or a panic.
    let mut cut: &[u8] = &[0, 40, 1, 2];
    assert!(read_frame(&mut cut).is_err());
}

#[test]
fn datagram_service_over_udp_and_unix_sockets() {
    use std::net::UdpSocket;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixDatagram;
    use std::time::Duration;
    let f = fixture(&["pkg.example.net"]);
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stub_path = dir.path().join("stub");
    let unix_server = UnixDatagram::bind(&stub_path).unwrap();
    let unix_client = UnixDatagram::bind(dir.path().join("client")).unwrap();
    unix_client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    std::thread::scope(|s| {
        let udp = s.spawn(|| f.stub.serve_datagrams(server.as_fd()));
        let unix = s.spawn(|| f.stub.serve_datagrams(unix_server.as_fd()));
        let mut buf = [0u8; 600];
        // Scraps get no answer; the next query still does.
        client.send_to(&[1, 2, 3], addr).unwrap();
        client.send_to(&hex(GLIBC_A), addr).unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(read(&buf[..n]).2, 2);
        unix_client.send_to(&hex(GLIBC_AAAA), &stub_path).unwrap();
        let n = unix_client.recv(&mut buf).unwrap();
        assert_eq!(read(&buf[..n]).4, ips(&["2001:db8::223"]));
        // Shutting the socket down ends the service (an unconnected UDP
        // socket says ENOTCONN, and is shut down all the same).
        use nix::sys::socket::{shutdown, Shutdown};
        let _ = shutdown(server.as_raw_fd(), Shutdown::Both);
        let _ = shutdown(unix_server.as_raw_fd(), Shutdown::Both);
        udp.join().unwrap().unwrap();
        unix.join().unwrap().unwrap();
    });
}

#[test]
fn system_resolver_reads_the_hosts_file() {
    // /etc/hosts names localhost on every machine this runs on; no DNS
    // server is asked for it.
    match SystemResolver.lookup("localhost") {
        Lookup::Found(ips) => assert!(ips.iter().all(|ip| ip.is_loopback()), "{ips:?}"),
        other => panic!("localhost: {other:?}"),
    }
}

#[test]
fn system_resolver_errors_are_classified() {
    assert!(is_no_such_name(
        "failed to lookup address information: Name or service not known"
    ));
    assert!(!is_no_such_name(
        "failed to lookup address information: Temporary failure in name resolution"
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let f = fixture(&["pkg.example.net", "*.example.org"]);
        for t in [Transport::Udp, Transport::Tcp] {
            if let Some(r) = f.stub.answer(&bytes, t) {
                prop_assert!(r.len() >= 12);
            }
        }
    }

    #[test]
    fn mutated_queries_never_panic(
        flips in proptest::collection::vec((0usize..64, any::<u8>()), 1..8),
        cut in 0usize..64,
    ) {
        let f = fixture(&["pkg.example.net"]);
        let mut q = dig();
        for (at, v) in flips {
            if let Some(b) = q.get_mut(at) {
                *b = v;
            }
        }
        q.truncate(q.len().saturating_sub(cut % 8));
        if let Some(r) = f.stub.answer(&q, Transport::Udp) {
            prop_assert!(r.len() <= wire::UDP_EDNS_MAX);
        }
    }
}
