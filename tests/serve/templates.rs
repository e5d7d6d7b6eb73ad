//! Templates (`/v1/templates`, `supervisor sessions template`): a session
//! made from a template starts with the template's setup already done (a
//! warm numpy kernel answering on a loopback port inside), answers as
//! the same computation does natively, and is alone: a variable set in
//! one kernel, a file written in one session, never shows in a sibling,
//! and a session ended by its own pids limit leaves its sibling running.
//! A setup that fails is a 422 with its last line and leaves nothing; an
//! unknown template is a 404; a deleted template's sessions stay; a
//! restarted daemon finds its templates and warms them up again; a
//! template without warm sessions sets each one up on request; the CLI
//! makes, lists and removes them. Pandas is not packaged here: the
//! kernel imports numpy only.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::engine::poll_until;
use crate::sessions_daemon::Daemon;

/// A tiny kernel: one line of Python per connection on 127.0.0.1:7000,
/// evaluated (or executed) in one namespace that has numpy imported; the
/// answer is the value's repr.
const KERNEL: &str = r#"
import socket, sys
import numpy as np
ns = {"np": np, "sys": sys}
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000))
s.listen(16)
open("/tmp/kernel.ready", "w").write("ready")
while True:
    c, _ = s.accept()
    f = c.makefile("rw")
    line = f.readline()
    try:
        try:
            out = repr(eval(line, ns))
        except SyntaxError:
            exec(line, ns)
            out = "ok"
    except Exception as e:
        out = "error: " + type(e).__name__
    f.write(out + "\n")
    f.flush()
    c.close()
"#;

/// The setup that starts the kernel and waits until it listens.
fn kernel_setup() -> Value {
    json!([
        {"command": ["sh", "-c", "cat > /tmp/kernel.py"], "stdin": KERNEL},
        {"command": ["sh", "-c", "python3 /tmp/kernel.py > /tmp/kernel.log 2>&1 &"]},
        {"command": ["sh", "-c",
            "for i in $(seq 1200); do [ -e /tmp/kernel.ready ] && exit 0; sleep 0.05; done; cat /tmp/kernel.log; exit 1"]},
    ])
}

/// Asks the session's kernel `code`; its answer.
fn ask(d: &Daemon, id: &str, code: &str) -> String {
    let client = "exec 3<>/dev/tcp/127.0.0.1/7000; printf '%s\\n' \"$1\" >&3; head -n 1 <&3";
    let v = d.exec(id, &["bash", "-c", client, "bash", code]);
    assert_eq!(v["exit_code"], 0, "{v}");
    v["stdout"].as_str().unwrap().trim_end().to_string()
}

fn make_template(d: &Daemon, spec: Value) -> Value {
    let (status, v) = d.json("POST", "/v1/templates", &spec.to_string());
    assert_eq!(status, 201, "{spec}: {v}");
    v
}

fn template(d: &Daemon, name: &str) -> (u16, Value) {
    d.json("GET", &format!("/v1/templates/{name}"), "")
}

