//! `POST /v1/executions`: the result's exit code, stdout and stderr are
//! the native run's; stdin, env, files, bytes that are not UTF-8, the
//! limits' reasons, and pooled runs; a killed daemon's pool goes with
//! it.

use serde_json::json;

use crate::common::serve::Daemon;
use crate::common::Run;

fn native(argv: &[&str], stdin: &[u8]) -> crate::common::Out {
    Run::new(argv).cwd("/tmp").stdin(stdin).native()
}

#[test]
fn a_command_s_result_is_the_native_run_s() {
    let d = Daemon::start(&[]);
    let http = d.http();
    for (argv, stdin) in [
        (
            vec![
                "python3",
                "-c",
                "import sys; print(42); print('err', file=sys.stderr); sys.exit(3)",
            ],
            "",
        ),
        (vec!["sh", "-c", "echo one; echo two >&2; exit 0"], ""),
        (vec!["cat"], "fed through stdin\n"),
        // Its stdio reopened by name: the daemon's pipes are the host
        // root's (`launch/host_stdio.rs`, open_pipe_to_guest).
        (
            vec![
                "sh",
                "-c",
                "read l < /dev/stdin; echo \"$l\" > /dev/stdout; echo err > /dev/stderr",
            ],
            "by name\n",
        ),
        (
            vec![
                "python3",
                "-c",
                "import sys; print(sys.stdin.read().upper())",
            ],
            "abc",
        ),
    ] {
        let r = http.post_json("/v1/executions", &json!({"command": argv, "stdin": stdin}));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let got = r.json();
        let want = native(&argv, stdin.as_bytes());
        assert_eq!(got["exit_code"], json!(want.code), "{argv:?}: {got}");
        assert_eq!(got["stdout"], json!(want.stdout), "{argv:?}");
        assert_eq!(got["stderr"], json!(want.stderr), "{argv:?}");
        assert_eq!(got["reason"], "exited");
        assert_eq!(got["signal"], json!(null));
        assert_eq!(got["stdout_truncated"], false);
        assert!(got["wall_ms"].as_f64().unwrap() > 0.0, "{got}");
        assert!(got["id"].as_str().unwrap().len() == 32, "{got}");
    }
}

#[test]
fn language_and_code_env_and_pooled_runs() {
    let d = Daemon::start(&["--pool-size=1"]);
    let http = d.http();
    let r = http.post_json(
        "/v1/executions",
        &json!({"language": "python3", "code": "import os; print(os.environ['GREETING'], 6*7)",
                "env": {"GREETING": "hello"}}),
    );
    let got = r.json();
    assert_eq!(
        (r.status, got["stdout"].as_str()),
        (200, Some("hello 42\n")),
        "{got}"
    );
    let r = http.post_json(
        "/v1/executions",
        &json!({"language": "sh", "code": "echo $((6*7))"}),
    );
    assert_eq!(r.json()["stdout"], "42\n");
    // Executions without files run in the pool's sandboxes.
    let r = http.post_json(
        "/v1/executions",
        &json!({"command": ["python3", "-c", "pass"]}),
    );
    let got = r.json();
    assert_eq!(
        (got["exit_code"].as_i64(), got["pooled"].as_bool()),
        (Some(0), Some(true)),
        "{got}"
    );
    assert!(got["peak_memory_bytes"].as_u64().is_some(), "{got}");
}

#[test]
fn files_are_in_the_scratch_directory() {
    let d = Daemon::start(&[]);
    let r = d.http().post_json(
        "/v1/executions",
        &json!({
            "command": ["python3", "main.py"],
            "files": [
                {"path": "main.py", "content": "import lib; print(lib.X, open('data/in.bin','rb').read())"},
                {"path": "lib.py", "content": "X = 'from lib'"},
                {"path": "data/in.bin", "content": "/wA=", "encoding": "base64"}
            ]
        }),
    );
    let got = r.json();
    assert_eq!(got["stdout"], "from lib b'\\xff\\x00'\n", "{got}");
    assert_eq!(got["exit_code"], 0);
}

#[test]
fn bytes_that_are_not_utf8_come_as_base64() {
    let d = Daemon::start(&[]);
    let argv = ["printf", "\\377\\376ok"];
    let got = d
        .http()
        .post_json("/v1/executions", &json!({"command": argv}))
        .json();
    let want = native(&argv, b"");
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(got["stdout"].as_str().unwrap())
        .unwrap();
    assert_eq!(got["stdout_encoding"], "base64", "{got}");
    assert_eq!(bytes, want.stdout_bytes);
}

#[test]
fn limits_end_runs_with_their_reason() {
    let Some(cg) = crate::common::cgroups::SafetyCgroup::new("serve-limits", 2 << 30, 512) else {
        skip!("no cgroup to make for the hostile guests");
    };
    let d = Daemon::start_in(crate::common::Tree::new(), &[], Some(&cg));
    let http = d.http();
    let got = http
        .post_json(
            "/v1/executions",
            &json!({"command": ["python3", "-c", "while True: pass"], "limits": {"timeout_s": 1}}),
        )
        .json();
    assert_eq!(
        (got["reason"].as_str(), got["signal"].as_i64()),
        (Some("timeout"), Some(9)),
        "{got}"
    );
    assert!(
        got["message"].as_str().unwrap().contains("timeout"),
        "{got}"
    );
    let got = http
        .post_json(
            "/v1/executions",
            &json!({"command": ["python3", "-c", "print('x' * 100000)"], "limits": {"output_bytes": 1000}}),
        )
        .json();
    assert_eq!(got["reason"], "output", "{got}");
    assert_eq!(got["stdout_truncated"], true, "{got}");
    assert!(got["stdout"].as_str().unwrap().len() <= 1000, "{got}");
    let got = http
        .post_json(
            "/v1/executions",
            &json!({"command": ["python3", "-c", "b = bytearray(400 << 20); print(len(b))"],
                    "limits": {"memory_bytes": 100 << 20}}),
        )
        .json();
    assert_eq!(got["reason"], "memory", "{got}");
    drop(d);
    assert!(
        cg.wait_empty(std::time::Duration::from_secs(30)),
        "left behind:\n{}",
        cg.describe()
    );
}

/// The processes whose parent is `pid` (none once it has gone).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A daemon killed outright (SIGKILL: no shutdown of its own) takes its
/// execution pool with it: the pool's lifeline ends, the pool kills its
/// sandboxes and exits, and nothing is left in the daemon's cgroup.
#[test]
fn a_killed_daemon_s_pool_and_its_sandboxes_go_with_it() {
    use std::time::Duration;
    let mut d = crate::sessions_daemon::Daemon::start();
    let pid_file = d.data_dir.join("pools").join("1.pid");
    let pool = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
    };
    // The pool the daemon starts for executions without limits, and its
    // two sandboxes (`--pool-size`'s default).
    let up = crate::common::engine::poll_until(Duration::from_secs(60), || {
        pool().is_some_and(|pid| children_of(pid).len() >= 2)
    });
    assert!(up, "the daemon's pool and its sandboxes did not start");
    let pid = pool().expect("the pool's pid");
    let sandboxes = children_of(pid);
    d.kill();
    if let Err(left) = d.emptied(Duration::from_secs(20)) {
        panic!("the pool {pid} (sandboxes {sandboxes:?}) outlived its daemon:\n{left}");
    }
}
