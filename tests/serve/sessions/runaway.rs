//! A runaway cell: a command that brings down its session's memory or
//! process limit kills the whole session sandbox (a limit's kill is
//! fatal, as under `supervisor run`). Its exec is answered with the
//! limit's reason and line, as an execution's result gives them (until
//! 2026-12-07: a fork bomb's exec got a 500, "no answer from its exec
//! helper", and a memory hog's `signaled` with no message), and the
//! session's state and its next request say which limit ended it (until
//! then: `sandbox_exited` alone). A command the user kills itself with
//! SIGKILL stays `signaled`, and its session runs on.

use crate::sessions_daemon::Daemon;

/// The session's state.
fn state(d: &Daemon, id: &str) -> serde_json::Value {
    d.json("GET", &format!("/v1/sessions/{id}"), "").1
}

/// Runs `command` in a new session of `limits`: the exec's status and
/// answer, and the session's id.
fn runaway(d: &Daemon, limits: &str, command: &[&str]) -> (u16, serde_json::Value, String) {
    let id = d.create(&format!(r#"{{"limits": {limits}}}"#));
    let body = serde_json::json!({ "command": command, "timeout_s": 60 }).to_string();
    let (status, v) = d.json("POST", &format!("/v1/sessions/{id}/exec"), &body);
    (status, v, id)
}

/// The session ended by its limit: its state and its next request say which.
fn assert_ended_by(d: &Daemon, id: &str, line: &str) {
    let s = state(d, id);
    assert_eq!(s["state"], "ended", "{s}");
    assert_eq!(s["reason"], "sandbox_exited", "{s}");
    assert!(s["message"].as_str().unwrap_or("").contains(line), "{s}");
    let (status, v) = d.json(
        "POST",
        &format!("/v1/sessions/{id}/exec"),
        r#"{"command": ["true"]}"#,
    );
    assert_eq!(status, 409, "{v}");
    assert!(v["error"].as_str().unwrap_or("").contains(line), "{v}");
}

#[test]
fn a_limit_that_kills_the_session_is_named_in_the_exec_and_the_state() {
    let d = Daemon::start();
    if !d.confined() {
        skip!("no cgroup to make for the hostile guests");
    }
    // A memory hog: what it printed before comes back with the reason.
    let hog = "print('before', flush=True); b = bytearray(400 << 20); print(len(b))";
    let (status, v, id) = runaway(
        &d,
        r#"{"memory_bytes": 104857600}"#,
        &["python3", "-c", hog],
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["reason"].as_str(), v["signal"].as_i64()),
        (Some("memory"), Some(9)),
        "{v}"
    );
    assert_eq!(v["stdout"], "before\n", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("memory limit 100 MiB reached"),
        "{v}"
    );
    assert_ended_by(&d, &id, "memory limit 100 MiB reached");

    // A fork bomb.
    let bomb = "f() { f | f & }; f; sleep 5";
    let (status, v, id) = runaway(&d, r#"{"pids": 32}"#, &["sh", "-c", bomb]);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["reason"].as_str(), v["signal"].as_i64()),
        (Some("pids"), Some(9)),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("process limit 32 reached"),
        "{v}"
    );
    assert_ended_by(&d, &id, "process limit 32 reached");

    // A command that kills itself is only signaled; the session runs on.
    let (status, v, id) = runaway(&d, r#"{"pids": 32}"#, &["sh", "-c", "kill -9 $$"]);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["reason"].as_str(), v["signal"].as_i64(), &v["message"]),
        (Some("signaled"), Some(9), &serde_json::Value::Null),
        "{v}"
    );
    assert_eq!(state(&d, &id)["state"], "running");
    assert_eq!(d.exec(&id, &["echo", "on"])["stdout"], "on\n");
}
