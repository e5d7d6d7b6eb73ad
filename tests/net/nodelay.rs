//! TCP_NODELAY of sandbox-local connections answered by the preload
//! without a round trip, from the host socket's flag that carries it
//! (tests/net/nodelay.py): clients' and accepted connections', values,
//! lengths and bad pointers, a listener's inherited, set before the
//! connect or while it is in progress, read back by the supervisor, a
//! forked child and a process it was passed to, a descriptor number
//! reused by other sockets, SO_WIFI_STATUS still the socket's own; the
//! transcript must be native's. Then that neither option takes a round
//! trip (the report's count) under glibc's preload and musl's, and that
//! forged marks and notes mislead only the guest.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = concat!(include_str!("preload_note.py"), include_str!("nodelay.py"));

fn expect_native(run: Run, isolate: bool) {
    crate::transcript_matches_native(
        run,
        isolate,
        &[
            "AF_INET6 accepted ['0x0', ((0, 0), '0x1'), ((0, 0), '0x0'), ((0, 0), '0x1'), ((0, 0), '0x1'), ((0, 0), '0x0')]\n",
            "get room -1 (-1, 'EINVAL', '0x55555555', -1)\n",
            "get value NULL (-1, 'EFAULT')\n",
            "set short (-1, 'EINVAL') 0x1\n",
            "listener's, accepted 0x1 1 client 0x0\n",
            "set before connect 0x1 1\n",
            "in progress (0, 0) 0x1 1\n",
            "forked child sees the parent's 1\n",
            "parent sees the child's 0x0\n",
            "passed raw 0 1 lib 1\n",
            "after the other process set 0 0x0\n",
            "unix in its place (-1, 'ENOTSUP') (-1, 'ENOTSUP')\n",
            "listener in its place 0x0 (0, 0) 0x1\n",
            "wifi set, nodelay cleared 1 0x0\n",
            "done\n",
        ],
    );
}

#[test]
fn nodelay_matches_native() {
    expect_native(Run::new(&[PY, "-c", SCRIPT]), is_root());
}

#[test]
fn nodelay_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_native(Run::new(&[PY, "-c", SCRIPT]).user(1001, 1001), false);
}

/// The serviced setsockopt and getsockopt calls of a run of `run`,
/// whose output must be native's.
fn served_options(run: Run) -> (u64, u64, serde_json::Value) {
    let native = run.native().ok("native");
    let (out, r) = run.supervised_reported();
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    (serviced(&r, "setsockopt"), serviced(&r, "getsockopt"), r)
}

/// CPython's client sets TCP_NODELAY after each connect (http.client
/// does); neither it nor reading it back is serviced, for the client or
/// the accepted connection (the listener's SO_REUSEADDR is).
#[test]
fn nodelay_takes_no_round_trip() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no preload");
    }
    const LOOP: &str = "import socket\n\
        srv = socket.create_server(('127.0.0.1', 0))\n\
        for _ in range(50):\n\
        \x20   cli = socket.create_connection(srv.getsockname())\n\
        \x20   cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n\
        \x20   conn, _ = srv.accept()\n\
        \x20   assert cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1\n\
        \x20   assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0\n\
        \x20   conn.close(); cli.close()\n\
        print('served')\n";
    let (set, get, r) = served_options(Run::new(&[PY, "-c", LOOP]));
    assert!(
        set <= 1,
        "{set} setsockopt serviced for 50 connections: {r}"
    );
    assert_eq!(get, 0, "{r}");
}

/// The same under musl's preload (`LD_PRELOAD`) and glibc's
/// (tests/c/nodelay_loop.c built with each).
#[test]
fn nodelay_takes_no_round_trip_under_either_c_library() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no preload");
    }
    for prog in [c_prog("nodelay_loop"), musl_prog("nodelay_loop")] {
        let run = Run::new(&[prog.as_os_str()]).sup(&c_mounts());
        let (set, get, r) = served_options(run);
        assert_eq!((set, get), (0, 0), "{}: {r}", prog.display());
    }
}

/// A mark or a note the guest forges changes only what it tells itself:
/// a marked flag on a listener is not its TCP_NODELAY (nor its
/// connections'), nor its SO_WIFI_STATUS; on its own unix socket it is
/// what the kernel would have done anyway; on a connection it is that
/// connection's TCP_NODELAY; a marked connect learns its own socket's
/// inode (which fstat tells it anyway); a note claimed for a unix socket is believed by the preload
/// while the kernel still refuses the option.
#[test]
fn forged_marks_and_notes_mislead_only_the_guest() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no preload");
    }
    let out = Run::new(&[PY, "-c", SCRIPT, "forge"])
        .supervised()
        .ok("supervised");
    out.assert_lines(&[
        "forge marked set on a listener 0",
        "forge listener's own 0 0",
        "forge accepted 0",
        "forge marked on its own unix socket 0 (0, 1)",
        "forge marked on a connection is its nodelay 1 1",
        "forge marked connects learn their own inode [(True, 0, b'y'), (True, 1, b'y')]",
        "forge slot found True",
        "forge believed (0, 0) (0, 0, '0x1')",
        "forge kernel (-1, 'ENOTSUP')",
        "done",
    ]);
}
