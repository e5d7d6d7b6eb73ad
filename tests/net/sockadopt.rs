//! TCP and UDP sockets the guest's preload makes itself and hands to the
//! supervisor (syscalls/src/handlers/net/adopt.rs): what every kind of
//! new socket reports and does must be native's (tests/net/sockadopt.py),
//! as root and as an unprivileged user; a marked socket call with a
//! descriptor the supervisor must refuse (unopened, a pipe, a file, a
//! netlink or seqpacket socket, the wrong type, bound, connected, a
//! netstack socket already, adopted twice or through a dup, a host
//! socket of another network namespace, one closed while handed over)
//! is EBADF and leaves the descriptor as it was. Also that the preload's
//! connect is a cancellation point under musl, as glibc's is.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = include_str!("sockadopt.py");

fn expect_native(run: Run, isolate: bool) {
    crate::transcript_matches_native(
        run,
        isolate,
        &[
            "kind 10 2 17 526336 (10, 2, 17, True, True, ('::', 0, 0, 0))\n",
            "bad 2 1 300 EINVAL\n",
            "tcp 10 b'ping' True True\n",
            "udp 2 b'datagram' True\n",
            "nonblocking connect True\n",
            "numbers True True\n",
            "done\n",
        ],
    );
}

#[test]
fn new_sockets_match_native() {
    expect_native(Run::new(&[PY, "-c", SCRIPT]), is_root());
}

#[test]
fn new_sockets_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_native(Run::new(&[PY, "-c", SCRIPT]).user(1001, 1001), false);
}

/// What a hostile guest hands over is refused and left as it was; stdin
/// is an unbound `AF_UNIX` socket of the host's network namespace.
fn expect_refusals(user: Option<(u32, u32)>) {
    const STDIN_SOCKET: &str = "import os, socket, sys\n\
        s = socket.socket(socket.AF_UNIX)\n\
        os.dup2(s.fileno(), 0)\n\
        os.execvp(sys.argv[1], sys.argv[1:])\n";
    let mut run = Run::new(&[PY, "-c", SCRIPT, "hostile"]);
    run.wrap = vec![PY.into(), "-c".into(), STDIN_SOCKET.into()];
    run.user = user;
    let out = run.supervised().ok("supervised");
    out.assert_lines(&[
        "unopened EBADF EBADF",
        "pipe EBADF file EBADF",
        "netlink EBADF True",
        "seqpacket EBADF (<AddressFamily.AF_UNIX: 1>, '')",
        "stream for udp EBADF (<AddressFamily.AF_UNIX: 1>, '')",
        "dgram for tcp EBADF (<AddressFamily.AF_UNIX: 1>, '')",
        "bound EBADF b'\\x00sockadopt'",
        "connected EBADF (<AddressFamily.AF_UNIX: 1>, '')",
        "netstack EBADF (<AddressFamily.AF_INET: 2>, ('0.0.0.0', 0))",
        "netstack after 127.0.0.1",
        "stdin EBADF (<AddressFamily.AF_UNIX: 1>, '')",
        "raw EPERM (<AddressFamily.AF_UNIX: 1>, '')",
        "bad protocol EPROTONOSUPPORT (<AddressFamily.AF_UNIX: 1>, '')",
        "fresh True (<AddressFamily.AF_INET: 2>, ('0.0.0.0', 0))",
        "again EBADF dup EBADF",
        "adopted works b'adopted' True",
        "race True",
        "after race True",
        "done",
    ]);
}

#[test]
fn forged_descriptors_are_refused() {
    expect_refusals(None);
}

#[test]
fn forged_descriptors_are_refused_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_refusals(Some((1001, 1001)));
}

/// A thread cancelled while its connect waits for room in a full backlog
/// ends cancelled (tests/c/connect_cancel.c), with glibc and with musl,
/// as natively.
#[test]
fn a_thread_blocked_in_connect_is_cancelled() {
    for prog in [c_prog("connect_cancel"), musl_prog("connect_cancel")] {
        let run = Run::new(&[prog.as_os_str()]).sup(&c_mounts());
        let native = run.native().ok("native");
        assert_eq!(native.stdout, "connect cancelled\n");
        let sandboxed = run.supervised().ok("sandboxed");
        assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    }
}
