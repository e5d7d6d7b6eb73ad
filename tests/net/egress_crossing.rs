//! The sockets egress (`--allow-net`), `--publish` and the DNS stub give
//! a guest, audited for host facts crossing into it
//! (`tests/net/egress_crossing.py`, driven by
//! `egress_crossing_driver.py` inside `unshare -n`): TCP and UDP relayed
//! to host servers on 127.0.0.1 and ::1, an allowed destination that
//! refuses, a published TCP listener and UDP socket, the stub over UDP
//! and TCP, and /proc/net/netlink (the TCP case and netlink again as an
//! unprivileged user). Each line is compared with the same
//! program run natively against the same servers, but for the known
//! differences in [`GAPS`] (docs/egress.md, "What the guest sees of its
//! relays"); no sandboxed line may show a unix family or name, the
//! sandbox's token, or a socket of the supervisor's (the socket
//! factory's sock_diag socket once showed in /proc/net/netlink under the
//! supervisor's host pid).

use crate::common;
use common::*;

use std::process::Command;

const GUEST: &str = concat!(include_str!("faces.py"), include_str!("egress_crossing.py"));
const DRIVER: &str = include_str!("egress_crossing_driver.py");

/// Lines that differ from Linux by design: the start of the native line
/// (after its case) and the whole sandboxed one. A relayed connection's
/// own address is the wildcard and port 0 (the host socket's address is
/// the host's, and nothing in the sandbox has that port); fdinfo shows
/// the host `AF_UNIX` socket's `scm_fds`; a TCP client of 127.0.0.53 is
/// bound to that address and the stub's answer to a wildcard UDP socket
/// arrives at it (IP_PKTINFO; Linux picks 127.0.0.1 as the source for
/// 127.0.0.53); SO_PASSCRED is ENOPROTOOPT (Linux 6.16 and later:
/// EOPNOTSUPP; before: accepted); a connected UDP relay marks the
/// socket with the destination's port unreachable (`netstack::mark`), which
/// Python's `recv` with a timeout (a poll, then a plain `recv`, both the
/// host `AF_UNIX` socket's own) meets as the kernel's ECONNRESET
/// (`egress_refused.rs` and `udp_refused.rs` have the calls that report
/// it as Linux does).
const GAPS: &[(&str, &str)] = &[
    ("tcp: tcp name 127.0.0.1:eph", "tcp: tcp name 0.0.0.0:port0"),
    ("tcp: tcp name ::1:eph", "tcp: tcp name :::port0"),
    (
        "tcp: tcp nonblocking name 127.0.0.1:eph",
        "tcp: tcp nonblocking name 0.0.0.0:port0",
    ),
    (
        "tcp: tcp nonblocking name ::1:eph",
        "tcp: tcp nonblocking name :::port0",
    ),
    (
        "tcp: tcp procnet tcp ['0100007F:eph'",
        "tcp: tcp procnet tcp ['00000000:port0', '0100007F:S', '01']",
    ),
    (
        "tcp: tcp nonblocking procnet tcp ['0100007F:eph'",
        "tcp: tcp nonblocking procnet tcp ['00000000:port0', '0100007F:S', '01']",
    ),
    (
        "tcp: tcp procnet tcp6 ['00000000000000000000000001000000:eph'",
        "tcp: tcp procnet tcp6 ['00000000000000000000000000000000:port0', \
         '00000000000000000000000001000000:S', '01']",
    ),
    (
        "tcp: tcp nonblocking procnet tcp6 ['00000000000000000000000001000000:eph'",
        "tcp: tcp nonblocking procnet tcp6 ['00000000000000000000000000000000:port0', \
         '00000000000000000000000001000000:S', '01']",
    ),
    (
        "udp: udp connected name 127.0.0.1:eph",
        "udp: udp connected name 0.0.0.0:port0",
    ),
    (
        "udp: udp connected name ::1:eph",
        "udp: udp connected name :::port0",
    ),
    (
        "udp: udp connected procnet udp ['0100007F:eph'",
        "udp: udp connected procnet udp ['00000000:port0', '0100007F:U', '01']",
    ),
    (
        "udp: udp connected procnet udp6 ['00000000000000000000000001000000:eph'",
        "udp: udp connected procnet udp6 ['00000000000000000000000000000000:port0', \
         '00000000000000000000000001000000:U', '01']",
    ),
    (
        "refused: refused connected recv ECONNREFUSED",
        "refused: refused connected recv ECONNRESET",
    ),
    (
        "dns: dns tcp name 127.0.0.1:eph",
        "dns: dns tcp name 127.0.0.53:eph",
    ),
    (
        "dns: dns udp answer b'\\x124' 1 127.0.0.53:DNS [(0, 8, '010000007f0000017f000001')",
        "dns: dns udp answer b'\\x124' 1 127.0.0.53:DNS [(0, 8, '010000007f0000357f000035'), \
         (0, 2, '40000000'), (0, 1, '00')]",
    ),
    ("tcp: tcp passcred ", "tcp: tcp passcred ENOPROTOOPT"),
    (
        "dns: dns tcp procnet tcp ['0100007F:eph'",
        "dns: dns tcp procnet tcp ['3500007F:eph', '3500007F:DNS', '01']",
    ),
];

/// fdinfo of every netstack socket ends with the host `AF_UNIX` socket's
/// `scm_fds` line (docs/network.md, "Sockets that cross processes").
fn fdinfo_gap(native: &str, ours: &str) -> bool {
    native.contains(" fdinfo ['pos', 'flags', 'mnt_id', 'ino']")
        && ours == native.replace("'ino']", "'ino', 'scm_fds']")
}

#[test]
fn egress_publish_and_dns_sockets_show_no_host_facts() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let out = Command::new("unshare")
        .args(["-n", "/usr/bin/python3", "-c", DRIVER])
        .arg(bin())
        .arg(GUEST)
        .output()
        .expect("run the driver");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let side =
        |who: &str| -> Vec<&str> { text.lines().filter_map(|l| l.strip_prefix(who)).collect() };
    let (ours, linux) = (side("sandboxed "), side("native "));
    for face in ["sbx-", "family 1 ", "unix:", "Traceback"] {
        assert!(!text.contains(face), "{face}: {text}");
    }
    assert_eq!(ours.len(), linux.len(), "{text}");
    let mut seen = vec![0; GAPS.len()];
    for (o, l) in ours.iter().zip(&linux) {
        if let Some(i) = GAPS.iter().position(|(start, _)| l.starts_with(start)) {
            assert_eq!(*o, GAPS[i].1, "native: {l}\n{text}");
            seen[i] += 1;
        } else if !fdinfo_gap(l, o) {
            assert_eq!(o, l, "{text}");
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}: {text}");
    // The cases ran, and said what Linux says.
    for line in [
        "tcp: tcp peercred (0, -1, -1)",
        "udp: udp connected sendto peer 1 b'echo w'",
        "refused: refused sendto 1 1",
        "publish: publish accept 127.0.0.1:eph b'hello'",
        "dns: dns tcp peer 127.0.0.53:DNS",
        "netlink: netlink bound []",
    ] {
        assert!(linux.contains(&line), "{line}: {text}");
    }
    assert_eq!(linux.iter().filter(|l| l.ends_with(": done")).count(), 11);
}