/// Session directories that are warm sessions not handed out.
fn warm_dirs(d: &Daemon) -> usize {
    std::fs::read_dir(d.data_dir.join("sessions"))
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().join("warm").exists())
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_session_from_a_template_starts_warm_and_alone() {
    // python3-numpy is .ci/run's: without it this fails, it does not skip.
    let d = Daemon::start();
    let t = make_template(
        &d,
        json!({"name": "np", "warm": 2, "limits": {"pids": 64, "memory_bytes": 1u64 << 30},
               "env": {"KERNEL": "numpy"}, "setup": kernel_setup()}),
    );
    assert_eq!(t["name"], "np");
    assert!(t["ready"].as_u64().unwrap() >= 1, "{t}");
    assert!(
        poll_until(Duration::from_secs(60), || template(&d, "np").1["ready"]
            == 2),
        "{}",
        template(&d, "np").1
    );
    let (status, a) = d.json("POST", "/v1/sessions", r#"{"template": "np"}"#);
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["template"], "np");
    let a = a["id"].as_str().unwrap().to_string();
    // The kernel was started by the setup, before the session was asked
    // for: numpy is already imported, and it computes what numpy computes
    // natively.
    assert_eq!(ask(&d, &a, "'numpy' in sys.modules"), "True");
    let native = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import numpy as np; print(repr(np.arange(10).sum() * 3))",
        ])
        .output()
        .unwrap();
    let native = String::from_utf8(native.stdout).unwrap();
    assert_eq!(ask(&d, &a, "np.arange(10).sum() * 3"), native.trim_end());
    let (_, state) = d.json("GET", &format!("/v1/sessions/{a}"), "");
    assert!(
        state["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["command"] == "python3 /tmp/kernel.py"),
        "{state}"
    );
    // The template's env and limits are the session's.
    let v = d.exec(&a, &["sh", "-c", "echo $KERNEL"]);
    assert_eq!(v["stdout"], "numpy\n");
    // State made in one session never shows in a sibling.
    assert_eq!(ask(&d, &a, "x = 'only in a'"), "ok");
    assert_eq!(ask(&d, &a, "x"), "'only in a'");
    d.exec(&a, &["sh", "-c", "echo a > /tmp/a-only"]);
    let (status, b) = d.json(
        "POST",
        "/v1/sessions",
        r#"{"template": "np", "idle_ttl_s": 600}"#,
    );
    assert_eq!(status, 201, "{b}");
    assert_eq!(b["idle_ttl_s"], 600);
    let b = b["id"].as_str().unwrap().to_string();
    assert_ne!(a, b);
    assert_eq!(ask(&d, &b, "x"), "error: NameError");
    assert_eq!(ask(&d, &b, "'numpy' in sys.modules"), "True");
    let v = d.exec(
        &b,
        &[
            "sh",
            "-c",
            "test -e /tmp/a-only && echo seen || echo absent",
        ],
    );
    assert_eq!(v["stdout"], "absent\n", "{v}");
    // Own sandboxes: a process killed in one is alive in the other.
    d.exec(&a, &["sh", "-c", "pkill -f kernel.py; sleep 0.2"]);
    assert_eq!(ask(&d, &b, "1 + 1"), "2");
    // Own limits: forks past the template's pids limit end that session
    // (a refused fork is fatal), not its sibling.
    let bomb = r#"{"command": ["sh", "-c", "for i in $(seq 200); do sleep 30 & done; wait"], "timeout_s": 30}"#;
    let _ = d.json("POST", &format!("/v1/sessions/{a}/exec"), bomb);
    let state = |id: &str| d.json("GET", &format!("/v1/sessions/{id}"), "").1;
    assert!(
        poll_until(Duration::from_secs(30), || state(&a)["state"] == "ended"),
        "{}",
        state(&a)
    );
    assert_eq!(state(&a)["reason"], "sandbox_exited", "{}", state(&a));
    assert_eq!(state(&b)["state"], "running");
    assert_eq!(ask(&d, &b, "np.ones(3).sum()"), "3.0");
    // Both were handed out warm, and the pool fills up again.
    assert!(
        poll_until(Duration::from_secs(60), || template(&d, "np").1["ready"]
            == 2),
        "{}",
        template(&d, "np").1
    );
    let (_, t) = template(&d, "np");
    assert_eq!(t["taken_warm"], 2, "{t}");
    assert_eq!(t["taken_cold"], 0, "{t}");
    // Warm sessions are not sessions until handed out.
    let (_, list) = d.json("GET", "/v1/sessions", "");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(warm_dirs(&d), 2);
}

