//! `/proc/net/sockstat`'s `sockets: used` counts the guest's sockets
//! only, as a fresh network namespace of its own would: not the socket
//! factory's sock_diag socket, nor the netstack's spare sockets, which
//! the kernel counts in the guest's namespace; the `inuse` of its TCP,
//! UDP and UDPLITE lines counts the guest's TCP and UDP sockets, which
//! the kernel's does not (they are `AF_UNIX` ones: `procfs/src/sockstat.rs`),
//! and sockstat6's that of the IPv6 ones.
//! `tests/net/sockstat.py` runs natively under `unshare -n` (its
//! loopback brought up) and sandboxed, as root and as `tester` (natively
//! `unshare -rn`), and the transcripts must be equal.

use crate::common;
use common::*;

const SCRIPT: &str = include_str!("sockstat.py");

/// Natively in a new network namespace (`map_root` for an unprivileged
/// user), its loopback up, then the script once the namespace counts no
/// socket: `ip`'s netlink sockets are uncounted only when the kernel
/// frees them, after an RCU grace period, so the script could start
/// while they still count (at most 5 s).
fn native(map_root: bool) -> Run {
    let unshare = if map_root { "-rn" } else { "-n" };
    Run::new(&[
        "unshare",
        unshare,
        "sh",
        "-c",
        "ip link set lo up && timeout 5 sh -c \
         'until grep -qx \"sockets: used 0\" /proc/net/sockstat; do sleep 0.01; done'; \
         exec /usr/bin/python3 -c \"$0\" \"$1\"",
        SCRIPT,
        lite(),
    ])
}

/// The script's argument: "udplite" when the host's kernel makes UDP-Lite
/// sockets (the netstack makes them whatever the kernel).
fn lite() -> &'static str {
    let probe =
        "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDPLITE)";
    match Run::new(&["/usr/bin/python3", "-c", probe]).native().code {
        Some(0) => "udplite",
        _ => "-",
    }
}

fn check(native: Out, sandboxed: Out) {
    let native = native.ok("native");
    assert!(
        native
            .stdout
            .starts_with("fresh 0\ninuse TCP 0 UDP 0 UDPLITE 0 TCP6 0 ")
            && native.stdout.contains("\nunix pair 2\n")
            && native.stdout.contains("tcp listener, client, accepted 5\n")
            && native.stdout.contains("inuse waiting TCP 3 UDP 0 ")
            && native
                .stdout
                .contains("inuse ipv6 TCP 3 UDP 2 UDPLITE 0 TCP6 3 UDP6 1 "),
        "{}",
        native.dump()
    );
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

fn guest() -> Run {
    Run::new(&["/usr/bin/python3", "-c", SCRIPT, lite()])
}

#[test]
fn sockets_used_counts_the_guests_own() {
    let sandboxed = guest().supervised();
    check(native(false).native(), sandboxed.ok("sandboxed"));
}

#[test]
fn sockets_used_counts_the_guests_own_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let sandboxed = guest().user(uid, gid).bin(bin).supervised();
    check(
        native(true).user(uid, gid).native(),
        sandboxed.ok("sandboxed"),
    );
}
