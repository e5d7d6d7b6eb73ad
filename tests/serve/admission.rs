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

/// Waiters are served round robin across tenants (tokens on TCP): a
/// second tenant's one request runs after the first tenant's oldest
/// waiter, not after all of them.
#[test]
fn tenants_take_turns_in_the_queue() {
    use crate::common::serve::Http;
    use crate::common::Tree;
    use std::sync::{Arc, Mutex};
    let dir = Tree::new();
    let tokens = dir.file("tokens", "tenant-a\ntenant-b\n");
    let port = crate::common::free_port();
    let addr = format!("127.0.0.1:{port}");
    let d = Daemon::start_in(
        dir,
        &[
            &format!("--listen={addr}"),
            &format!("--token-file={}", tokens.display()),
            "--max-running=1",
            "--max-queued=10",
        ],
        None,
    );
    let tcp = Http::Tcp(addr.clone());
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < until, "no TCP listener");
        std::thread::sleep(Duration::from_millis(20));
    }
    let done = Arc::new(Mutex::new(Vec::new()));
    let health = || d.http().get("/v1/health").json();
    let mut threads = vec![];
    // a0 runs; a1, a2, a3 queue in that order; then b1.
    for (i, (token, name)) in [
        ("tenant-a", "a0"),
        ("tenant-a", "a1"),
        ("tenant-a", "a2"),
        ("tenant-a", "a3"),
        ("tenant-b", "b1"),
    ]
    .into_iter()
    .enumerate()
    {
        let (tcp, done) = (tcp.clone(), done.clone());
        // a0 runs long enough for the others to queue behind it.
        let pause = if name == "a0" { 5.0 } else { 0.2 };
        let body = serde_json::to_vec(
            &json!({"command": ["sh", "-c", format!("sleep {pause}; echo {name}")]}),
        )
        .unwrap();
        threads.push(std::thread::spawn(move || {
            let auth = format!("Bearer {token}");
            let r = tcp.request("POST", "/v1/executions", &[("Authorization", &auth)], &body);
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            done.lock()
                .unwrap()
                .push(r.json()["stdout"].as_str().unwrap().trim().to_string());
        }));
        // Each in place before the next: running 1, then queued i.
        while (health()["running"].as_u64(), health()["queued"].as_u64())
            != (Some(1), Some(i as u64))
        {
            assert!(
                Instant::now() < until + Duration::from_secs(20),
                "{}",
                health()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*done.lock().unwrap(), ["a0", "a1", "b1", "a2", "a3"]);
}
