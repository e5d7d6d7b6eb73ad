//! The pool's daemon itself: flags that would shape its sandboxes apart
//! from it, a socket no pool serves and a pool that cannot start are
//! refused with one line and 125; SIGTERM tears its idle sandboxes down;
//! an unprivileged pool serves its own user and no other.
//!
//! Each test starts its own daemon (socket in a temp dir) and stops it by
//! its pid.

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use common::pool::Pool;
use common::*;

/// Only the pool's own flags shape its sandboxes.
#[test]
fn shaping_flags_with_pool_are_refused() {
    let pool = Pool::start(&[]);
    for flags in [
        &["--memory", "1g"][..],
        &["--ro", "/usr:/x"],
        &["--workdir", "/tmp"],
        &["--allow-net", "127.0.0.1:80"],
        &["--writable-system"],
    ] {
        let out = Run::new(&["/bin/true"])
            .sup(&pool.flag())
            .sup(flags)
            .supervised();
        refused(&out, "cannot go with --pool");
    }
}

/// Exit 125 with one line on stderr, saying `why`.
fn refused(out: &Out, why: &str) {
    assert_eq!(out.code, Some(125), "{}", out.dump());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(out.stderr.contains(why), "{}", out.dump());
}

#[test]
fn a_socket_no_pool_serves_is_one_line_and_125() {
    let dir = Tree::new();
    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    let file = dir.file("plain", "");
    for path in [dir.join("missing.sock"), stale, file] {
        let out = Run::new(&["/bin/true"])
            .sup(&["--pool".to_string(), path.display().to_string()])
            .supervised();
        refused(&out, "no pool answers there");
    }
}

#[test]
fn a_pool_that_cannot_start_says_why_in_one_line() {
    let pool = Pool::start(&[]);
    let run = Run::new(&["/bin/true"]);
    let sock = pool.socket.display().to_string();
    let dir = Tree::new();
    let fresh = |name: &str| dir.join(name).display().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["--socket".into(), sock],
        vec![
            "--socket".into(),
            fresh("x"),
            "--ro".into(),
            "/no/such/dir:/x".into(),
        ],
        vec!["--socket".into(), fresh("y"), "--".into(), "true".into()],
        vec!["--socket".into(), fresh("z"), "--size".into(), "0".into()],
        vec!["--socket".into(), fresh("w"), "--report".into(), fresh("r")],
        // --warm names paths in the sandbox's view.
        vec!["--socket".into(), fresh("u"), "--warm".into(), "usr".into()],
        // Every sandbox would bind the same host port.
        vec![
            "--socket".into(),
            fresh("v"),
            "--publish".into(),
            "127.0.0.1:1:80".into(),
        ],
    ];
    for args in cases {
        let out = run.supervisor_raw(&[&["pool".to_string()], &args[..]].concat());
        refused(&out, "supervisor: ");
    }
    assert_eq!(
        listing(dir.path()),
        Vec::<String>::new(),
        "sockets left behind"
    );
}

/// Pids whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if procfs::StatLine::parse(&stat).and_then(|l| l.number::<u32>(4)) == Some(pid) {
            found.extend(entry.file_name().to_string_lossy().parse::<u32>());
        }
    }
    found
}

#[test]
fn sigterm_tears_the_idle_sandboxes_down() {
    let mut pool = Pool::start(&["--size", "3"]);
    let mode = std::fs::symlink_metadata(&pool.socket).expect("socket");
    assert!(mode.file_type().is_socket());
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    // Every sandbox ready: a client was served, and three are set up.
    Run::new(&["/bin/true"])
        .sup(&pool.flag())
        .supervised()
        .ok("one run");
    let until = Instant::now() + TIMEOUT;
    let mut sandboxes = children_of(pool.pid());
    while sandboxes.len() < 3 {
        assert!(Instant::now() < until, "no three sandboxes: {sandboxes:?}");
        std::thread::sleep(Duration::from_millis(20));
        sandboxes = children_of(pool.pid());
    }
    let status = pool.stop();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!pool.socket.exists(), "the socket is left");
    for pid in sandboxes {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "sandbox {pid} outlived the pool"
        );
    }
}

#[test]
fn an_unprivileged_pool_serves_its_user() {
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start_as(
        &["--memory", "256m", "--pids", "32"],
        Some((uid, gid)),
        &tbin,
    );
    let run = Run::sh("id -u; id -un; exit 4", &[])
        .user(uid, gid)
        .bin(&tbin);
    let pooled = run.clone().sup(&pool.flag()).supervised();
    assert_eq!(pooled.code, Some(4), "{}", pooled.dump());
    assert!(
        pooled.stdout.starts_with(&format!("{uid}\n")),
        "{}",
        pooled.dump()
    );
    let cold = run.sup(&["--memory", "256m", "--pids", "32"]).supervised();
    // (A warning about limits enforced as rlimits is the pool's, at set-up.)
    assert_eq!((pooled.code, &pooled.stdout), (cold.code, &cold.stdout));
    // Root may use it too; the socket's mode keeps every other user out.
    let as_root = Run::new(&["/usr/bin/id", "-u"])
        .sup(&pool.flag())
        .supervised();
    assert_eq!(as_root.ok("root's run").stdout, format!("{uid}\n"));
}

#[test]
fn another_user_cannot_use_the_pool() {
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start(&[]);
    // The directory may be searched; the socket (0600, root's) not used.
    std::fs::set_permissions(
        pool.socket.parent().expect("dir"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    let out = Run::new(&["/bin/true"])
        .user(uid, gid)
        .bin(&tbin)
        .sup(&pool.flag())
        .supervised();
    refused(&out, "Permission denied");
}
