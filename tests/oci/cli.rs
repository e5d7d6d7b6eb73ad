//! The OCI runtime's commands without an engine: a bundle built from
//! busybox-static, driven as containerd drives runc (create with a pid
//! file, start, state, kill, ps, pause/resume, delete), with the
//! container's exit status read from the monitor whose pid the pid file
//! names (this test process is a subreaper, as the engines' shims are).
//! The bundle's config, errors, `spec`, `features` and hooks are
//! `cli/config.rs`'s; exec, ids, limits and the root, the other modules'.

use crate::common;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Once;
use std::thread;
use std::time::{Duration, Instant};

use common::oci::{bundle, have_busybox, Runtime};
use common::Tree;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde_json::json;

/// Become a subreaper (once): monitors whose `create` exits are reparented to us.
fn subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| nix::sys::prctl::set_child_subreaper(true).expect("subreaper"));
}

/// Waits for monitor `pid` (our orphaned grandchild) to end, at most 30 s.
fn wait_exit(pid: i32) -> WaitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(10))
            }
            Ok(WaitStatus::StillAlive) => {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::SIGKILL);
                panic!("container monitor {pid} did not end within 30 s");
            }
            Ok(s) => return s,
            Err(e) => panic!("waitpid {pid}: {e}"),
        }
    }
}

/// Creates container `id` from `dir` (stdout and stderr to files there); its pid.
fn create(rt: &Runtime, dir: &Path, id: &str) -> i32 {
    subreaper();
    let pid_file = dir.join("pid");
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(dir)
        .arg("--pid-file")
        .arg(&pid_file)
        .arg(id)
        .stdout(fs::File::create(dir.join("stdout")).expect("stdout file"))
        .stderr(fs::File::create(dir.join("stderr")).expect("stderr file"))
        .status()
        .expect("create");
    let log = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert!(out.success(), "create {id}: {out:?} {log}");
    fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid in pid file")
}

/// This process's directory in the v1 hierarchy of `controller`, if mounted.
fn own_v1_dir(controller: &str) -> Option<std::path::PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, c, path) = (p.next()?, p.next()?, p.next()?);
        (c == controller).then(|| path.to_string())
    })?;
    let dir = Path::new("/sys/fs/cgroup")
        .join(controller)
        .join(path.trim_start_matches('/'));
    dir.is_dir().then_some(dir)
}

fn set_args(config: &mut serde_json::Value, script: &str) {
    config["process"]["args"] = json!(["sh", "-c", script]);
}

/// Waits for container `id` (its create returned `pid`) to exit 0, and
/// deletes it; its stdout (the bundle `dir`'s stdout file).
fn finish(rt: &Runtime, dir: &Path, id: &str, pid: i32) -> String {
    let status = wait_exit(pid);
    let out = fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let err = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "{status:?} {out} {err}"
    );
    assert!(rt.run(&["delete", id]).status.success());
    out
}

/// Runs container `id` of bundle `dir` to its end; its stdout.
fn run_to_end(rt: &Runtime, dir: &Path, id: &str) -> String {
    let pid = create(rt, dir, id);
    assert!(rt.run(&["start", id]).status.success());
    finish(rt, dir, id, pid)
}

macro_rules! need_busybox {
    () => {
        if !have_busybox() {
            skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
        }
    };
}

/// Waits until `path` holds `text` (at most 30 s).
fn wait_for_text(path: &Path, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = fs::read_to_string(path).unwrap_or_default();
        if now == text {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} never said {text:?} (it says {now:?})",
            path.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

mod config;
mod dev_shm;
mod exec;
mod ids;
mod limits;
mod overlay_netns;
mod overlay_root;
mod pid_ns;
mod pods;
mod rootfs;

#[test]
fn a_container_runs_through_its_lifecycle_with_its_exit_status() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| set_args(c, "echo out; echo err >&2; exit 3"));
    let pid = create(&rt, t.path(), "life");
    let state = rt.state("life");
    assert_eq!(state["status"], "created");
    assert_eq!(state["pid"], pid);
    assert_eq!(state["id"], "life");
    assert_eq!(
        state["bundle"],
        t.path().canonicalize().unwrap().to_str().unwrap()
    );
    // ps lists the sandbox's processes (its init), not the anchor nor the
    // monitor; the anchor (the engine's pid) sits in the sandbox's mount
    // namespace, where /proc shows only the sandbox (what `podman top` reads).
    let ps = rt.run(&["ps", "--format", "json", "life"]);
    let pids: Vec<i32> = serde_json::from_slice(&ps.stdout).expect("ps json");
    let ns = |p: i32, name: &str| fs::read_link(format!("/proc/{p}/ns/{name}")).ok();
    assert!(!pids.is_empty() && !pids.contains(&pid), "ps: {pids:?}");
    for p in &pids {
        assert_ne!(ns(*p, "pid"), ns(pid, "pid"), "{p} is not in the sandbox");
        assert_eq!(
            ns(*p, "mnt"),
            ns(pid, "mnt"),
            "the anchor's mount namespace"
        );
    }
    assert!(rt.run(&["start", "life"]).status.success());
    match wait_exit(pid) {
        WaitStatus::Exited(_, code) => assert_eq!(code, 3),
        other => panic!("monitor: {other:?}"),
    }
    assert_eq!(fs::read_to_string(t.join("stdout")).unwrap(), "out\n");
    assert_eq!(fs::read_to_string(t.join("stderr")).unwrap(), "err\n");
    assert_eq!(rt.state("life")["status"], "stopped");
    let list = rt.run(&["list", "--format", "json"]);
    let all: serde_json::Value = serde_json::from_slice(&list.stdout).expect("list json");
    assert_eq!(all[0]["id"], "life");
    assert!(rt.run(&["delete", "life"]).status.success());
    assert!(!rt.run(&["state", "life"]).status.success());
    // Docker deletes twice: a container that is gone is not an error.
    assert!(rt.run(&["delete", "life"]).status.success());
    assert!(!rt.root.join("life").exists());
}

