//! A config's `linux.uidMappings` and `linux.gidMappings`: the container's
//! ids map onto the host range given, as under runc with a user
//! namespace, so its root is the range's first host id on the host and
//! what it writes into the bundle's root belongs to that id; a mapping
//! the sandbox cannot make (not from container id 0) is a one-line error
//! at `create`. Part of the `oci` test binary's `cli` module
//! (`tests/oci/cli.rs` owns the bundle and helpers).

use super::*;

/// The host range the tests map (no account uses it).
const HOST_START: u32 = 1_000_000;

fn mapping(container: u32, host: u32) -> serde_json::Value {
    json!([{"containerID": container, "hostID": host, "size": 65536}])
}

#[test]
fn uid_mappings_map_the_containers_ids_onto_the_host_range() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(
            c,
            "cat /proc/self/uid_map /proc/self/gid_map; echo x > /tmp/made; stat -c %u:%g /tmp/made",
        );
        c["root"]["readonly"] = false.into();
        c["linux"]["uidMappings"] = mapping(0, HOST_START);
        c["linux"]["gidMappings"] = mapping(0, HOST_START);
    });
    // As for runc: the bundle's root belongs to the container's root.
    let owner = format!("{HOST_START}:{HOST_START}");
    let chown = std::process::Command::new("chown")
        .args(["-R", &owner])
        .arg(t.join("rootfs"))
        .status()
        .expect("chown");
    assert!(chown.success());
    let out = run_to_end(&rt, t.path(), "mapped");
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let map = format!("0 {HOST_START} 65536");
    assert_eq!(lines, [map.as_str(), map.as_str(), "0:0"], "{out}");
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(t.join("rootfs/tmp/made")).expect("the container's file");
    assert_eq!((meta.uid(), meta.gid()), (HOST_START, HOST_START));
}

#[test]
fn a_mapping_the_sandbox_cannot_make_is_one_line_at_create() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "true");
        c["linux"]["uidMappings"] = mapping(1, HOST_START);
        c["linux"]["gidMappings"] = mapping(1, HOST_START);
    });
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(t.path())
        .arg("badmap")
        .output()
        .expect("create");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("container ids from 0"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
