//! Bad input gets the right status and a one-line `{"error": ...}`:
//! malformed JSON, unknown fields, oversized bodies, unknown ids and
//! paths, bad limits; on TCP, a missing or wrong token. Afterwards the
//! daemon still answers and has leaked nothing: its descriptors are back
//! to their count before, and no sandbox, process or cgroup is left once
//! it stops.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::cgroups::SafetyCgroup;
use crate::common::serve::{fd_count, Daemon, Http};
use crate::common::Tree;

#[test]
fn bad_requests_get_their_status_and_one_line() {
    let Some(cg) = SafetyCgroup::new("serve-bad", 2 << 30, 512) else {
        skip!("no cgroup to make");
    };
    let d = Daemon::start_in(Tree::new(), &["--max-body=4096"], Some(&cg));
    let http = d.http();
    // Warm: the pool is up, the runtime's threads are there.
    let ok = http.post_json("/v1/executions", &json!({"command": ["true"]}));
    assert_eq!(ok.status, 200);
    let fds_before = fd_count(d.pid());
    let post = |body: &[u8]| http.request("POST", "/v1/executions", &[], body);
    for (body, status) in [
        (&b"{not json"[..], 400),
        (b"", 400),
        (b"[]", 400),
        (br#"{"command": ["true"], "unknown": 1}"#, 400),
        (br#"{"command": "true"}"#, 400),
        (br#"{"command": []}"#, 400),
        (br#"{"language": "cobol", "code": "x"}"#, 400),
        (
            br#"{"command": ["true"], "limits": {"memory_bytes": 5}}"#,
            400,
        ),
        (br#"{"command": ["true"], "limits": {"timeout_s": 0}}"#, 400),
        (br#"{"command": ["true"], "limits": {"cpus": -1}}"#, 400),
        (br#"{"command": ["true"], "limits": {"pids": 0}}"#, 400),
        (br#"{"command": ["true"], "limits": {"walltime": 1}}"#, 400),
        (
            br#"{"command": ["true"], "files": [{"path": "../../etc/passwd", "content": ""}]}"#,
            400,
        ),
        (
            br#"{"command": ["true"], "egress": ["nonsense::rule"]}"#,
            400,
        ),
        (br#"{"command": ["a\u0000b"]}"#, 400),
    ] {
        let r = post(body);
        assert_eq!(
            r.status,
            status,
            "{}: {}",
            String::from_utf8_lossy(body),
            String::from_utf8_lossy(&r.body)
        );
        r.error();
    }
    let big = format!(r#"{{"command": ["echo", "{}"]}}"#, "x".repeat(10_000));
    let r = post(big.as_bytes());
    assert_eq!(r.status, 413);
    r.error();
    for (method, path, status) in [
        (
            "GET",
            "/v1/executions/00000000000000000000000000000000",
            404,
        ),
        ("GET", "/v1/executions/..%2f..%2fetc%2fpasswd", 404),
        ("GET", "/v1/executions/nope", 404),
        ("GET", "/v1/executions/%ff%fe", 404),
        ("GET", "/v1/nothing", 404),
        ("DELETE", "/v1/executions", 405),
    ] {
        let r = http.request(method, path, &[], b"");
        assert_eq!(r.status, status, "{method} {path}");
        r.error();
    }
    // Still answering, and nothing kept open.
    assert_eq!(http.get("/v1/health").status, 200);
    let until = Instant::now() + Duration::from_secs(10);
    while fd_count(d.pid()) > fds_before {
        assert!(
            Instant::now() < until,
            "descriptors: {} before, {} after",
            fds_before,
            fd_count(d.pid())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _dir) = d.stop();
    assert!(status.success(), "{status:?}");
    assert!(
        cg.wait_empty(Duration::from_secs(30)),
        "left behind: {:?} ({} tasks)",
        cg.children(),
        cg.tasks()
    );
}

#[test]
fn tcp_needs_a_token() {
    let dir = Tree::new();
    let tokens = dir.file("tokens", "# graders\nsecret-one\nsecret-two\n");
    let port = crate::common::free_port();
    let addr = format!("127.0.0.1:{port}");
    let listen = format!("--listen={addr}");
    let token_file = format!("--token-file={}", tokens.display());
    let d = Daemon::start_in(dir, &[&listen, &token_file], None);
    let tcp = Http::Tcp(addr);
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(match &tcp {
        Http::Tcp(a) => a.as_str(),
        _ => unreachable!(),
    })
    .is_err()
    {
        assert!(Instant::now() < until, "no TCP listener: {}", d.log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    for headers in [
        vec![],
        vec![("Authorization", "Bearer wrong")],
        vec![("Authorization", "secret-one")],
    ] {
        let r = tcp.request("GET", "/v1/health", &headers, b"");
        assert_eq!(r.status, 401, "{headers:?}");
        r.error();
    }
    let r = tcp.request(
        "GET",
        "/v1/health",
        &[("Authorization", "Bearer secret-two")],
        b"",
    );
    assert_eq!(r.status, 200);
    let body = serde_json::to_vec(&json!({"command": ["echo", "over tcp"]})).unwrap();
    let r = tcp.request(
        "POST",
        "/v1/executions",
        &[("Authorization", "Bearer secret-one")],
        &body,
    );
    assert_eq!(r.json()["stdout"], "over tcp\n");
    // The Unix socket needs none.
    assert_eq!(d.http().get("/v1/health").status, 200);
}

#[test]
fn a_listen_without_a_token_file_is_refused() {
    let out = std::process::Command::new(crate::common::bin())
        .args([
            "serve",
            "--socket",
            "/tmp/never.sock",
            "--listen",
            "127.0.0.1:1",
        ])
        .output()
        .unwrap();
    // The command line's errors exit 125, as `run`'s do.
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token-file"));
}