#[test]
fn kill_passes_signals_on_and_sigkill_ends_the_container() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let script = "trap 'echo usr1; exit 7' USR1; echo ready; while :; do sleep 0.05; done";
    bundle(t.path(), |c| set_args(c, script));
    let pid = create(&rt, t.path(), "sig");
    assert!(rt.run(&["start", "sig"]).status.success());
    assert_eq!(rt.state("sig")["status"], "running");
    // The trap is set once the script says so.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fs::read_to_string(t.join("stdout")).unwrap_or_default() != "ready\n" {
        assert!(Instant::now() < deadline, "the container never got ready");
        thread::sleep(Duration::from_millis(10));
    }
    assert!(rt.run(&["kill", "sig", "USR1"]).status.success());
    match wait_exit(pid) {
        WaitStatus::Exited(_, code) => assert_eq!(code, 7),
        other => panic!("monitor: {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(t.join("stdout")).unwrap(),
        "ready\nusr1\n"
    );
    // Killing a stopped container fails with runc's words (containerd matches them).
    let dead = rt.run(&["kill", "sig", "TERM"]);
    assert!(!dead.status.success());
    assert!(String::from_utf8_lossy(&dead.stderr).contains("container not running"));
    assert!(rt.run(&["delete", "sig"]).status.success());

    let t2 = Tree::new();
    bundle(t2.path(), |c| set_args(c, "sleep 100"));
    let pid = create(&rt, t2.path(), "sig9");
    assert!(rt.run(&["start", "sig9"]).status.success());
    // Running: delete without --force is refused.
    assert!(!rt.run(&["delete", "sig9"]).status.success());
    assert!(rt.run(&["kill", "--all", "sig9", "9"]).status.success());
    match wait_exit(pid) {
        WaitStatus::Signaled(_, sig, _) => assert_eq!(sig, nix::sys::signal::SIGKILL),
        other => panic!("monitor: {other:?}"),
    }
    assert!(rt.run(&["delete", "sig9"]).status.success());
}

