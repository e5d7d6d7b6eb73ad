//! Loopback networking benchmarks (`cargo bench --bench net`): the
//! netstack's serviced calls and its data path, native against sandboxed.
//!
//! Owns: the criterion suite. It drives tests/c/net_bench_guest.c (built
//! here with `cc -O2`), one long-lived copy natively and one under
//! `supervisor run`, with bench_guest's protocol: "NAME N" on stdin, the
//! nanoseconds N iterations took on stdout, so no sandbox start-up enters
//! a figure.
//!
//! Stable ids (group/function, each with `native` and `supervised`):
//! net_connect_accept (socket + connect + accept + two closes),
//! net_getsockname, net_tcp_rr_64 (64-byte request/response over one
//! connection to an echo thread), net_tcp_bulk_64k (per 64 KiB written to
//! a draining thread), net_udp_rr_64 (a 64-byte datagram to an echo
//! thread and back, sendto/recvfrom with addresses: serviced),
//! net_udp_rr_64_msg (the same through sendmsg/recvmsg with names and
//! no control messages), net_udp_rr_64_ancillary (the same through sendmsg with an IP_TTL
//! control message and recvmsg reporting IP_PKTINFO and IP_TTL),
//! net_udp_rr_64_connected (connected sockets, send/recv: native),
//! net_relay_rr_64 and net_relay_bulk_64k (the same request/response and
//! bulk protocols against servers this bench runs on the host's
//! 127.0.0.1: sandboxed, that is egress through the netstack's relay,
//! allowed by `--allow-net 127.0.0.1:PORT`). A summary of medians, ratios
//! and throughput is printed at the end.
//!
//! Environment: SUPERVISOR_BIN overrides the supervisor binary.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

mod common;

use common::{median, record, supervisor_bin, Guest, Samples};

/// (criterion group, guest command).
const CALLS: &[(&str, &str)] = &[
    ("net_connect_accept", "connect_accept"),
    ("net_getsockname", "getsockname"),
    ("net_tcp_rr_64", "tcp_rr"),
    ("net_tcp_bulk_64k", "tcp_bulk"),
    ("net_udp_rr_64", "udp_rr"),
    ("net_udp_rr_64_msg", "udp_rr_msg"),
    ("net_udp_rr_64_ancillary", "udp_rr_ancil"),
    ("net_udp_rr_64_connected", "udp_rr_conn"),
    ("net_relay_rr_64", "relay_rr"),
    ("net_relay_bulk_64k", "relay_bulk"),
];
const GUEST_DIR: &str = "/netbench";

fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/net_bench_guest.c");
    let out = dir.join("net_bench_guest");
    let status = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-I"])
        .arg(src.with_file_name("include"))
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(status.success(), "cc {}: {status}", src.display());
    out
}

/// A server on the host's 127.0.0.1 that runs `serve` on every
/// connection in a thread of its own; its port.
fn host_server(serve: fn(TcpStream) -> std::io::Result<()>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a host server");
    let port = listener.local_addr().expect("its port").port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let _ = conn.set_nodelay(true);
            std::thread::spawn(move || serve(conn));
        }
    });
    port
}

/// The guest's `echo`: 64 bytes back for every 64 received.
fn echo(mut conn: TcpStream) -> std::io::Result<()> {
    let mut b = [0u8; 64];
    loop {
        conn.read_exact(&mut b)?;
        conn.write_all(&b)?;
    }
}

/// The guest's `drain`: a count, that many 64 KiB chunks, one byte back.
fn drain(mut conn: TcpStream) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 65536];
    loop {
        let mut count = [0u8; 8];
        conn.read_exact(&mut count)?;
        for _ in 0..u64::from_ne_bytes(count) {
            conn.read_exact(&mut chunk)?;
        }
        conn.write_all(b"k")?;
    }
}

fn summary(samples: &Samples) {
    let Ok(map) = samples.lock() else { return };
    println!("\n| bench | native | supervised | supervised/native |");
    println!("|---|---|---|---|");
    for (group, _) in CALLS {
        let get = |l: &str| map.get(&format!("{group}/{l}")).and_then(|v| median(v));
        let (Some(n), Some(s)) = (get("native"), get("supervised")) else {
            continue;
        };
        println!(
            "| {group} | {:.2} µs | {:.2} µs | {:.2}x |",
            n / 1e3,
            s / 1e3,
            s / n
        );
        if *group == "net_tcp_bulk_64k" || *group == "net_relay_bulk_64k" {
            let gbps = |ns: f64| 65536.0 / ns;
            println!(
                "| bulk throughput | {:.2} GB/s | {:.2} GB/s | {:.2}x |",
                gbps(n),
                gbps(s),
                n / s
            );
        }
    }
}

fn main() {
    let mut c = common::criterion();
    let tmp = tempfile::tempdir().expect("tempdir");
    let prog = build(tmp.path());
    let samples: Samples = Arc::default();
    let ports = [host_server(echo), host_server(drain)].map(|p| p.to_string());
    let mut native = Command::new(&prog);
    native.args(&ports);
    let native = Guest::spawn("native", native).expect("native guest");
    let mut sup = Command::new(supervisor_bin());
    sup.arg("run")
        .arg("--ro")
        .arg(format!("{}:{GUEST_DIR}", tmp.path().display()));
    for port in &ports {
        sup.arg(format!("--allow-net=127.0.0.1:{port}"));
    }
    sup.arg("--")
        .arg(format!("{GUEST_DIR}/net_bench_guest"))
        .args(&ports);
    let supervised = Guest::spawn("supervised", sup).expect("supervised guest");
    let guests = [
        Arc::new(Mutex::new(native)),
        Arc::new(Mutex::new(supervised)),
    ];
    for (group, call) in CALLS {
        let mut g = c.benchmark_group(*group);
        for guest in &guests {
            let label = guest.lock().map(|g| g.label).unwrap_or("?");
            let (guest, samples) = (Arc::clone(guest), Arc::clone(&samples));
            let id = format!("{group}/{label}");
            g.bench_function(label, move |b| {
                b.iter_custom(|iters| {
                    let d = guest
                        .lock()
                        .map_err(|_| "poisoned".to_string())
                        .and_then(|mut g| g.run(call, iters))
                        .unwrap_or_else(|e| panic!("{e}"));
                    record(&samples, &id, d, iters);
                    d
                })
            });
        }
        g.finish();
    }
    c.final_summary();
    summary(&samples);
}
