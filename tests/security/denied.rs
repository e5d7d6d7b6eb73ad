//! Denied system calls: tests/c/denied.c (run only under the supervisor,
//! never natively) calls each one; each must fail with the policy's errno
//! and be counted by name in the report's "denied" map, but for `clone3`,
//! which the filter answers itself and the report cannot count.

use crate::common;
use common::*;

#[test]
fn denied_calls_fail_and_are_reported() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let bad = probes::check_denied(None, &bin());
    assert!(bad.is_empty(), "denied calls:\n{}", bad.join("\n"));
}
