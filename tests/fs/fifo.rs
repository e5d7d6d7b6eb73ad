//! Blocking serviced calls: opening a FIFO waits for its other end, which
//! another guest process opens through the same supervisor. The worker
//! that blocks must hand receiving over, or the sandbox would deadlock.
//! Same script natively and supervised; outputs compared.

use crate::common;
use common::*;

/// Eight readers block in open() before any writer arrives.
const SCRIPT: &str = "d=$(mktemp -d); for i in 1 2 3 4 5 6 7 8; do mkfifo $d/p$i; done; \
    for i in 1 2 3 4 5 6 7 8; do cat $d/p$i > $d/out$i & done; \
    sleep 0.2; for i in 1 2 3 4 5 6 7 8; do echo hello-$i > $d/p$i; done; wait; \
    cat $d/out1 $d/out2 $d/out3 $d/out4 $d/out5 $d/out6 $d/out7 $d/out8; \
    exec 3<> $d/p1; echo rdwr-ok; rm -r $d";

#[test]
fn fifo_opens_block_without_deadlock() {
    let run = Run::sh(SCRIPT, &[]).cwd("/");
    let native = run.native().ok("native");
    let sup = run.supervised();
    assert_eq!(sup.code, Some(0), "{}", sup.dump());
    assert_eq!(native.stdout, sup.stdout, "{}", sup.dump());
}

/// A non-blocking write-only open with no reader fails at once (ENXIO),
/// and O_NONBLOCK the guest asked for stays on the open file.
#[test]
fn fifo_nonblocking_open_is_faithful() {
    if !have("/usr/bin/python3") {
        skip!("/usr/bin/python3 not installed");
    }
    let code = "import os, tempfile, fcntl\n\
                d = tempfile.mkdtemp(); p = os.path.join(d, 'p'); os.mkfifo(p)\n\
                try:\n    os.open(p, os.O_WRONLY | os.O_NONBLOCK)\nexcept OSError as e:\n    print('wronly', e.errno)\n\
                fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)\n\
                print('nonblock', bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK))\n\
                f = os.open('/etc/hostname', os.O_RDONLY)\n\
                print('regular', bool(fcntl.fcntl(f, fcntl.F_GETFL) & os.O_NONBLOCK))";
    let run = Run::new(&["/usr/bin/python3", "-c", code]).cwd("/");
    let native = run.native().ok("native");
    let sup = run.supervised();
    assert_eq!(sup.code, Some(0), "{}", sup.dump());
    assert_eq!(native.stdout, sup.stdout, "{}", sup.dump());
}
