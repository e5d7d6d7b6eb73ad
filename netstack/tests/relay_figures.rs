//! What the relay costs, against a TCP server on the host's 127.0.0.1:
//! bulk throughput and one-byte round trips, straight over TCP and through
//! a unix socketpair plus `relay_stream` (the path of allowed egress).
//! Prints the figures (`cargo test --release -p sandbox-netstack --test
//! relay_figures -- --nocapture`); asserts only that every byte arrived.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

use netstack::relay::relay_stream;

const BULK: usize = 64 << 20;
const PINGS: usize = 2000;
const RUNS: usize = 5;

/// 'B': count bytes to EOF, answer the count. 'P': echo each byte.
fn start_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            thread::spawn(move || {
                c.set_nodelay(true).unwrap();
                let mut mode = [0u8];
                c.read_exact(&mut mode).unwrap();
                let mut buf = vec![0u8; 1 << 16];
                let mut total = 0u64;
                loop {
                    let n = c.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                    if mode[0] == b'P' {
                        c.write_all(&buf[..n]).unwrap();
                    }
                }
                if mode[0] == b'B' {
                    c.write_all(&total.to_le_bytes()).unwrap();
                }
            });
        }
    });
    addr
}

trait Conn: Read + Write + Send {
    fn half_close(&self);
}
impl Conn for TcpStream {
    fn half_close(&self) {
        self.shutdown(Shutdown::Write).unwrap();
    }
}
impl Conn for UnixStream {
    fn half_close(&self) {
        self.shutdown(Shutdown::Write).unwrap();
    }
}

fn direct(addr: SocketAddr) -> Box<dyn Conn> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    Box::new(s)
}

fn relayed(addr: SocketAddr) -> Box<dyn Conn> {
    let upstream = TcpStream::connect(addr).unwrap();
    upstream.set_nodelay(true).unwrap();
    let (app, guest_end) = UnixStream::pair().unwrap();
    thread::spawn(move || relay_stream(guest_end.into(), upstream.into()));
    Box::new(app)
}

fn bulk(mut c: Box<dyn Conn>) -> Duration {
    let chunk = vec![7u8; 1 << 16];
    let start = Instant::now();
    c.write_all(b"B").unwrap();
    for _ in 0..BULK / chunk.len() {
        c.write_all(&chunk).unwrap();
    }
    c.half_close();
    let mut count = [0u8; 8];
    c.read_exact(&mut count).unwrap();
    let took = start.elapsed();
    assert_eq!(u64::from_le_bytes(count), BULK as u64);
    took
}

fn pings(mut c: Box<dyn Conn>) -> Duration {
    c.write_all(b"P").unwrap();
    let mut times = Vec::with_capacity(PINGS);
    let mut b = [0u8];
    for i in 0..PINGS {
        let start = Instant::now();
        c.write_all(&[i as u8]).unwrap();
        c.read_exact(&mut b).unwrap();
        times.push(start.elapsed());
        assert_eq!(b[0], i as u8);
    }
    times.sort();
    times[times.len() / 2]
}

fn best<T: Ord>(runs: impl Iterator<Item = T>) -> T {
    runs.min().unwrap()
}

#[test]
fn relay_throughput_and_round_trip_against_direct() {
    let addr = start_server();
    let mibs = |d: Duration| (BULK >> 20) as f64 / d.as_secs_f64();
    // Interleaved, best of 5: other work on the machine hits both alike.
    let (mut bulk_direct, mut bulk_relayed) = (Vec::new(), Vec::new());
    let (mut rtt_direct, mut rtt_relayed) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        bulk_direct.push(bulk(direct(addr)));
        bulk_relayed.push(bulk(relayed(addr)));
        rtt_direct.push(pings(direct(addr)));
        rtt_relayed.push(pings(relayed(addr)));
    }
    let [bulk_direct, bulk_relayed, rtt_direct, rtt_relayed] =
        [bulk_direct, bulk_relayed, rtt_direct, rtt_relayed].map(|v| best(v.into_iter()));
    println!(
        "relay bulk ({} MiB, best of {RUNS}): direct {:.0} MiB/s, relayed {:.0} MiB/s ({:.2}x)",
        BULK >> 20,
        mibs(bulk_direct),
        mibs(bulk_relayed),
        mibs(bulk_relayed) / mibs(bulk_direct)
    );
    println!(
        "relay round trip (1 byte, median of {PINGS}, best of {RUNS}): direct {:.1} us, relayed {:.1} us ({:.2}x)",
        rtt_direct.as_secs_f64() * 1e6,
        rtt_relayed.as_secs_f64() * 1e6,
        rtt_relayed.as_secs_f64() / rtt_direct.as_secs_f64()
    );
}
