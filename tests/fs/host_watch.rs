//! What an inotify watch sees (`handlers/notify.rs`): on the sandbox's
//! own file systems, every event, as natively; on a file system the host
//! shares (a `--rw` mount here, as /usr and the other binds), no one's
//! reads — not the host's, not another tenant's, not the guest's own —
//! while creates still arrive. `tests/fs/host_watch.py` is the watcher;
//! for the "host" case a thread of this test plays the other tenant.

use crate::common;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

const SCRIPT: &str = include_str!("host_watch.py");

/// A fresh directory holding "existing", for one case.
fn shared_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("host-watch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("existing"), "data\n").unwrap();
    d
}

/// The other tenant: once the watcher has made "ready" in `dir`, reads
/// "existing" and creates "made".
fn other_tenant(dir: PathBuf) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !dir.join("ready").exists() {
            assert!(Instant::now() < deadline, "the watcher never got ready");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::read(dir.join("existing")).unwrap();
        std::fs::write(dir.join("made"), "").unwrap();
    })
}

fn watch(who: &str, dir: &Path, supervised: Option<&str>) -> String {
    let arg = supervised.map_or_else(|| dir.to_str().unwrap().to_string(), str::to_string);
    let run = Run::new(&["/usr/bin/python3", "-c", SCRIPT, who, &arg]);
    let out = match supervised {
        Some(at) => run
            .sup(&["--rw".to_string(), format!("{}:{at}", dir.display())])
            .supervised(),
        None => run.native(),
    };
    out.ok("the watcher").stdout.trim().to_string()
}

#[test]
fn another_tenant_s_reads_of_a_shared_tree_are_not_seen() {
    let all = "existing:ACCESS existing:CLOSE_NOWRITE existing:OPEN made:CREATE made:OPEN \
               ready:CREATE ready:OPEN";
    let dir = shared_dir("native");
    let tenant = other_tenant(dir.clone());
    assert_eq!(watch("host", &dir, None), all, "natively");
    tenant.join().unwrap();

    let dir = shared_dir("supervised");
    let tenant = other_tenant(dir.clone());
    assert_eq!(
        watch("host", &dir, Some("/data")),
        "made:CREATE ready:CREATE"
    );
    tenant.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_sandbox_s_own_files_report_every_event() {
    let native = shared_dir("own");
    let want = "existing:ACCESS existing:CLOSE_NOWRITE existing:OPEN made:CREATE made:OPEN";
    assert_eq!(watch("own", &native, None), want, "natively");
    let _ = std::fs::remove_dir_all(&native);
    // The sandbox's /tmp is its layer: no one else's.
    let out = Run::new(&["/usr/bin/python3", "-c", SCRIPT, "own", "/tmp"]).supervised();
    assert_eq!(out.ok("the watcher").stdout.trim(), want);
}

#[test]
fn the_guest_s_own_reads_of_a_shared_tree_are_not_seen_either() {
    let dir = shared_dir("own-shared");
    assert_eq!(watch("own", &dir, Some("/data")), "made:CREATE");
    let _ = std::fs::remove_dir_all(&dir);
}
