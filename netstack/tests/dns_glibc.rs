//! The DNS stub against the real C library: Python's getaddrinfo (glibc)
//! in a fresh network namespace whose resolv.conf names the stub at
//! 127.0.0.53, over UDP and, for an answer too big for 512 bytes, over
//! TCP after the truncated UDP answer. The host's resolver is a fake, so
//! nothing leaves the namespace. Needs root (a network namespace); skipped
//! otherwise.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::Arc;

use netstack::dns::{DnsStub, HostResolver, Lookup, STUB_ADDR, STUB_PORT};
use netstack::rules::{AllowList, Resolved, Rule};

struct Fake(HashMap<&'static str, Vec<IpAddr>>);

impl HostResolver for Fake {
    fn lookup(&self, name: &str) -> Lookup {
        match self.0.get(name) {
            Some(ips) => Lookup::Found(ips.clone()),
            None => Lookup::NoSuchName,
        }
    }
}

const SCRIPT: &str = r#"
import socket, sys
for name in sys.argv[1:]:
    try:
        got = sorted({a[4][0] for a in socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)})
        print(name, len(got), " ".join(got[:3]))
    except socket.gaierror as e:
        print(name, "error", e.errno)
"#;

#[test]
fn glibc_resolves_through_the_stub() {
    if !nix::unistd::geteuid().is_root() || !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return;
    }
    // The namespace is this thread's alone; children forked from it share it.
    let out = std::thread::spawn(run_in_fresh_netns).join().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "Pkg.Example.NET 2 2001:db8::223 203.0.113.200",
            "many.example.org 100 203.0.113.0 203.0.113.1 203.0.113.10",
            "evil.com error -2",
            "example.org error -2",
        ],
        "{out}"
    );
}

fn run_in_fresh_netns() -> String {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .unwrap();
    assert!(up.success());
    let mut table = HashMap::new();
    table.insert(
        "pkg.example.net",
        vec![
            "203.0.113.200".parse().unwrap(),
            "2001:db8::223".parse().unwrap(),
        ],
    );
    let many = (0..100u32)
        .map(|i| IpAddr::V4((0xcb00_7100 + i).into()))
        .collect();
    table.insert("many.example.org", many);
    let rules = ["pkg.example.net", "*.example.org"].map(|r| Rule::parse(r).unwrap());
    let resolved = Arc::new(Resolved::new());
    let stub = Arc::new(DnsStub::new(
        Arc::new(AllowList::new(rules.to_vec())),
        resolved.clone(),
        Box::new(Fake(table)),
    ));
    let at = SocketAddr::new(IpAddr::V4(STUB_ADDR), STUB_PORT);
    let udp = UdpSocket::bind(at).unwrap();
    let tcp = TcpListener::bind(at).unwrap();
    let udp_stub = stub.clone();
    std::thread::spawn(move || udp_stub.serve_datagrams(udp.as_fd()));
    std::thread::spawn(move || {
        for conn in tcp.incoming().flatten() {
            let _ = stub.serve_stream(conn);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("resolv.conf");
    std::fs::write(
        &rc,
        format!("nameserver {STUB_ADDR}\noptions ndots:0 attempts:1\n"),
    )
    .unwrap();
    let out = Command::new("unshare")
        .arg("-m")
        .arg("sh")
        .arg("-c")
        .arg("mount --bind \"$1\" /etc/resolv.conf && shift && exec /usr/bin/python3 -c \"$@\"")
        .args(["sh", rc.to_str().unwrap(), SCRIPT])
        .args([
            "Pkg.Example.NET",
            "many.example.org",
            "evil.com",
            "example.org",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        resolved.names_of("203.0.113.200".parse().unwrap()),
        ["pkg.example.net"]
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
