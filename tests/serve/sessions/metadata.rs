//! A session's metadata (the operator's tags, seed 003's `{"user",
//! "notebook", "kind"}`): given at creation (from a template too), shown
//! by the session's state, the list and `supervisor sessions ls`, the
//! list narrowed by `?metadata.KEY=VALUE` (every pair must match), kept
//! across hibernate, wake and a daemon's restart, never seen by the
//! guest; bad metadata is a 400 with one line and makes nothing.

use serde_json::{json, Value};

use crate::sessions_daemon::Daemon;

const TAGS: &str = r#"{"user": "u_42", "notebook": "nb_17", "kind": "kernel"}"#;

fn state(d: &Daemon, id: &str) -> Value {
    let (status, v) = d.json("GET", &format!("/v1/sessions/{id}"), "");
    assert_eq!(status, 200, "{v}");
    v
}

/// The ids the list gives for `query` (sorted).
fn listed(d: &Daemon, query: &str) -> Vec<String> {
    let (status, v) = d.json("GET", &format!("/v1/sessions{query}"), "");
    assert_eq!(status, 200, "{query}: {v}");
    let mut ids: Vec<String> = v["sessions"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| s["id"].as_str().expect("an id").to_string())
        .collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    ids.sort();
    ids
}

#[test]
fn metadata_is_shown_filtered_on_and_never_reaches_the_guest() {
    let d = Daemon::start();
    let tags: Value = serde_json::from_str(TAGS).unwrap();
    let (status, made) = d.json(
        "POST",
        "/v1/sessions",
        &json!({ "metadata": tags }).to_string(),
    );
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["metadata"], tags);
    let a = made["id"].as_str().unwrap().to_string();
    let b = d.create(r#"{"metadata": {"user": "u_7", "kind": "kernel"}}"#);
    let c = d.create("{}");
    let odd = d.create(r#"{"metadata": {"team name": "R&D a+b=c"}}"#);
    assert_eq!(state(&d, &a)["metadata"], tags);
    assert_eq!(state(&d, &c)["metadata"], json!({}));

    assert_eq!(listed(&d, "").len(), 4);
    assert_eq!(listed(&d, "?metadata.user=u_42"), sorted(&[&a]));
    assert_eq!(listed(&d, "?metadata.kind=kernel"), sorted(&[&a, &b]));
    assert_eq!(
        listed(&d, "?metadata.kind=kernel&metadata.user=u_7"),
        sorted(&[&b])
    );
    assert!(listed(&d, "?metadata.user=u_42&metadata.kind=other").is_empty());
    assert!(listed(&d, "?metadata.user=nobody").is_empty());
    assert_eq!(
        listed(&d, "?metadata.team%20name=R%26D%20a%2Bb%3Dc"),
        sorted(&[&odd])
    );
    for bad in ["?state=running", "?metadata.=x", "?user=u_42"] {
        let (status, v) = d.json("GET", &format!("/v1/sessions{bad}"), "");
        assert_eq!(status, 400, "{bad}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.contains('\n')),
            "{v}"
        );
    }

    // The guest sees none of it: not in a command's environment, nor in
    // any of its processes' command lines or environments.
    let v = d.exec(
        &a,
        &[
            "sh",
            "-c",
            "env; cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '",
        ],
    );
    assert_eq!(v["exit_code"], 0, "{v}");
    let seen = v["stdout"].as_str().unwrap();
    assert!(seen.contains("PATH="), "{seen}");
    for tag in ["u_42", "nb_17", "notebook"] {
        assert!(!seen.contains(tag), "the guest sees {tag}: {seen}");
    }

    // `supervisor sessions ls` shows it, and narrows by it.
    let out = d.sessions_cli(&["ls", "--metadata", "user=u_42"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.lines().next().unwrap().contains("METADATA"),
        "{table}"
    );
    let row = table.lines().find(|l| l.starts_with(&a)).expect(&table);
    assert!(
        row.contains("kind=kernel,notebook=nb_17,user=u_42"),
        "{table}"
    );
    assert!(!table.contains(&b), "{table}");
    let out = d.sessions_cli(&["ls", "-m", "team name=R&D a+b=c"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().any(|l| l.starts_with(&odd)), "{table}");
    assert_eq!(table.lines().count(), 2, "{table}");
}

#[test]
fn bad_metadata_gets_400_with_one_line_and_makes_nothing() {
    let d = Daemon::start();
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
    let big: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!("v".repeat(1000))))
        .collect();
    let cases = [
        (
            json!({"metadata": {"user": 42}}),
            "a string value, not a number",
        ),
        (json!({"metadata": ["user"]}), "an object of string values"),
        (json!({"metadata": many}), "65 keys, at most 64"),
        (json!({"metadata": {"": "x"}}), "from 1 to 128"),
        (json!({"metadata": {"k".repeat(129): "x"}}), "from 1 to 128"),
        (json!({"metadata": {"k": "v".repeat(1025)}}), "at most 1024"),
        (json!({"metadata": big}), "at most 16384"),
        (json!({"metadata": {"k": "a\nb"}}), "control characters"),
        (
            json!({"template": "nope", "metadata": {"k": "v".repeat(1025)}}),
            "at most 1024",
        ),
    ];
    for (spec, says) in cases {
        let (status, v) = d.json("POST", "/v1/sessions", &spec.to_string());
        assert_eq!(status, 400, "{spec}: {v}");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(says) && error.contains("metadata") && !error.contains('\n'),
            "{spec}: {v}"
        );
    }
    // At the bounds: accepted.
    let most: serde_json::Map<String, Value> = (0..64)
        .map(|i| (format!("{i:0>128}"), json!("v".repeat(120))))
        .collect();
    let (status, v) = d.json(
        "POST",
        "/v1/sessions",
        &json!({ "metadata": most }).to_string(),
    );
    assert_eq!(status, 201, "{v}");
    assert_eq!(listed(&d, "").len(), 1);
    let sessions = std::fs::read_dir(d.data_dir.join("sessions"))
        .unwrap()
        .count();
    assert_eq!(sessions, 1);
}

