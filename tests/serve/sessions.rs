//! Sessions (`/v1/sessions`, `supervisor sessions`): a command in a
//! session prints what it prints natively, output streams as NDJSON,
//! files go in and out (bytes that are not UTF-8 too), processes a
//! command leaves running are there at the next one, a volume outlives
//! its session and is found again by name, idle sessions are reaped at
//! their TTL and old ones at their lifetime, a killed daemon's sessions
//! are reported ended at its restart (their sandboxes gone, volumes
//! kept), a published port reaches a listener inside, bad input gets
//! 400/404, and the CLI does all of it for humans.

use std::process::Command;
use std::time::Duration;

use crate::common::engine::poll_until;
use crate::sessions_daemon::{request, Daemon};

fn native(args: &[&str], cwd: &str) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .output()
        .expect("run natively")
}

#[test]
fn exec_prints_what_the_command_prints_natively() {
    let d = Daemon::start();
    let id = d.create("{}");
    let script = "echo out; echo err >&2; printf '%s\\n' \"$PWD\"; ls /usr/bin | head -n 5; exit 3";
    let v = d.exec(&id, &["/bin/sh", "-c", script]);
    let n = native(&["/bin/sh", "-c", script], "/tmp");
    assert_eq!(v["exit_code"], 3, "{v}");
    assert_eq!(v["reason"], "exited");
    assert_eq!(
        v["stdout"].as_str().unwrap().as_bytes(),
        &n.stdout[..],
        "{v}"
    );
    assert_eq!(
        v["stderr"].as_str().unwrap().as_bytes(),
        &n.stderr[..],
        "{v}"
    );
    // stdin, env and cwd reach the command.
    let body = r#"{"command": ["sh", "-c", "cat; echo \"$GREETING\"; pwd"],
        "stdin": "from stdin\n", "env": {"GREETING": "hi"}, "cwd": "/usr"}"#;
    let (status, v) = d.json("POST", &format!("/v1/sessions/{id}/exec"), body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["stdout"], "from stdin\nhi\n/usr\n");
    // A missing program: 127 and a message, as a shell would.
    let v = d.exec(&id, &["no-such-program-here"]);
    assert_eq!(v["exit_code"], 127, "{v}");
    assert_eq!(v["reason"], "exec_failed");
    // Output that is not UTF-8 comes as base64, and says so.
    let v = d.exec(&id, &["printf", "\\377\\376"]);
    assert_eq!(v["stdout_encoding"], "base64", "{v}");
    assert_eq!(v["stdout"], "//4=");
}

