//! A container with the subordinate range (an overlayfs rootfs remade
//! over idmapped layers) in a network namespace with an interface, as an
//! engine's bridge network gives it: a veth pair between that namespace
//! and a peer namespace (both private to the test, each held by an
//! `unshare -n sleep`; addresses of 203.0.113.0/24, which route nowhere
//! else). The guest's web server on 0.0.0.0:80 is published on the
//! container's namespace and reached from the peer on the container's
//! address, as another container of the network reaches it; no process
//! of the container is host root. Part of the `oci` test binary's `cli`
//! module.

use super::ids::{assert_on_range, supervisor_start};
use super::overlay_root::EngineMount;
use super::*;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::process::{Child, Command};

/// The container's address on the veth pair.
const CONTAINER: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
/// The peer's.
const PEER: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

/// A network namespace held by `unshare -n sleep`; the holder is killed
/// (by pid) when dropped.
struct HeldNetns(Child);

impl HeldNetns {
    fn new() -> HeldNetns {
        let child = Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .spawn()
            .expect("unshare -n sleep");
        let held = HeldNetns(child);
        // The namespace exists once the holder has exec'd sleep.
        let own = fs::read_link("/proc/self/ns/net").expect("own netns");
        let deadline = Instant::now() + Duration::from_secs(10);
        while fs::read_link(held.path()).ok().as_ref() == Some(&own) {
            assert!(Instant::now() < deadline, "unshare -n did not start");
            thread::sleep(Duration::from_millis(10));
        }
        held
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    fn path(&self) -> String {
        format!("/proc/{}/ns/net", self.0.id())
    }

    /// `ip ARGS` run in this namespace.
    fn ip(&self, args: &[&str]) {
        let out = Command::new("nsenter")
            .args(["-t", &self.pid(), "-n", "ip"])
            .args(args)
            .output()
            .expect("nsenter ip");
        assert!(out.status.success(), "ip {args:?}: {out:?}");
    }
}

impl Drop for HeldNetns {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of `GET /index.html` from `addr`, connected from the network
/// namespace at `netns` (a thread of ours enters it).
fn fetch_from(netns: &str, addr: SocketAddr) -> Option<String> {
    let ns = fs::File::open(netns).ok()?;
    thread::scope(|s| {
        s.spawn(|| {
            nix::sched::setns(ns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
            let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
            c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            c.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").ok()?;
            let mut answer = String::new();
            c.read_to_string(&mut answer).ok()?;
            answer
                .split_once("\r\n\r\n")
                .map(|(_, body)| body.to_string())
        })
        .join()
        .ok()
        .flatten()
    })
}

#[test]
fn a_web_server_under_the_range_is_reached_on_its_network_namespace() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let (container, peer) = (HeldNetns::new(), HeldNetns::new());
    let link = Command::new("ip")
        .args(["link", "add", "veth-c", "netns", &container.pid()])
        .args([
            "type",
            "veth",
            "peer",
            "name",
            "veth-p",
            "netns",
            &peer.pid(),
        ])
        .output()
        .expect("ip link add");
    assert!(link.status.success(), "ip link add: {link:?}");
    for (ns, dev, addr) in [(&container, "veth-c", CONTAINER), (&peer, "veth-p", PEER)] {
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", dev]);
        ns.ip(&["link", "set", dev, "up"]);
        ns.ip(&["link", "set", "lo", "up"]);
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let netns = container.path();
    bundle(t.path(), |c| {
        set_args(
            c,
            "busybox mkdir -p /www && echo hello-from-web > /www/index.html && \
             exec busybox httpd -f -p 80 -h /www",
        );
        c["root"]["readonly"] = false.into();
        let namespaces = c["linux"]["namespaces"].as_array_mut().expect("namespaces");
        namespaces.retain(|n| n["type"] != "network");
        namespaces.push(json!({"type": "network", "path": netns}));
    });
    let _engine = EngineMount::new(&t, "off");
    let pid = create(&rt, t.path(), "ovl-net");
    assert!(rt.run(&["start", "ovl-net"]).status.success());
    let addr = SocketAddr::from((CONTAINER, 80));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut body = None;
    while body.as_deref() != Some("hello-from-web\n") && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(100));
        body = fetch_from(&peer.path(), addr);
    }
    let stderr = fs::read_to_string(t.join("stderr")).unwrap_or_default();
    assert_eq!(
        body.as_deref(),
        Some("hello-from-web\n"),
        "from the peer: {stderr}"
    );
    // From the host: the container's processes are the range's ids.
    let start = supervisor_start("/etc/subuid");
    assert_on_range(&rt.pids("ovl-net"), start);
    assert!(rt.run(&["delete", "--force", "ovl-net"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}
