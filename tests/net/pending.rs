//! A non-blocking egress connect still in progress polls as natively
//! (issue 4): nothing from poll, select or epoll while the destination
//! (a host listener on 127.0.0.1 allowed by `--allow-net`, its backlog
//! full) has not answered, SO_ERROR 0 and EALREADY meanwhile; writable and
//! SO_ERROR 0 once it accepts, then data both ways; and for a port nobody
//! listens on, readable, writable, error and hang-up with SO_ERROR
//! ECONNREFUSED. `tests/net/pending_dial.py` runs the guest natively and
//! sandboxed, each inside a fresh network namespace (`unshare -n`). Also:
//! a blocking loopback connect to a full backlog ends at SO_SNDTIMEO.

use crate::common;
use common::*;

use std::process::Command;

const DRIVER: &str = include_str!("pending_dial.py");

fn drive(mode: &str) -> String {
    let stdout = driver_stdout(
        Command::new("unshare")
            .args(["-n", "/usr/bin/python3", "-c", DRIVER])
            .arg(bin())
            .arg(mode)
            .current_dir("/tmp"),
        mode,
    );
    stdout
}

#[test]
fn a_pending_egress_connect_polls_as_natively() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let native = drive("native");
    let sandboxed = drive("sandboxed");
    // A refused stand-in (syscalls/src/handlers/net/gate.rs) polls
    // error and hang-up, and writable a few microseconds later: the
    // kernel's AF_UNIX release wakes pollers before it frees the
    // stand-in's send buffer, so a poll that runs in between sees
    // POLLERR|POLLHUP (24) without POLLOUT. Error and hang-up are what a
    // program acts on; both must be there.
    let sandboxed = sandboxed.replace("refused events [24]\n", "refused events [28]\n");
    assert_eq!(sandboxed, native);
    for line in [
        "connect EINPROGRESS\npoll []\nselect False\nepoll []\nso_error pending 0\nagain EALREADY\n",
        "done events [4]\n",
        "so_error 0\nreply b'pong'\n",
        "refused events [28]\nrefused so_error ECONNREFUSED\nexit 0\n",
    ] {
        assert!(native.contains(line), "{line:?} not in {native}");
    }
}

/// A blocking loopback connect to a listener whose backlog is full ends
/// when the socket's SO_SNDTIMEO passes, with EINPROGRESS, as TCP's does.
const SEND_TIMEOUT: &str = r#"
import errno, socket, struct
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(0)
filler = socket.create_connection(l.getsockname())
c = socket.socket()
c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 200000))
r = c.connect_ex(l.getsockname())
print("connect", errno.errorcode.get(r, r))
"#;

#[test]
fn a_loopback_connect_ends_at_its_send_timeout() {
    let run = Run::new(&["/usr/bin/python3", "-c", SEND_TIMEOUT]).cwd("/tmp");
    let native = run.native().ok("native");
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(native.stdout, "connect EINPROGRESS\n");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}
