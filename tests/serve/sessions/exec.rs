//! A command in a session: it prints what it prints natively (a static
//! program too, started through the static loader), output streams as
//! NDJSON, processes it leaves running are there at the next one, and
//! one past its timeout is killed while the session goes on.

use std::process::Command;

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
