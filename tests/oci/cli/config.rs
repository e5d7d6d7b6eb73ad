//! The bundle's config under the runtime: what config.json asks for
//! becomes the sandbox, a bad one is refused (errors as JSON lines in the
//! log and on stderr, `execCPUAffinity` checked by its pattern), `spec`
//! and `features` print what runc does, and hooks run with the state on
//! their stdin. Part of the `oci` test binary's `cli` module
//! (`tests/oci/cli.rs` owns the bundle and helpers).

use super::*;

#[test]
fn the_config_becomes_the_sandbox() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let host_dir = t.join("shared");
    fs::create_dir(&host_dir).unwrap();
    fs::write(host_dir.join("f"), "from the host\n").unwrap();
    fs::write(t.join("secret"), "hidden\n").unwrap();
    let out_dir = t.join("out");
    fs::create_dir(&out_dir).unwrap();
    let script = "echo \"env=$GREETING home=${HOME:-unset}\"; echo \"cwd=$(pwd)\"; \
                  echo \"host=$(hostname)\"; cat /data/f; echo x > /data/g 2>/dev/null || echo ro; \
                  echo \"mask=[$(cat /etc/secret)]\"; echo \"scratch=$(stat -f -c %T /scratch)\"; \
                  (echo x > /out/f) 2>/dev/null || echo out-ro";
    bundle(t.path(), |c| {
        set_args(c, script);
        c["process"]["env"] = json!(["PATH=/bin", "GREETING=hello"]);
        c["process"]["cwd"] = json!("/tmp");
        c["hostname"] = json!("oci-box");
        c["linux"]["maskedPaths"] = json!(["/etc/secret", "/proc/kcore"]);
        c["linux"]["readonlyPaths"] = json!(["/out", "/proc/bus", "/nowhere"]);
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.push(json!({"destination": "/data", "type": "bind",
            "source": host_dir, "options": ["rbind", "ro"]}));
        mounts.push(json!({"destination": "/etc/secret", "type": "bind",
            "source": t.join("secret"), "options": ["bind", "ro"]}));
        mounts.push(json!({"destination": "/out", "type": "bind",
            "source": out_dir, "options": ["rbind", "rw"]}));
        mounts.push(json!({"destination": "/scratch", "type": "tmpfs",
            "source": "tmpfs", "options": ["size=1m"]}));
        c["linux"]["resources"] = json!({"memory": {"limit": 256 << 20}, "pids": {"limit": 64}});
    });
    let pid = create(&rt, t.path(), "cfg");
    // linux.resources went to the container's cgroup (beneath ours).
    if let Some(dir) = own_v1_dir("memory") {
        let dir = dir.join("cfg");
        let limit = fs::read_to_string(dir.join("memory.limit_in_bytes")).unwrap_or_default();
        assert_eq!(limit.trim(), (256u64 << 20).to_string());
    }
    assert!(rt.run(&["start", "cfg"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Exited(_, 0)));
    let out = fs::read_to_string(t.join("stdout")).unwrap();
    assert_eq!(
        out,
        "env=hello home=unset\ncwd=/tmp\nhost=oci-box\nfrom the host\nro\nmask=[]\nscratch=tmpfs\nout-ro\n",
        "stderr: {}",
        fs::read_to_string(t.join("stderr")).unwrap()
    );
    assert!(
        !out_dir.join("f").exists(),
        "readonlyPaths: the write reached the host"
    );
    assert!(rt.run(&["delete", "cfg"]).status.success());
}

