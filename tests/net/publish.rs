//! `--publish` (issue 4): a guest server reached from the host. A guest
//! HTTP server on 8000 behind `--publish 127.0.0.1:PORT:8000`, and a guest
//! UDP echo server behind `.../udp`; the clients are this test, on the
//! host's loopback. The guest sees its clients at 127.0.0.1.
//!
//! Until the guest listens, a host connection is accepted and closed at
//! once (a datagram is dropped), so the clients retry until the guest is up.

use crate::common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HTTP_GUEST: &str = r#"
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello %s from %s\n" % (self.path, self.client_address[0])).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever()
"#;

const UDP_GUEST: &str = r#"
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9000))
while True:
    data, src = s.recvfrom(65536)
    s.sendto(b"%s from %s" % (data, src[0].encode()), src)
"#;

/// The supervisor serving `script` with `--publish SPEC`.
fn publish(spec: &str, script: &str) -> Child {
    Command::new(bin())
        .args([
            "run",
            "--publish",
            spec,
            "--",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn supervisor")
}

/// Ends the supervisor (it forwards SIGTERM to the guest).
fn stop(mut child: Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
}

/// `f` until it gives something, for at most 30 s (a bound, not a test).
fn retry<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    (!text.is_empty()).then_some(text)
}

#[test]
fn tcp_published_port_reaches_a_guest_http_server() {
    let port = free_port();
    let child = publish(&format!("127.0.0.1:{port}:8000"), HTTP_GUEST);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let first = retry(|| http_get(addr, "/first"));
    // Several connections, one after another and at once.
    let many: Vec<_> = (0..8)
        .map(|i| std::thread::spawn(move || http_get(addr, &format!("/{i}"))))
        .collect();
    let many: Vec<_> = many.into_iter().map(|t| t.join().ok().flatten()).collect();
    stop(child);
    let first = first.expect("the guest server never answered");
    assert!(first.starts_with("HTTP/1.0 200"), "{first}");
    assert!(first.ends_with("hello /first from 127.0.0.1\n"), "{first}");
    for (i, got) in many.iter().enumerate() {
        let got = got.as_deref().unwrap_or("");
        assert!(
            got.ends_with(&format!("hello /{i} from 127.0.0.1\n")),
            "{got}"
        );
    }
}

#[test]
fn udp_published_port_reaches_a_guest_echo_server() {
    let port = {
        let u = UdpSocket::bind("127.0.0.1:0").expect("bind");
        u.local_addr().expect("addr").port()
    };
    let child = publish(&format!("127.0.0.1:{port}:9000/udp"), UDP_GUEST);
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
    client
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    client.connect(("127.0.0.1", port)).expect("connect");
    let mut buf = [0u8; 256];
    // The answer to `msg`, past the late answers to an earlier message's
    // retries (one answered after its 200 ms wait was sent again, and
    // answered twice): those answer the earlier question, not this one.
    let mut ask = |msg: &str, earlier: Option<&str>| {
        client.send(msg.as_bytes()).ok()?;
        loop {
            let n = client.recv(&mut buf).ok()?;
            let got = String::from_utf8_lossy(&buf[..n]).into_owned();
            if !earlier.is_some_and(|e| got.starts_with(&format!("{e} from "))) {
                return Some(got);
            }
        }
    };
    let first = retry(|| ask("ping", None));
    let second = retry(|| ask("again", Some("ping")));
    stop(child);
    assert_eq!(first.as_deref(), Some("ping from 127.0.0.1"));
    assert_eq!(second.as_deref(), Some("again from 127.0.0.1"));
}

#[test]
fn a_taken_host_port_fails_the_run_in_one_line() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let out = Command::new(bin())
        .args([
            "run",
            "--publish",
            &format!("127.0.0.1:{port}:80"),
            "--",
            "/bin/true",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("port {port} on 127.0.0.1 is in use")),
        "{stderr}"
    );
}
