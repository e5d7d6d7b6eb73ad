//! Ping sockets (issue 4): `socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)`
//! and its ICMPv6 twin are serviced; echo requests to 127.0.0.0/8 and
//! ::1 are answered by the netstack (same identifier, sequence and
//! payload, correct checksum, reported from the address pinged); any
//! other destination fails at once (iputils ping: "connect: Network is
//! unreachable", exit 2). iputils `ping` and a Python ping-socket client
//! run natively and sandboxed, as root and as `tester`, each inside a
//! fresh network namespace (`unshare -n`, `lo` up, ping_group_range
//! opened there only, so native ping sockets work): nothing is ever
//! sent anywhere but loopback. Timing figures are left out of the
//! comparison.

use crate::common;
use common::*;

const CLIENT: &str = r#"
import errno, socket, struct, sys

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
print("proto", s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL))
req = struct.pack("!BBHHH", 8, 0, 0, 0, 7) + b"payload"
s.sendto(req, ("127.0.0.3", 0))
data, src = s.recvfrom(100)
print("from", src)
print("type", data[0], "code", data[1], "checksum ok", csum(data) == 0)
print("seq", struct.unpack("!H", data[6:8])[0], "payload", data[8:])
for bad in (struct.pack("!BBHHH", 0, 0, 0, 0, 1), b"\x08\x00"):
    try:
        s.sendto(bad, ("127.0.0.1", 0))
        print("sent")
    except OSError as e:
        print("bad request", errno.errorcode[e.errno])
try:
    s.sendto(req, ("192.0.2.1", 0))
    print("sent outside")
except OSError as e:
    print("outside", errno.errorcode[e.errno])
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6)
s6.sendto(struct.pack("!BBHHH", 128, 0, 0, 0, 9) + b"six", ("::1", 0))
data, src = s6.recvfrom(100)
print("v6 from", src[0], "type", data[0], "seq", struct.unpack("!H", data[6:8])[0], data[8:])
"#;

/// Runs `argv` (natively, or under the supervisor when `sandboxed`)
/// inside a fresh network namespace, as root or as `tester`; returns
/// stdout and stderr, timing figures masked, and the exit status line.
fn in_netns(argv: &[&str], sandboxed: bool, tester: bool) -> String {
    let drop = if tester {
        "setpriv --reuid=1001 --regid=1001 --clear-groups -- "
    } else {
        ""
    };
    let sup = if sandboxed {
        format!("{} run -- ", bin().display())
    } else {
        String::new()
    };
    let script = format!(
        "/usr/sbin/ip link set lo up && \
         echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range && \
         exec {drop}{sup}\"$@\""
    );
    let mut v = vec!["unshare", "-n", "/bin/sh", "-c", &script, "sh"];
    v.extend_from_slice(argv);
    let out = Run::new(&v).cwd("/tmp").native();
    let text = format!("{}{}exit {:?}\n", out.stdout, out.stderr, out.code);
    mask_times(&text)
}

/// Drops rtt summaries and masks `time=0.05`, `time 200ms`.
fn mask_times(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.starts_with("rtt ")) {
        let words: Vec<&str> = line
            .split(' ')
            .map(|w| match w {
                w if w.starts_with("time=") => "time=T",
                w if w.ends_with("ms") && w[..w.len() - 2].parse::<u64>().is_ok() => "Tms",
                w => w,
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// Runs `argv` natively and sandboxed (root, then tester when present);
/// the native output must contain every line of `want`.
fn like_native(argv: &[&str], want: &[&str]) {
    let mut users = vec![false];
    if tester_exists() {
        users.push(true);
    }
    for tester in users {
        let native = in_netns(argv, false, tester);
        for line in want {
            assert!(native.contains(line), "{line:?} not in {native}");
        }
        let sandboxed = in_netns(argv, true, tester);
        assert_eq!(sandboxed, native, "{argv:?} tester={tester}");
    }
}

fn usable() -> bool {
    is_root() && have("ping") && have("unshare") && have("setpriv")
}

#[test]
fn ping_loopback_v4_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["ping", "-c", "1", "127.0.0.1"],
        &[
            "64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=T",
            "1 packets transmitted, 1 received, 0% packet loss",
            "exit Some(0)",
        ],
    );
}

#[test]
fn ping_loopback_v6_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["ping", "-c", "1", "::1"],
        &[
            "64 bytes from ::1: icmp_seq=1 ttl=64 time=T",
            "exit Some(0)",
        ],
    );
}

#[test]
fn ping_outside_fails_at_once_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["ping", "-c", "1", "8.8.8.8"],
        &["ping: connect: Network is unreachable", "exit Some(2)"],
    );
}

