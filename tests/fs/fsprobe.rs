//! The serviced path calls against native behaviour: tests/c/fsprobe.c runs
//! natively on one scratch tree and under `supervisor run --rw` on another;
//! its one-line-per-case outputs and the resulting trees must be equal
//! (see tests/common/probes.rs for the few privilege-dependent cases).

use crate::common;
use common::*;

#[test]
fn fsprobe_matches_native() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let p = probes::fsprobe(None, &bin());
    probes::judge_fsprobe(&p, is_root());
}

/// The probe's starting directory is the host cwd (bound read-only): the
/// serviced calls that write must fail there with EROFS and leave it as it
/// was, and the read-only cases still work.
#[test]
fn fsprobe_in_readonly_cwd_writes_nothing() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let t = Tree::new();
    t.file("keep", "x");
    let before = snapshot(t.path());
    let out = Run::new(&[c_prog("fsprobe").as_os_str(), t.path().as_os_str()])
        .cwd(t.path())
        .sup(&c_mounts())
        .supervised();
    // The fixture itself cannot be written: fsprobe reports it and exits 2.
    assert_ne!(
        out.code,
        Some(0),
        "fsprobe must not manage to write in a read-only cwd:\n{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("Read-only file system"),
        "expected EROFS:\n{}",
        out.dump()
    );
    assert_eq!(
        before,
        snapshot(t.path()),
        "the read-only cwd changed on the host"
    );
}
