//! What the session API refuses, and with which status: bad input gets
//! 400 (one line) and unknown ids 404, with no session or descriptor
//! left behind; past `--max-sessions` a new one gets 429.

use std::time::Duration;

use crate::common::engine::poll_until;
use crate::sessions_daemon::Daemon;

#[test]
fn bad_input_gets_400_and_unknown_ids_404() {
    let d = Daemon::start();
    for path in [
        "/v1/sessions/0123456789abcdef",
        "/v1/sessions/..%2f..%2fetc",
    ] {
        assert_eq!(d.request("GET", path, b"").status, 404, "{path}");
        assert_eq!(d.request("DELETE", path, b"").status, 404, "{path}");
    }
    let (status, _) = d.json(
        "POST",
        "/v1/sessions/0123456789abcdef/exec",
        r#"{"command": ["true"]}"#,
    );
    assert_eq!(status, 404);
    assert_eq!(
        d.request("GET", "/v1/sessions/0123456789abcdef/files/a", b"")
            .status,
        404
    );
    for spec in [
        r#"{"limits": {"memory_bytes": "lots"}}"#,
        r#"{"limits": {"memory_bytes": 0}}"#,
        r#"{"limits": {"pids": 0}}"#,
        r#"{"limits": {"cpus": -1}}"#,
        r#"{"idle_ttl_s": 0}"#,
        r#"{"unknown": 1}"#,
        r#"{"volume": {"name": "../x"}}"#,
        r#"{"volume": {"name": "v", "path": "relative"}}"#,
        r#"{"egress": ["not a rule!"]}"#,
        r#"{"publish": ["nonsense"]}"#,
        r#"{"env": {"A=B": "c"}}"#,
        r#"not json"#,
    ] {
        let (status, v) = d.json("POST", "/v1/sessions", spec);
        assert_eq!(status, 400, "{spec}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.contains('\n')),
            "{v}"
        );
    }
    let id = d.create("{}");
    d.exec(&id, &["true"]);
    let fds = d.fds();
    for _ in 0..3 {
        let other = d.create("{}");
        d.exec(&other, &["sh", "-c", "echo x; echo y >&2"]);
        assert_eq!(
            d.json("DELETE", &format!("/v1/sessions/{other}"), "").0,
            200
        );
    }
    for body in [
        r#"{"command": []}"#,
        r#"{"command": ["true"], "timeout_s": 0}"#,
        r#"{"cmd": ["true"]}"#,
    ] {
        let (status, v) = d.json("POST", &format!("/v1/sessions/{id}/exec"), body);
        assert_eq!(status, 400, "{body}: {v}");
    }
    // None of it left a session behind but the one made.
    let (_, list) = d.json("GET", "/v1/sessions", "");
    let running = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == "running")
        .count();
    assert_eq!(running, 1, "{list}");
    // Nor a descriptor: ended sessions and refused requests hold none. The
    // daemon closes a connection just after the client has read its answer,
    // so the count settles rather than dropping at once.
    assert!(
        poll_until(Duration::from_secs(10), || d.fds() <= fds),
        "the daemon held {fds} descriptors, now {}",
        d.fds()
    );
}

#[test]
fn past_max_sessions_a_new_one_gets_429() {
    let d = Daemon::start_with(&["--max-sessions", "1"]);
    let first = d.create("{}");
    let a = d.request("POST", "/v1/sessions", b"{}");
    assert_eq!(a.status, 429, "{}", String::from_utf8_lossy(&a.body));
    assert!(a.header("retry-after").is_some());
    assert_eq!(
        d.json("DELETE", &format!("/v1/sessions/{first}"), "").0,
        200
    );
    d.create("{}");
}
