//! A container whose config names another container's pid namespace by
//! path (`/proc/PID/ns/pid`, PID the other's container pid: what Docker's
//! `--pid container:X` and Kubernetes' `shareProcessNamespace` give)
//! lives in that container's sandbox's pid namespace: its `ls /proc`
//! lists the other's processes, it kills one by pid (the other's shell
//! sees it end, 143 as natively), its `/proc/self` is still its own
//! process, the other sees its processes too, the other outlives it, and
//! when the other goes first its processes go too, as under runc. A path
//! naming the host's pid namespace (a host process's) is refused with
//! one line. Part of the
//! `oci` test binary's `cli` module (`tests/oci/cli.rs`).

use super::*;

/// A bundle in `dir` running `script`, in the pid namespace of `pid`
/// when given.
fn pid_bundle(dir: &Path, script: &str, join: Option<&str>) {
    fs::create_dir_all(dir).unwrap();
    bundle(dir, |c| {
        set_args(c, script);
        // Writable, for a copy of busybox under another name.
        c["root"]["readonly"] = false.into();
        if let Some(path) = join {
            let namespaces = c["linux"]["namespaces"].as_array_mut().unwrap();
            namespaces.retain(|n| n["type"] != "pid");
            namespaces.push(json!({"type": "pid", "path": path}));
        }
    });
}

/// What a shell prints natively after killing a sleeping child with
/// SIGTERM and waiting for it.
fn native_killed_wait() -> String {
    let out = std::process::Command::new("/bin/busybox")
        .args(["sh", "-c", "sleep 1000 & p=$!; kill $p; wait $p; echo $?"])
        .output()
        .expect("busybox sh");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The host processes whose command name is `comm`.
fn host_processes_named(comm: &str) -> usize {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let comm_file = e.path().join("comm");
            fs::read_to_string(comm_file).is_ok_and(|c| c.trim_end() == comm)
        })
        .count()
}

/// A's shell: a sleeper whose pid it prints, waits for it, then for a
/// process named `pidpeer` (B's) to show in its /proc.
const A: &str = "sleep 1000 & echo \"sleeper $!\"; wait $!; echo \"waited $?\"; \
    until grep -qsx pidpeer /proc/[0-9]*/comm; do sleep 0.1; done; echo sees-peer; \
    exec sleep 1000";

#[test]
fn a_container_joins_another_containers_pid_namespace() {
    need_busybox!();
    if !common::is_root() {
        skip!("a rootless runtime refuses to join a pid namespace");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let a = t.join("a");
    pid_bundle(&a, A, None);
    let pid_a = create(&rt, &a, "pid-a");
    assert!(rt.run(&["start", "pid-a"]).status.success());
    let sleeper = wait_for_line(&a.join("stdout"), "sleeper ");
    let path = format!("/proc/{pid_a}/ns/pid");

    // B lists A's sleeper and its own /proc/self, then ends; A is unaffected.
    let b = t.join("b");
    let list = format!(
        "ls /proc | grep -qx {sleeper} && echo listed; \
         read -r own rest < /proc/self/stat; [ \"$own\" = \"$$\" ] && echo self-is-own"
    );
    pid_bundle(&b, &list, Some(&path));
    assert_eq!(run_to_end(&rt, &b, "pid-b"), "listed\nself-is-own\n");
    let state = rt.run(&["state", "pid-a"]);
    assert!(String::from_utf8_lossy(&state.stdout).contains("\"running\""));

    // C kills A's sleeper, then stays as `pidpeer`, which A sees.
    let c = t.join("c");
    let kill = format!(
        "kill {sleeper} && echo killed; cp /bin/busybox /tmp/pidpeer && \
         echo ready && exec -a sleep /tmp/pidpeer 1000"
    );
    pid_bundle(&c, &kill, Some(&path));
    let pid_c = create(&rt, &c, "pid-c");
    assert!(rt.run(&["start", "pid-c"]).status.success());
    wait_for_text(&c.join("stdout"), "killed\nready\n");
    let seen = format!(
        "sleeper {sleeper}\nwaited {}sees-peer\n",
        native_killed_wait()
    );
    wait_for_text(&a.join("stdout"), &seen);
    assert_eq!(host_processes_named("pidpeer"), 1);

    // A goes first: C's processes go with A's namespace.
    assert!(rt.run(&["kill", "pid-a", "9"]).status.success());
    assert!(matches!(wait_exit(pid_a), WaitStatus::Signaled(..)));
    assert!(!matches!(wait_exit(pid_c), WaitStatus::Exited(_, 0)));
    assert_eq!(host_processes_named("pidpeer"), 0);
    assert!(rt.run(&["delete", "pid-c"]).status.success());
    assert!(rt.run(&["delete", "pid-a"]).status.success());
}

#[test]
fn a_pid_namespace_not_of_this_runtime_is_refused() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    // A host process's: the host's pid namespace.
    let mut host = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let path = format!("/proc/{}/ns/pid", host.id());
    let b = t.join("b");
    pid_bundle(&b, "true", Some(&path));
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(&b)
        .arg("host-pid")
        .output()
        .unwrap();
    let _ = host.kill();
    let _ = host.wait();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = match common::is_root() {
        true => format!("pid namespace {path}: not a running container of this runtime's"),
        false => format!("pid namespace {path}: a rootless runtime does not join"),
    };
    assert!(err.contains(&expected), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Waits until `path` has a line starting with `prefix`; the rest of it.
fn wait_for_line(path: &Path, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = fs::read_to_string(path).unwrap_or_default();
        if let Some(rest) = text.lines().find_map(|l| l.strip_prefix(prefix)) {
            return rest.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "{} never said {prefix:?}",
            path.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
}
