//! getsockname of accepted TCP connections answered by the preload from
//! the name note a marked accept leaves (tests/net/socknames.py): IPv4
//! and IPv6, named and wildcard listeners, every length, bad, unaligned
//! and read-only pointers, a descriptor number reused by another socket,
//! a TCP disconnect, threads, and raw marked accepts with bad note
//! pointers; the transcript must be native's. Then that the answers take
//! no round trip (the report's count), that a guest that scribbles on
//! its own note table misleads only itself, and that the preload's accept
//! is still a cancellation point.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = concat!(
    include_str!("preload_note.py"),
    include_str!("socknames.py")
);

fn expect_native(run: Run, isolate: bool) {
    crate::transcript_matches_native(
        run,
        isolate,
        &[
            "name :: 127.0.0.1 ::ffff:127.0.0.1 True (0, 0)\n",
            " room -1 (-1, 'EINVAL') -1 b''\n",
            "bad len unmapped (-1, 'EFAULT') 16\n",
            "bad addr straddles (-1, 'EFAULT') 16\n",
            "bad len read-only (-1, 'EFAULT') 16\n",
            "reuse udp (0, 0) 16 True False\n",
            "reuse unix (0, 0) 2 b'\\x01\\x00'\n",
            "disconnect 0.0.0.0 127.0.0.1 0 0.0.0.0 True\n",
            "threads wrong []\n",
            "marked read-only True True b'x'\n",
            "done\n",
        ],
    );
}

#[test]
fn accepted_names_match_native() {
    expect_native(Run::new(&[PY, "-c", SCRIPT]), is_root());
}

#[test]
fn accepted_names_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_native(Run::new(&[PY, "-c", SCRIPT]).user(1001, 1001), false);
}

/// A server's getsockname of each connection it accepts, as CPython's
/// accept makes it, is not serviced (the listener's own are).
#[test]
fn accepted_names_take_no_round_trip() {
    const SERVER: &str = "import socket\n\
        srv = socket.create_server(('127.0.0.1', 0))\n\
        for _ in range(50):\n\
        \x20   cli = socket.create_connection(srv.getsockname())\n\
        \x20   conn, _ = srv.accept()\n\
        \x20   assert conn.getsockname() == srv.getsockname()\n\
        \x20   conn.close(); cli.close()\n\
        print('served')\n";
    let (out, r) = Run::new(&[PY, "-c", SERVER]).supervised_reported();
    assert_eq!(out.stdout, "served\n", "{}", out.dump());
    let names = serviced(&r, "getsockname");
    let accepts = serviced(&r, "accept4");
    assert_eq!(accepts, 50, "{r}");
    // CPython asks once a connection, and twice a loop for the listener's.
    assert!(
        names <= 101,
        "{names} getsockname serviced for 50 accepts: {r}"
    );
    assert!(names >= 50, "the listener's own are served: {names}");
}

/// A note the guest forges changes what it tells itself only: a length no
/// note has is ignored, a forged name is believed by that process, the
/// served answers (its peer's name) and the next connection's are right.
#[test]
fn a_forged_note_misleads_only_its_process() {
    let out = Run::new(&[PY, "-c", SCRIPT, "forge"])
        .supervised()
        .ok("supervised");
    out.assert_lines(&[
        "forge slot found True",
        "forge long True",
        "forge name ('192.0.2.9', 9)",
        "forge peer True",
        "forge next True",
        "done",
    ]);
}

/// The preload's accept is a cancellation point as the C library's is: a
/// thread cancelled while its accept waits in the supervisor ends
/// cancelled (tests/c/accept_cancel.c), as natively.
#[test]
fn a_thread_blocked_in_accept_is_cancelled() {
    let prog = c_prog("accept_cancel");
    let run = Run::new(&[prog.as_os_str()]).sup(&c_mounts());
    let native = run.native().ok("native");
    assert_eq!(native.stdout, "accept cancelled\naccept4 cancelled\n");
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}
