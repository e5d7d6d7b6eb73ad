//! Container networks through an engine (Docker or Podman): a
//! user-defined bridge network of the engine's, the container's network
//! namespace given by the engine. A sandboxed web server is reached on a
//! published port of the host's loopback (`-p 127.0.0.1:PORT:80`, the
//! engine's proxy connecting to the container's address) and by name from
//! another container on the network, sandboxed or not; a sandboxed client
//! reaches a server run by the engine's default runtime by name (egress
//! from the container's namespace, the engine's DNS). Each result is
//! compared with the same client under the default runtime. A sandboxed
//! container joining the web server's network namespace (`--network
//! container:web`) shares its loopback and has its hostname. A guest's
//! UDP server on 0.0.0.0 echoes through `-p PORT:5353/udp` and on the
//! container's address.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use crate::common::engine::{dump, poll_until, stdout};
use crate::common::engine_cli::EngineCli;
use crate::common::free_port;

/// The page the servers serve.
const PAGE: &str = "hello-from-web\n";

/// A container command that serves [`PAGE`] on port 80 with busybox's
/// httpd (in the foreground).
const SERVE: &str = "busybox mkdir -p /www && echo hello-from-web > /www/index.html && \
                     exec busybox httpd -f -p 80 -h /www";

/// The body of `GET /index.html` from 127.0.0.1:`port`, if any.
fn fetch(port: u16) -> Option<String> {
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// `wget` of `http://NAME/index.html` from a container on `net`, with
/// the sandbox (`sandboxed`) or the engine's default runtime, retried for
/// up to 60 s (a server may still be starting); its last output.
fn fetch_by_name(
    e: &impl EngineCli,
    net: &str,
    image: &str,
    name: &str,
    sandboxed: bool,
) -> String {
    let url = format!("http://{name}/index.html");
    let args = [
        "--rm",
        "--network",
        net,
        image,
        "busybox",
        "wget",
        "-qO-",
        &url,
    ];
    let mut last = String::new();
    let got = poll_until(Duration::from_secs(60), || {
        let out = match sandboxed {
            true => e.run(&args),
            false => e.output(&[&["run"][..], &args[..]].concat()),
        };
        last = dump(&out);
        stdout(&out) == PAGE
    });
    assert!(got, "{url} (sandboxed: {sandboxed}): {last}");
    PAGE.to_string()
}

/// The cases on a network `net` the test creates (and removes), on the
/// subnet `subnet`.
pub fn container_networks(e: &impl EngineCli, image: &str, net: &str, subnet: &str) {
    e.ok(&["network", "create", "--subnet", subnet, net]);
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    e.ok(&e.run_args(&[
        "-d",
        "--name",
        "web",
        "--network",
        net,
        "-p",
        &publish,
        image,
        "sh",
        "-c",
        SERVE,
    ]));
    // The engine's proxy on the host's loopback reaches the sandboxed
    // server on the container's address.
    let mut body = None;
    let served = poll_until(Duration::from_secs(60), || {
        body = fetch(port);
        body.as_deref() == Some(PAGE)
    });
    assert!(served, "-p {publish}: {body:?}");
    // By name, from a container of the default runtime and from a
    // sandboxed one: the same page.
    assert_eq!(fetch_by_name(e, net, image, "web", false), PAGE);
    assert_eq!(fetch_by_name(e, net, image, "web", true), PAGE);
    // A sandboxed client reaches a server of the default runtime by name.
    e.ok(&[
        "run",
        "-d",
        "--name",
        "web-native",
        "--network",
        net,
        image,
        "sh",
        "-c",
        SERVE,
    ]);
    assert_eq!(fetch_by_name(e, net, image, "web-native", false), PAGE);
    assert_eq!(fetch_by_name(e, net, image, "web-native", true), PAGE);
    // The guest's resolv.conf and hosts are the engine's (its DNS), as
    // under the default runtime.
    let script = "busybox cat /etc/resolv.conf; busybox grep -c . /etc/hosts";
    let ours = e.run(&["--rm", "--network", net, image, "sh", "-c", script]);
    let native = e.output(&["run", "--rm", "--network", net, image, "sh", "-c", script]);
    assert!(ours.status.success(), "{}", dump(&ours));
    assert_eq!(stdout(&ours), stdout(&native), "{}", dump(&ours));
    // --network container:web shares web's loopback: a server web's
    // guest runs on 127.0.0.1 alone (busybox httpd without -f goes to
    // the background) is the joining container's to reach there.
    e.ok(&[
        "exec",
        "web",
        "busybox",
        "httpd",
        "-p",
        "127.0.0.1:8081",
        "-h",
        "/www",
    ]);
    let args = [
        "--rm",
        "--network",
        "container:web",
        image,
        "busybox",
        "wget",
        "-qO-",
        "http://127.0.0.1:8081/index.html",
    ];
    let mut last = String::new();
    let shared = poll_until(Duration::from_secs(30), || {
        let out = e.run(&args);
        last = dump(&out);
        stdout(&out) == PAGE
    });
    assert!(shared, "--network container:web, 127.0.0.1:8081: {last}");
    // It has web's hostname too (the engine gives it; its UTS namespace
    // is its own, as under runc).
    let hostname = e.run(&["--rm", "--network", "container:web", image, "hostname"]);
    assert_eq!(
        stdout(&hostname),
        e.ok(&["exec", "web", "hostname"]),
        "{}",
        dump(&hostname)
    );
    udp_published(e, image, net);
    e.ok(&["rm", "-f", "web", "web-native"]);
    e.ok(&["network", "rm", net]);
}

/// A guest's UDP socket bound to 0.0.0.0:5353 is published on the
/// container's address: `-p 127.0.0.1:PORT:5353/udp` (the engine's proxy
/// sending to the container's address) and the container's address
/// itself echo a datagram from the host.
fn udp_published(e: &impl EngineCli, image: &str, net: &str) {
    let port = free_udp_port();
    let publish = format!("127.0.0.1:{port}:5353/udp");
    let volume = crate::pods::probe_volume();
    e.ok(&e.run_args(&[
        "-d",
        "--name",
        "udp-echo",
        "--network",
        net,
        "-p",
        &publish,
        "-v",
        &volume,
        image,
        crate::pods::PROBE,
        "udp-echo",
        "5353",
    ]));
    let answer = udp_echo((Ipv4Addr::LOCALHOST, port).into());
    assert_eq!(answer.as_deref(), Some("echo:ping"), "-p {publish}");
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
    let address: Ipv4Addr = (e.inspect("udp-echo", format).parse())
        .unwrap_or_else(|err| panic!("udp-echo's address: {err}"));
    let answer = udp_echo((address, 5353).into());
    assert_eq!(answer.as_deref(), Some("echo:ping"), "{address}:5353");
    e.ok(&["rm", "-f", "udp-echo"]);
}

/// A UDP port of the host's loopback that was free a moment ago.
fn free_udp_port() -> u16 {
    let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding a free UDP port");
    s.local_addr().expect("its address").port()
}

/// The answer to "ping" sent to `to` from the host, retried for up to
/// 60 s (the server may not be bound yet: a datagram is then dropped).
fn udp_echo(to: SocketAddr) -> Option<String> {
    let from = match to.ip().is_loopback() {
        true => Ipv4Addr::LOCALHOST,
        false => Ipv4Addr::UNSPECIFIED,
    };
    let s = UdpSocket::bind((from, 0)).expect("binding a UDP client");
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    let mut answer = None;
    poll_until(Duration::from_secs(60), || {
        let _ = s.send_to(b"ping", to);
        let mut buf = [0u8; 64];
        answer = match s.recv_from(&mut buf) {
            Ok((n, peer)) if peer == to => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
            _ => None,
        };
        answer.is_some()
    });
    answer
}
