//! The netstack's UDP and the C-level socket semantics (issue 4):
//! sendto/recvfrom v4 and v6, connected UDP, asyncio datagram endpoints,
//! and a C program (tests/c/netprobe.c) checking options, non-blocking
//! connect, half-close, MSG_PEEK/MSG_DONTWAIT/MSG_TRUNC and errnos,
//! compared with a native run.

mod common;
use common::*;

const PY: &str = "/usr/bin/python3";
const UDP: &str = include_str!("net/udp.py");

fn isolated(mut run: Run) -> Run {
    run.wrap = vec!["unshare".into(), "-n".into()];
    run
}

#[test]
fn c_socket_semantics_match_native() {
    let prog = c_prog("netprobe");
    let run = Run::new(&[&prog]).sup(&c_mounts());
    let native = run.native().ok("native netprobe");
    let sandboxed = isolated(run).supervised().ok("sandboxed netprobe");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

#[test]
fn python_udp_matches_native() {
    let run = Run::new(&[PY, "-c", UDP]);
    let native = run.native().ok("native udp");
    let sandboxed = isolated(run).supervised().ok("sandboxed udp");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    assert!(native.stdout.ends_with("done\n"));
}

#[test]
fn python_udp_over_ipv6() {
    let out = isolated(Run::new(&[PY, "-c", UDP, "v6"]))
        .supervised()
        .ok("udp v6");
    for line in [
        "udp ::1 b'ping' True",
        "back b'pong'",
        "connected ::1 b'conn' True True",
        "asyncio udp ::1 b'PING'",
        "done",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "no {line:?}:\n{}",
            out.dump()
        );
    }
}
