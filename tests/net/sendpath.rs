//! Sends that take a `msghdr` and recvmmsg's late error, on the
//! netstack's sockets and on the guest's own (tests/net/sendpath.py):
//! UDP sendmsg with a name whatever its flags (MSG_NOSIGNAL too: Go's
//! WriteMsgUDP, libuv), sendmmsg with names, connected, on TCP and with
//! an error after its first message (glibc's resolver sends its queries
//! with sendmmsg), SCM_RIGHTS and SCM_CREDENTIALS on TCP and UDP (Linux
//! accepts and ignores them: nothing reaches the receiver) and on the
//! guest's own unix sockets (the descriptor travels), and a recvmmsg
//! whose second message faults (the socket keeps EFAULT for its next
//! call, SO_ERROR reports it once); SO_SNDBUF and SO_RCVBUF of fresh TCP
//! and UDP sockets (a TCP one's are `tcp_wmem`'s and `tcp_rmem`'s, not
//! the host unix socket's) and after sets (doubled, bounded). The
//! transcript must be native's.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = include_str!("sendpath.py");

fn expect_native(run: Run, isolate: bool) {
    // The transcript covers what it says it does.
    crate::transcript_matches_native(
        run,
        isolate,
        &[
            "udp sendmsg name flags=0x4000 6\n",
            "sendmmsg udp names (3, [2, 3, 4])\n",
            "sendmmsg udp bad second (1, [1])\n",
            "tcp sendmsg rights flags=0x4000 1\n",
            "tcp got b'ttttns1s22s333' []\n",
            "unix got b'f' 1 b'through'\n",
            "recvfrom after EFAULT\n",
            "so_error 14\n",
            "buffers 10 tcp [(",
        ],
    );
}

#[test]
fn msghdr_sends_and_late_receive_errors_match_native() {
    expect_native(Run::new(&[PY, "-c", SCRIPT]), is_root());
}

#[test]
fn msghdr_sends_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    expect_native(Run::new(&[PY, "-c", SCRIPT]).user(1001, 1001), false);
}