#[test]
fn errors_are_json_lines_in_the_log_and_on_stderr() {
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let out = rt.run(&["state", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("container nope does not exist"));
    let log = fs::read_to_string(&rt.log).expect("the log is created");
    let line: serde_json::Value =
        serde_json::from_str(log.lines().last().unwrap()).expect("json line");
    assert_eq!(line["level"], "error");
    assert_eq!(line["msg"], "container nope does not exist");
    assert!(line["time"].as_str().unwrap().ends_with('Z'));
    // Ids become directory names: anything but a plain name is refused.
    assert!(!rt.run(&["state", "../x"]).status.success());
    // A good command creates the log all the same.
    fs::remove_file(&rt.log).unwrap();
    assert!(rt.run(&["list"]).status.success());
    assert!(rt.log.exists());
    // A bad flag is clap's error: exit 125.
    let bad = rt.run(&["kill", "--nope", "x"]);
    assert_eq!(bad.status.code(), Some(125), "{bad:?}");
}

/// `process.execCPUAffinity` is checked as a CPU list (`oci/config.rs`):
/// a good one is accepted, a bad one refused with the spec's message.
#[test]
fn the_config_s_cpu_affinity_is_checked_by_its_pattern() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let (good, bad) = (t.join("good"), t.join("bad"));
    bundle(&good, |c| {
        set_args(c, "echo ok");
        c["process"]["execCPUAffinity"] = json!({"initial": "0", "final": "0-1,0"});
    });
    assert_eq!(run_to_end(&rt, &good, "aff"), "ok\n");
    bundle(&bad, |c| {
        set_args(c, "echo ok");
        c["process"]["execCPUAffinity"] = json!({"initial": "0-x"});
    });
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(&bad)
        .arg("bad")
        .output()
        .expect("create");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Invalid execCPUAffinity format: 0-x"), "{err}");
}

#[test]
fn spec_and_features_print_what_runc_does() {
    let t = Tree::new();
    let out = std::process::Command::new(common::bin())
        .args(["spec", "--bundle"])
        .arg(t.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(t.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["process"]["args"], json!(["sh"]));
    assert_eq!(config["root"]["path"], "rootfs");
    // Never overwritten.
    let again = std::process::Command::new(common::bin())
        .args(["spec", "--bundle"])
        .arg(t.path())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    let f = std::process::Command::new(common::bin())
        .arg("features")
        .output()
        .unwrap();
    let features: serde_json::Value = serde_json::from_slice(&f.stdout).unwrap();
    assert!(features["hooks"]
        .as_array()
        .unwrap()
        .contains(&json!("prestart")));
    assert_eq!(f.status.signal(), None);
}

#[test]
fn hooks_run_with_the_state_on_stdin() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let hook = |name: &str| {
        let file = t.join(name);
        json!({"path": "/bin/sh", "args": ["sh", "-c", format!("cat > {}", file.display())]})
    };
    bundle(t.path(), |c| {
        set_args(c, "exit 0");
        c["hooks"] = json!({
            "createRuntime": [hook("createRuntime")],
            "prestart": [hook("prestart")],
            "poststart": [hook("poststart")],
            "poststop": [hook("poststop")],
        });
    });
    let pid = create(&rt, t.path(), "hk");
    for (name, status) in [("createRuntime", "created"), ("prestart", "created")] {
        let state: serde_json::Value =
            serde_json::from_slice(&fs::read(t.join(name)).expect("hook ran")).expect("state json");
        assert_eq!(
            (state["id"].as_str(), state["status"].as_str()),
            (Some("hk"), Some(status))
        );
        assert_eq!(state["pid"], pid);
    }
    assert!(!t.join("poststart").exists());
    assert!(rt.run(&["start", "hk"]).status.success());
    assert!(t.join("poststart").exists());
    assert!(matches!(wait_exit(pid), WaitStatus::Exited(_, 0)));
    assert!(rt.run(&["delete", "hk"]).status.success());
    let stopped: serde_json::Value =
        serde_json::from_slice(&fs::read(t.join("poststop")).expect("poststop ran")).unwrap();
    assert_eq!(stopped["status"], "stopped");

    // A failing hook fails create, and leaves nothing behind.
    let t2 = Tree::new();
    bundle(t2.path(), |c| {
        set_args(c, "exit 0");
        c["hooks"] = json!({"createRuntime": [{"path": "/bin/false"}]});
    });
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(t2.path())
        .arg("bad")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("createRuntime hook /bin/false"));
    assert!(!rt.root.join("bad").exists());
}
