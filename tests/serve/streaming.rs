//! `Accept: application/x-ndjson`: output lines arrive while the
//! execution still runs (the daemon's health says one is running after
//! the first line was read), then the result, the same as unstreamed.

use serde_json::json;

use crate::common::serve::{next_line, read_head, Daemon};

#[test]
fn output_streams_as_written_then_the_result() {
    let d = Daemon::start(&[]);
    let http = d.http();
    let body = serde_json::to_vec(&json!({
        "command": ["sh", "-c", "echo first; sleep 3; echo second; echo late >&2; exit 4"]
    }))
    .unwrap();
    let mut conn = http.send(
        "POST",
        "/v1/executions",
        &[
            ("Accept", "application/x-ndjson"),
            ("Content-Type", "application/json"),
        ],
        &body,
    );
    let (status, headers) = read_head(&mut conn);
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v == "application/x-ndjson"));
    let mut pending = vec![];
    let first = next_line(&mut conn, &mut pending).expect("a first line");
    assert_eq!(
        first,
        json!({"type": "stdout", "data": "first\n", "encoding": "utf-8"})
    );
    // Still running: the line came before the end.
    assert_eq!(http.get("/v1/health").json()["running"], 1);
    let mut lines = vec![];
    while let Some(line) = next_line(&mut conn, &mut pending) {
        lines.push(line);
    }
    let result = lines.pop().expect("the result line");
    assert_eq!(result["type"], "result", "{result}");
    let result = &result["result"];
    assert_eq!(
        (result["exit_code"].as_i64(), result["reason"].as_str()),
        (Some(4), Some("exited"))
    );
    assert_eq!(result["stdout"], "first\nsecond\n");
    assert_eq!(result["stderr"], "late\n");
    let streamed: Vec<_> = lines
        .iter()
        .map(|l| (l["type"].clone(), l["data"].clone()))
        .collect();
    assert!(
        streamed.contains(&(json!("stdout"), json!("second\n"))),
        "{lines:?}"
    );
    assert!(
        streamed.contains(&(json!("stderr"), json!("late\n"))),
        "{lines:?}"
    );
    // Kept like any other result.
    let id = result["id"].as_str().unwrap();
    assert_eq!(http.get(&format!("/v1/executions/{id}")).json(), *result);
}
