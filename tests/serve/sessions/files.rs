//! A session's files and volumes: files go in and out (bytes that are
//! not UTF-8 too; paths that leave the session refused), a volume
//! outlives its session and is found again by name, and neither the
//! daemon's files nor other sessions' volumes show inside.

use crate::sessions_daemon::{request, Daemon};

#[test]
fn files_go_in_and_come_out() {
    let d = Daemon::start();
    let id = d.create("{}");
    let data: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let url = format!("/v1/sessions/{id}/files/dir/sub/data.bin");
    let put = request(
        &d.socket,
        "PUT",
        &url,
        &[("Content-Type", "application/octet-stream")],
        &data,
    );
    assert_eq!(put.status, 200, "{}", String::from_utf8_lossy(&put.body));
    let got = d.request("GET", &url, b"");
    assert_eq!(got.status, 200);
    assert!(got.body == data, "the file came back different");
    // The session's own commands see it where the path says.
    let v = d.exec(&id, &["sh", "-c", "wc -c < /tmp/dir/sub/data.bin"]);
    assert_eq!(v["stdout"].as_str().unwrap().trim(), "300000");
    assert_eq!(
        d.request("GET", &format!("/v1/sessions/{id}/files/nope"), b"")
            .status,
        404
    );
    for bad in [
        "../etc/passwd",
        "/etc/passwd",
        "a/../../x",
        "a//b",
        "./a",
        "%2e%2e/x",
    ] {
        let a = d.request("GET", &format!("/v1/sessions/{id}/files/{bad}"), b"");
        assert_eq!(
            a.status,
            400,
            "GET {bad}: {}",
            String::from_utf8_lossy(&a.body)
        );
        let a = d.request("PUT", &format!("/v1/sessions/{id}/files/{bad}"), b"x");
        assert_eq!(
            a.status,
            400,
            "PUT {bad}: {}",
            String::from_utf8_lossy(&a.body)
        );
    }
}

#[test]
fn a_volume_outlives_its_session_and_is_found_by_name() {
    let d = Daemon::start();
    let spec = r#"{"volume": {"name": "notes", "path": "/work"}}"#;
    let first = d.create(spec);
    let v = d.exec(&first, &["sh", "-c", "pwd; echo kept > saved.txt"]);
    assert_eq!(v["stdout"], "/work\n", "{v}");
    let (status, v) = d.json("DELETE", &format!("/v1/sessions/{first}"), "");
    assert_eq!(status, 200);
    assert_eq!(v["state"], "ended");
    assert_eq!(v["reason"], "deleted");
    // An ended session runs nothing.
    let (status, _) = d.json(
        "POST",
        &format!("/v1/sessions/{first}/exec"),
        r#"{"command": ["true"]}"#,
    );
    assert_eq!(status, 409);
    let host = d.data_dir.join("volumes/notes/saved.txt");
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "kept\n");
    let second = d.create(spec);
    let got = d.request(
        "GET",
        &format!("/v1/sessions/{second}/files/saved.txt"),
        b"",
    );
    assert_eq!(got.body, b"kept\n");
}

#[test]
fn the_daemons_files_and_other_volumes_do_not_show_inside() {
    let d = Daemon::start();
    let other = d.create(r#"{"volume": {"name": "secret-of-another"}}"#);
    d.exec(&other, &["sh", "-c", "echo private > mine.txt"]);
    let id = d.create(r#"{"volume": {"name": "mine"}}"#);
    let volumes = d.data_dir.join("volumes");
    let script = format!(
        "ls {} 2>&1; ls {} 2>&1; echo done",
        volumes.display(),
        d.data_dir.display()
    );
    let v = d.exec(&id, &["sh", "-c", &script]);
    let out = v["stdout"].as_str().unwrap();
    assert!(out.ends_with("done\n"), "{v}");
    assert!(
        !out.contains("secret-of-another") && !out.contains("session.json"),
        "{out}"
    );
}
