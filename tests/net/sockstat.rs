//! `/proc/net/sockstat`'s `sockets: used` counts the guest's sockets
//! only, as a fresh network namespace of its own would: not the socket
//! factory's sock_diag socket, nor the netstack's spare sockets, which
//! the kernel counts in the guest's namespace (`procfs/src/sockstat.rs`).
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
         exec /usr/bin/python3 -c \"$0\"",
        SCRIPT,
    ])
}

fn check(native: Out, sandboxed: Out) {
    let native = native.ok("native");
    assert!(
        native.stdout.starts_with("fresh 0\nunix pair 2\n")
            && native.stdout.contains("tcp listener, client, accepted 5\n"),
        "{}",
        native.dump()
    );
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

#[test]
fn sockets_used_counts_the_guests_own() {
    let sandboxed = Run::new(&["/usr/bin/python3", "-c", SCRIPT]).supervised();
    check(native(false).native(), sandboxed.ok("sandboxed"));
}

#[test]
fn sockets_used_counts_the_guests_own_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let sandboxed = Run::new(&["/usr/bin/python3", "-c", SCRIPT])
        .user(uid, gid)
        .bin(bin)
        .supervised();
    check(
        native(true).user(uid, gid).native(),
        sandboxed.ok("sandboxed"),
    );
}