#[test]
fn a_ping_socket_client_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["/usr/bin/python3", "-c", CLIENT],
        &[
            "proto 1\nfrom ('127.0.0.3', 0)\ntype 0 code 0 checksum ok True\n",
            "seq 7 payload b'payload'\nbad request EINVAL\nbad request EINVAL\n",
            "outside ENETUNREACH\nv6 from ::1 type 129 seq 9 b'six'\n",
        ],
    );
}

/// Receive timestamps: a ping socket with SO_TIMESTAMP and IP_RECVTTL
/// gets the socket level's message first, then the IP level's, as
/// iputils ping reads them; a UDP socket with SO_TIMESTAMPNS and
/// IP_PKTINFO likewise; a control buffer with room for one message
/// only is cut (MSG_CTRUNC). Values are checked for plausibility only.
const STAMPS: &str = r#"
import socket, struct, time
SO_TIMESTAMP, SO_TIMESTAMPNS = 29, 35

def show(anc):
    out = []
    for level, kind, d in anc:
        if level == socket.SOL_SOCKET:
            sec, frac = struct.unpack("qq", d[:16])
            out.append((level, kind, len(d), abs(sec - time.time()) < 600, frac < 10**9))
        else:
            out.append((level, kind, len(d)))
    return out

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
s.setsockopt(socket.IPPROTO_IP, 12, 1)  # IP_RECVTTL
s.sendto(struct.pack("!BBHHH", 8, 0, 0, 0, 1) + b"stamp", ("127.0.0.1", 0))
data, anc, flags, src = s.recvmsg(100, 256)
print("ping", show(anc), flags, data[8:])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
u.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
u.setsockopt(socket.IPPROTO_IP, 8, 1)  # IP_PKTINFO
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for room in (256, socket.CMSG_SPACE(16)):
    c.sendto(b"datagram", u.getsockname())
    data, anc, flags, src = u.recvmsg(100, room)
    print("udp", room, show(anc), flags & socket.MSG_CTRUNC != 0, data)
"#;

#[test]
fn receive_timestamps_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["/usr/bin/python3", "-c", STAMPS],
        &[
            "ping [(1, 29, 16, True, True), (0, 2, 4)] 0 b'stamp'",
            "udp 256 [(1, 35, 16, True, True), (0, 8, 12)] False b'datagram'",
            "udp 32 [(1, 35, 16, True, True)] True b'datagram'",
        ],
    );
}

/// The sandbox's monotonic clocks (its time namespace) are past their
/// first second when a program starts, as on a booted machine: iputils
/// ping takes a zero second for "not yet started" and, with the clocks
/// at 0.x s, sent `ping -c 3`'s probes back to back.
#[test]
fn monotonic_clocks_are_past_their_first_second_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    let code = "import time\n\
                print(time.clock_gettime(time.CLOCK_MONOTONIC_RAW) >= 1,\n\
                      time.clock_gettime(time.CLOCK_MONOTONIC) >= 1,\n\
                      time.clock_gettime(time.CLOCK_BOOTTIME) >= 1)\n";
    like_native(&["/usr/bin/python3", "-c", code], &["True True True\n"]);
}

/// `ping -c 3` prints what it prints natively (timing figures masked).
#[test]
fn ping_three_probes_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["ping", "-c", "3", "127.0.0.1"],
        &[
            "64 bytes from 127.0.0.1: icmp_seq=3 ttl=64 time=T",
            "3 packets transmitted, 3 received, 0% packet loss, time Tms",
        ],
    );
}

/// `/proc/net/icmp` and `icmp6` list the guest's bound ping sockets (an
/// autobound one with its identifier and no address), `udp` and `udp6`
/// none of them (`ping_lists.py`).
#[test]
fn ping_sockets_are_listed_in_icmp_not_udp_like_native() {
    if !usable() {
        skip!("needs root, ping, unshare and setpriv");
    }
    like_native(
        &["/usr/bin/python3", "-c", include_str!("ping_lists.py")],
        &[
            "ping4 name ('0.0.0.0', 'eph')\nping6 name ('::', 'eph')\n",
            "\nicmp ping4 ['00000000:eph', '00000000:0000', '07', ",
            "\nicmp ping4 bound, connected ['0100007F:1092', '0200007F:0000', '01', ",
            "\nicmp6 ping6 ['00000000000000000000000000000000:eph', ",
            "\nudp udp4 ['0100007F:eph', ",
            "\nudp6 udp6 ['00000000000000000000000001000000:eph', ",
            "\nicmp6 header ",
        ],
    );
}