#[test]
fn pause_freezes_and_resume_thaws() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| set_args(c, "sleep 100"));
    let pid = create(&rt, t.path(), "frz");
    assert!(rt.run(&["start", "frz"]).status.success());
    assert!(rt.run(&["pause", "frz"]).status.success());
    assert_eq!(rt.state("frz")["status"], "paused");
    // Under v1 the sandbox alone is in the freezer cgroup the kernel
    // just reported FROZEN: not the monitor, which serves the sandbox's
    // trapped calls (a guest thread waiting for an answer could not
    // freeze while its server is frozen).
    if Path::new("/sys/fs/cgroup/freezer").is_dir() {
        let ps = rt.run(&["ps", "--format", "json", "frz"]);
        let pids: Vec<i32> = serde_json::from_slice(&ps.stdout).expect("ps json");
        let freezer_of = |p: i32| {
            let cgroups = fs::read_to_string(format!("/proc/{p}/cgroup")).unwrap_or_default();
            let line = cgroups.lines().find(|l| l.contains(":freezer:"));
            line.map(str::to_owned).unwrap_or_default()
        };
        let monitor = freezer_of(pid);
        assert!(
            pids.iter().any(|p| freezer_of(*p) != monitor),
            "the monitor shares the sandbox's freezer cgroup: {monitor}"
        );
    }
    assert!(!rt.run(&["pause", "frz"]).status.success());
    assert!(rt.run(&["resume", "frz"]).status.success());
    assert_eq!(rt.state("frz")["status"], "running");
    // update --resources -: new limits in the container's cgroup.
    let json = br#"{"memory": {"limit": 134217728}, "pids": {"limit": 32}}"#;
    let up = rt.update("frz", json);
    assert!(up.status.success(), "update: {up:?}");
    if let Some(dir) = own_v1_dir("memory") {
        let limit = fs::read_to_string(dir.join("frz/memory.limit_in_bytes")).unwrap();
        assert_eq!(limit.trim(), "134217728");
    }
    if let Some(dir) = own_v1_dir("pids") {
        // The limit plus the runtime's two tasks in it (anchor and init).
        let max = fs::read_to_string(dir.join("frz/pids.max")).unwrap();
        assert_eq!(max.trim(), "34");
    }
    assert!(rt.run(&["delete", "--force", "frz"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
    assert!(!rt.root.join("frz").exists());
}

/// The runtime run by an unprivileged user (`tester`), as rootless
/// engines run it: without `--root` its state goes to
/// `$XDG_RUNTIME_DIR/supervisor`; it may not create a cgroup beneath
/// ours, so the container runs without one; and a bundle asking for a
/// limit it could not keep is refused, with the reason.
#[test]
fn a_rootless_runtime_keeps_state_in_xdg_and_runs_without_a_cgroup() {
    need_busybox!();
    let (uid, gid, runtime) = match common::tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    subreaper();
    let t = Tree::new();
    bundle(t.path(), |c| {
        // The rootless map is the runtime's own id alone, as before.
        set_args(
            c,
            "echo \"hi from $(id -u)\"; read a b n < /proc/self/uid_map; echo \"$a $b $n\"",
        );
        c["process"]["user"] = json!({"uid": uid, "gid": gid});
    });
    fs::create_dir(t.join("xdg")).unwrap();
    t.give_to(uid, gid);
    let as_tester = |args: &[&str], out: &str| {
        use std::os::unix::process::CommandExt;
        std::process::Command::new(&runtime)
            .env_clear()
            .env("XDG_RUNTIME_DIR", t.join("xdg"))
            .env("USER", "tester")
            .current_dir(t.path())
            .uid(uid)
            .gid(gid)
            .args(args)
            .stdin(Stdio::null())
            .stdout(fs::File::create(t.join(out)).expect("stdout file"))
            .stderr(fs::File::create(t.join(&format!("{out}.err"))).expect("stderr file"))
            .status()
            .expect("run the runtime as tester")
    };
    let made = as_tester(
        &["create", "--bundle", ".", "--pid-file", "pid", "c1"],
        "out",
    );
    let err = fs::read_to_string(t.join("out.err")).unwrap_or_default();
    assert!(made.success(), "create as tester: {made:?} {err}");
    assert!(t.join("xdg/supervisor/c1/state.json").is_file());
    let pid: i32 = fs::read_to_string(t.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(as_tester(&["start", "c1"], "start").success());
    assert!(matches!(wait_exit(pid), WaitStatus::Exited(_, 0)));
    assert_eq!(
        fs::read_to_string(t.join("out")).unwrap(),
        format!("hi from {uid}\n{uid} {uid} 1\n")
    );
    assert!(as_tester(&["delete", "c1"], "delete").success());
    assert!(!t.join("xdg/supervisor/c1").exists());

    // Another user cannot be mapped without privilege: refused, one line.
    let config = t.join("config.json");
    let mut c: serde_json::Value = serde_json::from_slice(&fs::read(&config).unwrap()).unwrap();
    c["process"]["user"] = json!({"uid": uid + 1, "gid": gid});
    fs::write(&config, c.to_string()).unwrap();
    let other = as_tester(&["create", "--bundle", ".", "c3"], "out3");
    let err = fs::read_to_string(t.join("out3.err")).unwrap_or_default();
    assert!(
        !other.success() && err.contains("a rootless runtime maps only its own user"),
        "{other:?} {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    c["process"]["user"] = json!({"uid": uid, "gid": gid});
    fs::write(&config, c.to_string()).unwrap();

    // A memory limit needs a cgroup: refused, saying why.
    c["linux"]["resources"] = json!({"memory": {"limit": 64 << 20}});
    fs::write(&config, c.to_string()).unwrap();
    let refused = as_tester(&["create", "--bundle", ".", "c2"], "out2");
    let err = fs::read_to_string(t.join("out2.err")).unwrap_or_default();
    assert!(
        !refused.success() && err.contains("a rootless runtime has no cgroup"),
        "{refused:?} {err}"
    );
}
