//! A container whose config names another's IPC and UTS namespaces by
//! path (`/proc/PID/ns/ipc`, as a pod's containers name the pause
//! container's) joins them: it reads the SysV shared memory and semaphore
//! the other made (as natively in one IPC namespace) and has its hostname,
//! whatever its own config says. A path that is not one of our
//! containers' (a host process's own namespaces) is joined the same way.
//! The probe is `tests/c/pod_probe.c`, linked statically, bound at
//! /probe. Part of the `oci` test binary's `cli` module
//! (`tests/oci/cli.rs` owns the bundle and helpers).

use super::*;
use crate::pods::{native_ipc_read, pod_probe, PROBE};
use std::process::Command;

/// A bundle in `dir` running `script` with hostname `hostname`, the probe
/// at /probe, and the IPC and UTS namespaces of `pid` when given.
fn pod_bundle(dir: &Path, script: &str, hostname: &str, join: Option<i32>) {
    let probe = pod_probe();
    let probe_dir = probe.parent().expect("the probe's directory").to_owned();
    bundle(dir, |c| {
        set_args(c, script);
        c["hostname"] = json!(hostname);
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.push(json!({"destination": "/probe", "type": "bind",
            "source": probe_dir, "options": ["rbind", "ro"]}));
        if let Some(pid) = join {
            let namespaces = c["linux"]["namespaces"].as_array_mut().unwrap();
            for n in namespaces.iter_mut() {
                let typ = n["type"].as_str().unwrap_or_default().to_owned();
                if typ == "ipc" || typ == "uts" {
                    n["path"] = json!(format!("/proc/{pid}/ns/{typ}"));
                }
            }
        }
    });
}

/// What a joining container prints: the kernel's hostname, /etc/hostname,
/// and the SysV objects under key 4242.
const READER: &str = "hostname; cat /etc/hostname; /probe/pod_probe.static ipc-read 4242";

#[test]
fn a_container_joins_another_containers_ipc_and_uts_namespaces() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let (a, b) = (t.join("a"), t.join("b"));
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    let make = format!("{PROBE} ipc-make 4242 from-a && exec sleep 100");
    pod_bundle(&a, &make, "pod-a", None);
    let pid_a = create(&rt, &a, "pod-a");
    assert!(rt.run(&["start", "pod-a"]).status.success());
    wait_for_text(&a.join("stdout"), "made\n");
    // B's config names A's container pid's namespaces (its anchor's).
    pod_bundle(&b, READER, "pod-b", Some(pid_a));
    let out = run_to_end(&rt, &b, "pod-b");
    let expected = format!("pod-a\npod-a\n{}", native_ipc_read("4242", "from-a"));
    assert_eq!(out, expected);
    assert!(rt.run(&["kill", "pod-a", "9"]).status.success());
    assert!(matches!(wait_exit(pid_a), WaitStatus::Signaled(..)));
    assert!(rt.run(&["delete", "pod-a"]).status.success());
}

#[test]
fn a_foreign_ipc_and_uts_namespace_is_joined_too() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root (unshare -iu)");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    // A host process in IPC and UTS namespaces of its own, not a
    // container. Its objects (0600) belong to the host id the containers'
    // root is (the runtime's subordinate range, made on first use: a
    // container runs first), as a runc container's root (host root)
    // would own them.
    let first = t.join("first");
    fs::create_dir_all(&first).unwrap();
    bundle(&first, |c| set_args(c, "true"));
    run_to_end(&rt, &first, "first");
    let root_id = super::ids::supervisor_start("/etc/subuid");
    let probe = pod_probe();
    let script = format!(
        "/bin/busybox hostname foreign-ns && {} ipc-make 4242 from-host {root_id} && exec sleep 100",
        probe.display()
    );
    let mut holder = Command::new("unshare")
        .args(["-iu", "sh", "-c", &script])
        .stdout(fs::File::create(t.join("holder.out")).unwrap())
        .spawn()
        .expect("unshare -iu (util-linux)");
    wait_for_text(&t.join("holder.out"), "made\n");
    let b = t.join("b");
    fs::create_dir_all(&b).unwrap();
    pod_bundle(&b, READER, "pod-b", Some(holder.id() as i32));
    let out = run_to_end(&rt, &b, "foreign");
    let _ = holder.kill();
    let _ = holder.wait();
    let expected = format!(
        "foreign-ns\nforeign-ns\n{}",
        native_ipc_read("4242", "from-host")
    );
    assert_eq!(out, expected);
}