#[test]
fn bad_templates_get_400_failing_setups_422_unknown_names_404() {
    let d = Daemon::start();
    let (status, v) = d.json("POST", "/v1/sessions", r#"{"template": "nope"}"#);
    assert_eq!(status, 404, "{v}");
    for path in ["/v1/templates/nope", "/v1/templates/..%2fx"] {
        assert_eq!(d.request("GET", path, b"").status, 404, "{path}");
        assert_eq!(d.request("DELETE", path, b"").status, 404, "{path}");
    }
    for spec in [
        json!({"name": "../x"}),
        json!({"name": ""}),
        json!({"name": "ok", "warm": 99}),
        json!({"name": "ok", "setup": [{"command": []}]}),
        json!({"name": "ok", "setup": [["true"]]}),
        json!({"name": "ok", "publish": ["8000:8000"]}),
        json!({"name": "ok", "volume": {"name": "v"}}),
        json!({"name": "ok", "limits": {"pids": 0}}),
        json!({"name": "ok", "egress": ["not a rule!"]}),
        json!({"name": "ok", "unknown": 1}),
        json!({"setup": []}),
    ] {
        let (status, v) = d.json("POST", "/v1/templates", &spec.to_string());
        assert_eq!(status, 400, "{spec}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.contains('\n')),
            "{v}"
        );
    }
    // A setup that fails: 422, naming the command, with its last line.
    let spec = json!({"name": "broken", "setup": [
        {"command": ["true"]},
        {"command": ["sh", "-c", "echo working; echo 'ModuleNotFoundError: pandas' >&2; exit 3"]},
    ]});
    let (status, v) = d.json("POST", "/v1/templates", &spec.to_string());
    assert_eq!(status, 422, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("setup[1]") && e.contains("exit 3"), "{e}");
    assert!(e.ends_with("ModuleNotFoundError: pandas"), "{e}");
    let spec = json!({"name": "missing", "setup": [{"command": ["no-such-program-here"]}]});
    let (status, v) = d.json("POST", "/v1/templates", &spec.to_string());
    assert_eq!(status, 422, "{v}");
    // Nothing is kept of them: no template, no session, no warm sandbox.
    assert_eq!(template(&d, "broken").0, 404);
    let (_, list) = d.json("GET", "/v1/templates", "");
    assert_eq!(list["templates"], json!([]), "{list}");
    assert_eq!(warm_dirs(&d), 0);
    // A name is taken once; a session from a template takes its shape
    // from it, only the lifetimes may be given.
    make_template(&d, json!({"name": "plain", "warm": 1}));
    let (status, v) = d.json("POST", "/v1/templates", r#"{"name": "plain"}"#);
    assert_eq!(status, 409, "{v}");
    for body in [
        r#"{"template": "plain", "limits": {"pids": 8}}"#,
        r#"{"template": "plain", "env": {"A": "b"}}"#,
        r#"{"template": "plain", "idle_ttl_s": 0}"#,
        r#"{"template": 7}"#,
    ] {
        let (status, v) = d.json("POST", "/v1/sessions", body);
        assert_eq!(status, 400, "{body}: {v}");
    }
    let (_, list) = d.json("GET", "/v1/sessions", "");
    assert_eq!(list["sessions"], json!([]), "{list}");
}

#[test]
fn a_deleted_templates_sessions_stay() {
    let d = Daemon::start();
    let setup = json!([{"command": ["sh", "-c", "echo made-by-setup > /tmp/mark; sleep 600 > /dev/null 2>&1 &"]}]);
    make_template(&d, json!({"name": "t", "warm": 2, "setup": setup}));
    let id = d.create(r#"{"template": "t"}"#);
    let (status, v) = d.json("DELETE", "/v1/templates/t", "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(template(&d, "t").0, 404);
    let (status, _) = d.json("POST", "/v1/sessions", r#"{"template": "t"}"#);
    assert_eq!(status, 404);
    // The session made from it goes on, with the setup's file and process.
    let v = d.exec(&id, &["cat", "/tmp/mark"]);
    assert_eq!(v["stdout"], "made-by-setup\n", "{v}");
    let (_, state) = d.json("GET", &format!("/v1/sessions/{id}"), "");
    assert_eq!(state["state"], "running", "{state}");
    // The setup's background child is a forked `sh` until it has exec'd
    // `sleep` (waited for: the deadline is a hang guard).
    let sleeping = || {
        let (_, state) = d.json("GET", &format!("/v1/sessions/{id}"), "");
        state["processes"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["command"] == "sleep 600"))
    };
    assert!(
        poll_until(Duration::from_secs(30), sleeping),
        "{}",
        d.json("GET", &format!("/v1/sessions/{id}"), "").1
    );
    // Its warm sessions end (one may have been being set up: it ends too).
    assert!(
        poll_until(Duration::from_secs(30), || warm_dirs(&d) == 0),
        "warm sessions of a deleted template are left"
    );
    assert!(!d.data_dir.join("templates/t.json").exists());
}

#[test]
fn templates_survive_a_restart_and_warm_up_again() {
    let mut d = Daemon::start();
    let setup = json!([{"command": ["sh", "-c", "echo $$ > /tmp/setup-ran"]}]);
    make_template(
        &d,
        json!({"name": "kept", "warm": 1, "idle_ttl_s": 120, "setup": setup}),
    );
    assert!(poll_until(Duration::from_secs(30), || template(&d, "kept")
        .1["ready"]
        == 1));
    d.kill();
    d.launch();
    // The old warm session's directory is gone with its sandbox; the
    // template is back and warms up again.
    let (status, t) = template(&d, "kept");
    assert_eq!(status, 200, "{t}");
    assert_eq!(t["idle_ttl_s"], 120);
    assert!(
        poll_until(Duration::from_secs(30), || template(&d, "kept").1["ready"]
            == 1),
        "{}",
        template(&d, "kept").1
    );
    assert_eq!(warm_dirs(&d), 1);
    let (status, s) = d.json("POST", "/v1/sessions", r#"{"template": "kept"}"#);
    assert_eq!(status, 201, "{s}");
    assert_eq!(s["idle_ttl_s"], 120);
    let id = s["id"].as_str().unwrap();
    assert_eq!(
        d.exec(id, &["sh", "-c", "test -s /tmp/setup-ran && echo ran"])["stdout"],
        "ran\n"
    );
    let (_, list) = d.json("GET", "/v1/sessions", "");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn a_template_without_warm_sessions_sets_each_up_on_request() {
    let d = Daemon::start();
    let setup = json!([{"command": ["sh", "-c", "echo cold > /tmp/how"]}]);
    let t = make_template(&d, json!({"name": "cold", "warm": 0, "setup": setup}));
    assert_eq!(t["ready"], 0);
    assert_eq!(warm_dirs(&d), 0);
    let id = d.create(r#"{"template": "cold"}"#);
    assert_eq!(d.exec(&id, &["cat", "/tmp/how"])["stdout"], "cold\n");
    let (_, t) = template(&d, "cold");
    assert_eq!(t["taken_cold"], 1, "{t}");
    assert_eq!(t["ready"], 0, "{t}");
}

#[test]
fn the_cli_makes_lists_and_removes_templates() {
    let d = Daemon::start();
    let cli = |args: &[&str]| d.sessions_cli(args);
    let spec = r#"{"warm": 1, "setup": [{"command": ["sh", "-c", "echo hi > /tmp/hi"]}]}"#;
    let out = cli(&["template", "create", "greeter", spec]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"greeter\n");
    let table = String::from_utf8(cli(&["template", "ls"]).stdout).unwrap();
    assert!(table.lines().any(|l| l.starts_with("greeter ")), "{table}");
    let out = cli(&["create", r#"{"template": "greeter"}"#]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = cli(&["exec", &id, "--", "cat", "/tmp/hi"]);
    assert_eq!(out.stdout, b"hi\n");
    let out = cli(&[
        "template",
        "create",
        "bad",
        r#"{"setup": [{"command": ["false"]}]}"#,
    ]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("422"),
        "{out:?}"
    );
    assert!(cli(&["template", "rm", "greeter"]).status.success());
    let table = String::from_utf8(cli(&["template", "ls"]).stdout).unwrap();
    assert!(!table.contains("greeter"), "{table}");
    let out = cli(&["template", "rm", "greeter"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
}
