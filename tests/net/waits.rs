//! Serviced waits (`syscalls/src/handlers/net/{wait,dial}.rs`):
//! SO_RCVTIMEO bounds a receive with an address and an accept (EAGAIN),
//! and an allowed egress TCP connect behaves as the kernel's: a
//! non-blocking one answers EINPROGRESS, then EALREADY, then SO_ERROR
//! (0 or the host's ECONNREFUSED); a blocking one to a listener whose
//! backlog is full is interrupted by a signal whose handler raises, and
//! goes on through signals whose handler returns. Each case is compared
//! with the same Python client run natively. The egress cases run inside
//! a fresh network namespace (`tests/net/waits_driver.py`).

use crate::common;
use common::*;

use std::process::Command;

const PY: &str = "/usr/bin/python3";
const CLIENT: &str = include_str!("waits.py");
const DRIVER: &str = include_str!("waits_driver.py");

fn timeouts_match_native(run: Run) {
    let native = run.native().ok("native");
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    assert!(native.stdout.contains("AF_INET6 accept EAGAIN\n"));
}

#[test]
fn so_rcvtimeo_bounds_recvfrom_and_accept() {
    let mut run = Run::new(&[PY, "-c", CLIENT, "TIMEOUTS"]);
    if is_root() {
        run.wrap = vec!["unshare".into(), "-n".into()];
    }
    timeouts_match_native(run);
}

#[test]
fn so_rcvtimeo_as_unprivileged_user() {
    if !is_root() {
        return;
    }
    timeouts_match_native(Run::new(&[PY, "-c", CLIENT, "TIMEOUTS"]).user(1001, 1001));
}

#[test]
fn egress_connects_are_non_blocking_and_interruptible() {
    if !is_root() {
        skip!("needs root for unshare -n");
    }
    let stdout = driver_stdout(
        Command::new("unshare")
            .args(["-n", PY, "-c", DRIVER])
            .arg(bin())
            .arg(CLIENT),
        "egress waits",
    );
    let (native, sandboxed) = stdout.split_once("== sandboxed").expect("both transcripts");
    let native = native.trim_start_matches("== native");
    assert_eq!(sandboxed, native, "{stdout}");
    for line in [
        "non-blocking to a full backlog EINPROGRESS",
        "again EALREADY",
        "blocking connect interrupted by the handler",
        "SO_ERROR ECONNREFUSED",
        "echo b'after signals'",
        "done",
    ] {
        assert!(native.lines().any(|l| l == line), "{line}:\n{stdout}");
    }
}
