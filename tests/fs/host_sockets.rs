//! The host's sockets and FIFOs beneath the current directory (bound
//! read-only into the view, `launch/bind.rs::share_files_only`) cannot be
//! reached: the directory is a read-only overlay of itself, so a connect,
//! or a datagram sent there, answers ECONNREFUSED, as runsc does for a
//! host socket without `--host-uds`, and a FIFO is the overlay's own pipe
//! (a non-blocking open for writing finds no reader: ENXIO). Natively,
//! and through a `--rw` mount (the user's explicit sharing), the same
//! calls reach the listeners. The listeners are this test's own, in a
//! fresh directory.

use crate::common;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;

use common::*;

const PROBE: &str = r#"
import errno, os, socket, sys
def attempt(call):
    try:
        call()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
stream = socket.socket(socket.AF_UNIX)
print("stream", attempt(lambda: stream.connect(sys.argv[1] + "/svc.sock")))
dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print("dgram", attempt(lambda: dgram.sendto(b"x", sys.argv[1] + "/log.sock")))
def write_fifo():
    fd = os.open(sys.argv[1] + "/ctl.fifo", os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"x")
print("fifo", attempt(write_fifo))
"#;

/// A stream listener, a datagram socket and a FIFO's read end in `dir`,
/// all non-blocking.
struct Listeners(UnixListener, UnixDatagram, std::fs::File);

impl Listeners {
    fn new(dir: &Path) -> Listeners {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stream = UnixListener::bind(dir.join("svc.sock")).unwrap();
        let dgram = UnixDatagram::bind(dir.join("log.sock")).unwrap();
        for p in ["svc.sock", "log.sock"] {
            std::fs::set_permissions(dir.join(p), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        stream.set_nonblocking(true).unwrap();
        dgram.set_nonblocking(true).unwrap();
        let fifo = dir.join("ctl.fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666)).unwrap();
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        Listeners(stream, dgram, reader)
    }

    /// What reached them since the last look: "stream" and/or "dgram".
    fn reached(&self) -> Vec<&'static str> {
        let mut got = Vec::new();
        if self.0.accept().is_ok() {
            got.push("stream");
        }
        if self.1.recv(&mut [0u8; 8]).is_ok() {
            got.push("dgram");
        }
        if matches!((&self.2).read(&mut [0u8; 8]), Ok(n) if n > 0) {
            got.push("fifo");
        }
        got
    }
}

fn probe(dir: &Path, arg: &str) -> Run {
    Run::new(&["/usr/bin/python3", "-c", PROBE, arg]).cwd(dir)
}

#[test]
fn the_hosts_sockets_beneath_the_cwd_are_refused() {
    let t = Tree::new();
    let host = Listeners::new(t.path());
    let out = probe(t.path(), ".").native().ok("natively");
    assert_eq!(out.stdout, "stream ok\ndgram ok\nfifo ok\n", "natively");
    assert_eq!(host.reached(), ["stream", "dgram", "fifo"]);

    let out = probe(t.path(), ".").supervised().ok("supervised");
    assert_eq!(
        out.stdout,
        "stream ECONNREFUSED\ndgram ECONNREFUSED\nfifo ENXIO\n"
    );
    assert!(
        host.reached().is_empty(),
        "a guest reached the host's socket"
    );
    // The tree itself is shown as before.
    let out = Run::sh("ls", &[]).cwd(t.path()).supervised().ok("ls");
    assert_eq!(out.stdout, "ctl.fifo\nlog.sock\nsvc.sock\n");

    let tester = match tester_bin() {
        Ok(t) => t,
        Err(why) => return eprintln!("SKIPPED (tester): {why}"),
    };
    let (uid, gid, bin) = tester;
    let out = probe(t.path(), ".")
        .user(uid, gid)
        .bin(bin)
        .supervised()
        .ok("as tester");
    assert_eq!(
        out.stdout, "stream ECONNREFUSED\ndgram ECONNREFUSED\nfifo ENXIO\n",
        "as tester"
    );
    assert!(
        host.reached().is_empty(),
        "tester's guest reached the host's socket"
    );
}

#[test]
fn a_rw_mount_shares_its_sockets() {
    let t = Tree::new();
    let host = Listeners::new(t.path());
    let out = probe(Path::new("/"), "/shared")
        .sup(&["--rw".to_string(), format!("{}:/shared", t.s())])
        .supervised()
        .ok("--rw");
    assert_eq!(out.stdout, "stream ok\ndgram ok\nfifo ok\n");
    assert_eq!(host.reached(), ["stream", "dgram", "fifo"]);
}
