//! When sessions end without being deleted: idle ones at their TTL, old
//! ones at their lifetime, and a killed daemon's at its restart (their
//! sandboxes gone, volumes kept).

use std::time::Duration;

use crate::common::engine::poll_until;
use crate::sessions_daemon::Daemon;

#[test]
fn idle_sessions_end_at_their_ttl_and_old_ones_at_their_lifetime() {
    let d = Daemon::start();
    let idle = d.create(r#"{"idle_ttl_s": 1}"#);
    let old = d.create(r#"{"max_lifetime_s": 2, "idle_ttl_s": 600}"#);
    let state = |id: &str| d.json("GET", &format!("/v1/sessions/{id}"), "").1;
    assert!(
        poll_until(Duration::from_secs(30), || state(&idle)["state"] == "ended"),
        "{}",
        state(&idle)
    );
    assert_eq!(state(&idle)["reason"], "idle_ttl");
    assert!(poll_until(Duration::from_secs(30), || state(&old)["state"] == "ended"));
    assert_eq!(state(&old)["reason"], "max_lifetime");
    let (_, list) = d.json("GET", "/v1/sessions", "");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_restarted_daemon_reports_its_sessions_ended_and_keeps_volumes() {
    let mut d = Daemon::start();
    let id = d.create(r#"{"volume": {"name": "keep", "path": "/data"}}"#);
    let v = d.exec(&id, &["sh", "-c", "echo before > f; sleep 600 & echo $!"]);
    assert_eq!(v["exit_code"], 0);
    let sessions_before = d.data_dir.join("sessions").join(&id);
    assert!(sessions_before.join("exec.sock").exists());
    // A daemon killed outright: its sessions' sandboxes go with it.
    d.kill();
    let no_sleeper = || {
        !std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x00600\x00")
        })
    };
    assert!(
        poll_until(Duration::from_secs(20), no_sleeper),
        "the session's process outlived its daemon"
    );
    d.launch();
    let (status, v) = d.json("GET", &format!("/v1/sessions/{id}"), "");
    assert_eq!(status, 200);
    assert_eq!(v["state"], "ended", "{v}");
    assert_eq!(v["reason"], "daemon_restarted");
    let again = d.create(r#"{"volume": {"name": "keep", "path": "/data"}}"#);
    assert_eq!(d.exec(&again, &["cat", "f"])["stdout"], "before\n");
}
