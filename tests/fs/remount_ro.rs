//! `--remount-ro PATH` (the OCI runtime's `readonlyPaths`): what the
//! view shows at PATH becomes read-only with every mount below it, as
//! root and as an unprivileged invoker; the host's own mounts and files
//! stay as they were; a missing path is ignored and a bad one is a
//! one-line usage error.

use crate::common;
use common::*;

/// Each write the guest tries, one line each: `ok` or the error.
const SCRIPT: &str = "for f in /out/top /out/sub/in /out/keep/in /out/sub/deep/in /tmp/free; do \
                        if (echo x > $f) 2>/dev/null; then echo \"$f ok\"; else echo \"$f refused\"; fi; \
                      done; \
                      mkdir /out/sub/newdir 2>/dev/null || echo mkdir refused; \
                      grep -c ' /out/sub.* ro,' /proc/self/mountinfo";

/// `/out` a writable bind of the host's tree, a tmpfs below
/// `/out/sub/deep`, and `/out/sub` made read-only: the tree's `sub`
/// and the tmpfs refuse writes (EROFS), the rest of /out and /tmp take
/// them.
fn check(user: Option<(u32, u32, std::path::PathBuf)>) {
    let t = Tree::new();
    t.dir("sub/deep");
    t.dir("keep");
    let mut run = Run::sh(SCRIPT, &[]).sup(&[
        "--rw".to_string(),
        format!("{}:/out", t.s()),
        "--tmpfs".into(),
        "/out/sub/deep:1m".into(),
        "--remount-ro".into(),
        "/out/sub".into(),
        "--remount-ro".into(),
        "/not/there".into(),
    ]);
    if let Some((uid, gid, bin)) = user {
        t.give_to(uid, gid);
        run = run.user(uid, gid).bin(bin);
    }
    let out = run.supervised();
    assert_eq!(
        out.stdout,
        "/out/top ok\n/out/sub/in refused\n/out/keep/in ok\n/out/sub/deep/in refused\n\
         /tmp/free ok\nmkdir refused\n2\n",
        "{}",
        out.dump()
    );
    assert_eq!(std::fs::read_to_string(t.join("top")).unwrap(), "x\n");
    assert!(!t.join("sub/in").exists(), "the write reached the host");
    // The host's tree is as writable as before.
    std::fs::write(t.join("sub/after"), "host\n").unwrap();
}

#[test]
fn remount_ro_covers_the_path_and_its_submounts() {
    check(None);
}

#[test]
fn remount_ro_as_an_unprivileged_invoker() {
    match tester_bin() {
        Ok(tester) => check(Some(tester)),
        Err(e) => skip!("{e}"),
    }
}

/// The view's own mounts may be made read-only too: /dev/shm, a tmpfs
/// the sandbox mounts itself.
#[test]
fn remount_ro_applies_to_the_sandboxs_own_mounts() {
    let out = Run::sh(
        "(echo x > /dev/shm/f) 2>/dev/null || echo shm refused; echo x > /tmp/f && echo tmp ok",
        &[],
    )
    .sup(&["--remount-ro", "/dev/shm"])
    .supervised();
    assert_eq!(out.stdout, "shm refused\ntmp ok\n", "{}", out.dump());
}

#[test]
fn remount_ro_rejects_bad_paths() {
    for (path, why) in [
        ("relative", "absolute"),
        ("/", "guest's /"),
        ("/a/../..", "climbs"),
    ] {
        let out = Run::new(&["/bin/true"])
            .sup(&["--remount-ro", path])
            .supervised();
        assert_eq!(out.code, Some(125), "{}", out.dump());
        assert!(out.stderr.contains("--remount-ro"), "{}", out.dump());
        assert!(out.stderr.contains(why), "{}", out.dump());
    }
}
