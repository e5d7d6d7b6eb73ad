//! Ancillary data on the netstack's UDP sockets (`netstack/src/ancillary.rs`):
//! `tests/net/ancillary.py` sends with per-packet IPV6_HOPLIMIT/
//! IPV6_TCLASS/IP_TTL control messages and per-socket hop limit, TTL and
//! TOS options, receives with IP_PKTINFO/IP_RECVTTL/IP_RECVTOS and
//! IPV6_RECVPKTINFO/IPV6_RECVHOPLIMIT/IPV6_RECVTCLASS into buffers of
//! several sizes (MSG_CTRUNC), and must print what it prints natively.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = include_str!("ancillary.py");

fn expect_native(run: Run, isolate: bool) {
    // The transcript shows per-packet values and a cut buffer.
    crate::transcript_matches_native(
        run,
        isolate,
        &["'02000000'), (41, 67, '20000000')", "'03000000')", "] 8\n"],
    );
}

#[test]
fn udp_control_messages_match_native() {
    expect_native(Run::new(&[PY, "-c", SCRIPT]), is_root());
}

#[test]
fn udp_control_messages_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_native(Run::new(&[PY, "-c", SCRIPT]).user(1001, 1001), false);
}
