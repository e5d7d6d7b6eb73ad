//! SO_REUSEPORT (issue 4): a second TCP listener with the option on the
//! same loopback address binds, a socket without it gets EADDRINUSE, 32
//! connections are accepted between the two with both taking some, and
//! the second still accepts once the first has closed; the same script
//! natively and sandboxed, as root and as `tester`.

use crate::common;
use common::*;

const SCRIPT: &str = include_str!("reuseport.py");
const PY: &str = "/usr/bin/python3";

const EXPECTED: &str = "second bind True\nwithout SO_REUSEPORT True\n\
                        accepted 32 both True\nafter the first closes True\n";

#[test]
fn a_reuseport_group_shares_the_port_like_native() {
    let run = Run::new(&[PY, "-c", SCRIPT]).cwd("/tmp");
    let native = run.native().ok("native");
    let sandboxed = run.supervised().ok("sandboxed");
    assert_eq!(native.stdout, EXPECTED);
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}

#[test]
fn a_reuseport_group_as_tester() {
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester (uid 1001)");
    }
    let run = Run::new(&[PY, "-c", SCRIPT]).cwd("/tmp").user(1001, 1001);
    let native = run.native().ok("native");
    let sandboxed = run.supervised().ok("sandboxed as tester");
    assert_eq!(native.stdout, EXPECTED);
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
}