#[test]
fn exec_streams_ndjson_then_the_result() {
    let d = Daemon::start();
    let id = d.create("{}");
    let body = r#"{"command": ["sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.2; done; echo bad >&2; exit 5"]}"#;
    let a = request(
        &d.socket,
        "POST",
        &format!("/v1/sessions/{id}/exec"),
        &[("Accept", "application/x-ndjson")],
        body.as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert!(a
        .header("content-type")
        .is_some_and(|t| t.contains("application/x-ndjson")));
    let lines: Vec<serde_json::Value> = String::from_utf8(a.body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let out: String = lines
        .iter()
        .filter(|l| l["type"] == "stdout")
        .map(|l| l["data"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(out, "line1\nline2\nline3\n");
    // Written 0.2 s apart, the lines arrive as separate chunks.
    assert!(
        lines.iter().filter(|l| l["type"] == "stdout").count() >= 2,
        "{lines:?}"
    );
    assert!(lines
        .iter()
        .any(|l| l["type"] == "stderr" && l["data"] == "bad\n"));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["exit_code"], 5);
}

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
fn processes_left_running_are_there_at_the_next_exec() {
    let d = Daemon::start();
    let id = d.create("{}");
    let v = d.exec(
        &id,
        &[
            "sh",
            "-c",
            "sleep 300 & echo $! > /tmp/bg.pid; echo started",
        ],
    );
    assert_eq!(v["stdout"], "started\n", "{v}");
    let v = d.exec(
        &id,
        &["sh", "-c", "kill -0 $(cat /tmp/bg.pid) && echo alive"],
    );
    assert_eq!(v["stdout"], "alive\n", "{v}");
    let (status, state) = d.json("GET", &format!("/v1/sessions/{id}"), "");
    assert_eq!(status, 200);
    assert_eq!(state["state"], "running");
    let procs = state["processes"].as_array().unwrap();
    assert!(procs.iter().any(|p| p["command"] == "sleep 300"), "{state}");
    assert!(state["memory_bytes"].as_u64().unwrap() > 0, "{state}");
    // A command past its timeout is killed; the session goes on.
    let body = r#"{"command": ["sleep", "100"], "timeout_s": 1}"#;
    let (_, v) = d.json("POST", &format!("/v1/sessions/{id}/exec"), body);
    assert_eq!(v["reason"], "timeout", "{v}");
    assert_eq!(v["signal"], 9);
    assert_eq!(d.exec(&id, &["true"])["exit_code"], 0);
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

#[test]
fn a_published_port_reaches_a_listener_inside() {
    if !crate::common::have("python3") {
        skip!("python3 is not installed (.ci/run installs it)");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = Daemon::start();
    let id = d.create(&format!(r#"{{"publish": ["127.0.0.1:{port}:8000"]}}"#));
    d.exec(&id, &["sh", "-c", "echo hello-from-inside > /tmp/index.html; cd /tmp && python3 -m http.server 8000 >/dev/null 2>&1 &"]);
    let fetch = || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Some(text)
    };
    assert!(
        poll_until(Duration::from_secs(30), || fetch()
            .is_some_and(|t| t.contains("hello-from-inside"))),
        "the listener inside was not reached"
    );
}

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
fn the_cli_lists_runs_copies_and_removes() {
    let d = Daemon::start();
    let cli = |args: &[&str]| d.sessions_cli(args);
    let out = cli(&["create"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = cli(&[
        "exec",
        &id,
        "--",
        "sh",
        "-c",
        "echo to-out; echo to-err >&2; exit 4",
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"to-out\n");
    assert_eq!(out.stderr, b"to-err\n");
    let dir = crate::common::Tree::new();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    let out = cli(&[
        "cp",
        dir.join("big.bin").to_str().unwrap(),
        &format!("{id}:up/big.bin"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("upload:"),
        "no progress line"
    );
    let back = dir.join("back.bin");
    let out = cli(&["cp", &format!("{id}:up/big.bin"), back.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == big);
    let out = cli(&["ls"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("running")),
        "{table}"
    );
    assert!(cli(&["rm", &id]).status.success());
    let table = String::from_utf8(cli(&["ls"]).stdout).unwrap();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("deleted")),
        "{table}"
    );
    let out = cli(&["exec", "0123456789abcdef", "--", "true"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
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

/// A static program run by a session's `exec` (a new process in the
/// running sandbox, `sandbox/src/launch/exec_request.rs`) starts through
/// the static loader as `run`'s command does: the helper looks at the
/// program in the session's own view. It prints what it prints natively
/// (a static glibc build of `tests/c/static_reads.c`, from the session's
/// volume), and a program started through the loader reads its own
/// arguments as its command line, as natively.
#[test]
fn exec_starts_a_static_program_through_the_loader() {
    use crate::common::{self, c_static, fill_static_reads_dir, landlock_abi, Run, Tree};
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let prog = c_static("cc");
    let here = Tree::new();
    fill_static_reads_dir(here.path());
    let native = Run::new(&[prog.as_os_str(), here.path().as_os_str()])
        .native()
        .ok("native");
    let d = Daemon::start();
    let volume = d.data_dir.join("volumes/static");
    std::fs::create_dir_all(&volume).expect("mkdir volume");
    std::fs::copy(&prog, volume.join("static_reads")).expect("copy the program");
    fill_static_reads_dir(&volume.join("d"));
    let id = d.create(r#"{"volume": {"name": "static", "path": "/data"}}"#);
    let v = d.exec(&id, &["/data/static_reads", "/data/d"]);
    assert_eq!(v["exit_code"], 0, "{v}");
    common::assert_static_reads_as_native(
        v["stdout"].as_str().unwrap_or_default(),
        &native,
        &v.to_string(),
    );
    let v = d.exec(&id, &["/bin/busybox", "cat", "/proc/self/cmdline"]);
    assert_eq!(
        v["stdout"].as_str(),
        Some("/bin/busybox\0cat\0/proc/self/cmdline\0"),
        "{v}"
    );
}