#[test]
fn metadata_survives_hibernate_wake_and_a_restart() {
    let mut d = Daemon::start();
    let tags: Value = serde_json::from_str(TAGS).unwrap();
    let spec = json!({ "metadata": tags }).to_string();
    let sleeper = d.create(&spec);
    let v = d.exec(
        &sleeper,
        &["sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 &"],
    );
    assert_eq!(v["exit_code"], 0, "{v}");
    let running = d.create(r#"{"metadata": {"user": "u_42", "kind": "shell"}}"#);
    let (status, v) = d.json("POST", &format!("/v1/sessions/{sleeper}/hibernate"), "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "hibernated");
    assert_eq!(v["metadata"], tags);

    d.kill();
    d.launch();
    let v = state(&d, &sleeper);
    assert_eq!(v["state"], "hibernated", "{v}");
    assert_eq!(v["metadata"], tags);
    let v = state(&d, &running);
    assert_eq!(v["reason"], "daemon_restarted", "{v}");
    assert_eq!(v["metadata"], json!({"user": "u_42", "kind": "shell"}));
    assert_eq!(
        listed(&d, "?metadata.user=u_42"),
        sorted(&[&sleeper, &running])
    );
    assert_eq!(listed(&d, "?metadata.kind=kernel"), sorted(&[&sleeper]));

    let (status, v) = d.json("POST", &format!("/v1/sessions/{sleeper}/wake"), "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "running");
    assert_eq!(v["metadata"], tags);
}

#[test]
fn a_session_from_a_template_takes_metadata() {
    let d = Daemon::start();
    let (status, v) = d.json("POST", "/v1/templates", r#"{"name": "tm", "warm": 0}"#);
    assert_eq!(status, 201, "{v}");
    let (status, v) = d.json(
        "POST",
        "/v1/sessions",
        r#"{"template": "tm", "metadata": {"user": "u_42"}}"#,
    );
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["template"], "tm");
    assert_eq!(v["metadata"], json!({"user": "u_42"}));
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(listed(&d, "?metadata.user=u_42"), vec![id]);
    let (status, v) = d.json(
        "POST",
        "/v1/sessions",
        r#"{"template": "tm", "metadata": {"": "x"}}"#,
    );
    assert_eq!(status, 400, "{v}");
}
