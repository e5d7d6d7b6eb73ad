//! Races against the supervisor's path resolution: tests/c/race.c swaps a
//! directory of a `--rw` mount with a symlink to a host directory outside
//! the view while it opens, stats and chmods a file through that path. No
//! call may reach the host file (read it, see its size, or change its mode).
//! Never run natively (race.c refuses to run outside a sandbox).

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;

const SECRET: &str = "TOPSECRET-race-9c1d";

#[test]
fn symlink_swap_race_stays_in_view() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let (w, s) = (Tree::new(), Tree::new());
    let secret = s.file("secret.txt", SECRET);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o640)).unwrap();
    let _ = guard();
    let argv = [
        c_prog("race").display().to_string(),
        HOST_MARKER.into(),
        w.s(),
        s.s(),
        "5000".into(),
    ];
    let out = Run::new(&argv).sup(&c_mounts()).rw(w.path()).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.field("flips") > 0,
        "the flipper never ran:\n{}",
        out.stdout
    );
    assert!(
        out.field("opened") > 0,
        "never opened the innocent file:\n{}",
        out.stdout
    );
    assert_eq!(
        out.field("host"),
        0,
        "a call reached the host file:\n{}",
        out.dump()
    );
    assert_eq!(out.field("errors"), 0, "unexpected errors:\n{}", out.dump());
    let m = std::fs::metadata(&secret).unwrap();
    assert_eq!(
        m.permissions().mode() & 0o7777,
        0o640,
        "chmod reached the host file"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
}
