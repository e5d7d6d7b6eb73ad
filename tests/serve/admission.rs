//! `--max-running` and `--max-queued`: a burst past both gets 429 with
//! `Retry-After`, every request is answered (a result or a 429), none is
//! lost; a client that disconnects kills its execution.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::serve::{processes_with, Daemon};

#[test]
fn past_running_and_queued_the_answer_is_429() {
    let d = Daemon::start(&["--max-running=1", "--max-queued=1"]);
    let http = d.http();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let http = http.clone();
            std::thread::spawn(move || {
                http.post_json(
                    "/v1/executions",
                    &json!({"command": ["sh", "-c", "sleep 2; echo done"]}),
                )
            })
        })
        .collect();
    let answers: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let (mut ok, mut refused) = (0, 0);
    for r in &answers {
        match r.status {
            200 => {
                assert_eq!(r.json()["stdout"], "done\n");
                ok += 1;
            }
            429 => {
                assert_eq!(r.header("retry-after"), Some("1"));
                assert!(r.error().contains("retry"));
                refused += 1;
            }
            s => panic!("status {s}: {}", String::from_utf8_lossy(&r.body)),
        }
    }
    assert_eq!(ok + refused, 6);
    assert!(ok >= 2 && refused >= 1, "ok {ok}, refused {refused}");
    assert_eq!(http.get("/v1/health").json()["running"], 0);
}

#[test]
fn a_client_that_disconnects_kills_its_execution() {
    let d = Daemon::start(&[]);
    let http = d.http();
    for accept in ["application/json", "application/x-ndjson"] {
        let marker = format!("serve-disconnect-{}-{}", std::process::id(), accept.len());
        let body = serde_json::to_vec(&json!({
            "command": ["sh", "-c", format!("echo up; sleep 1000; : {marker}")]
        }))
        .unwrap();
        let mut conn = http.send("POST", "/v1/executions", &[("Accept", accept)], &body);
        let until = Instant::now() + Duration::from_secs(30);
        while processes_with(&marker).is_empty() {
            assert!(Instant::now() < until, "the execution never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // With the stream, read a little first: the answer has begun.
        if accept == "application/x-ndjson" {
            let mut some = [0u8; 16];
            let _ = conn.get_mut().read(&mut some);
        }
        drop(conn);
        while !processes_with(&marker).is_empty() {
            assert!(
                Instant::now() < until,
                "{accept}: the guest outlived its client"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        while http.get("/v1/health").json()["running"] != 0 {
            assert!(
                Instant::now() < until,
                "{accept}: the place was not given back"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
