//! The container's ids. Without `linux.uidMappings`, as root, the
//! container's ids 0–65535 are the `supervisor` subordinate range (no
//! process of it is host root), and its rootfs and binds are idmapped so
//! that host id N is container id N: image files are the container
//! root's, and what it writes lands on the host as runc's container
//! would leave it (host 0 for its root, 1000 for uid 1000); the root's
//! capabilities in its namespace let it write in Podman's 0555 root; a
//! source that takes no idmap fails `create` with one line. A config's
//! `linux.uidMappings` and `linux.gidMappings`: the container's
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

pub use crate::common::oci::{assert_on_range, supervisor_start};

#[test]
fn without_mappings_the_containers_ids_are_the_subordinate_range_and_files_keep_host_ids() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    // A volume of root's, with a directory of uid 1000's in it.
    let vol = t.join("vol");
    fs::create_dir_all(vol.join("u")).unwrap();
    std::os::unix::fs::chown(vol.join("u"), Some(1000), Some(1000)).unwrap();
    bundle(t.path(), |c| {
        set_args(c, "sleep 100");
        c["root"]["readonly"] = false.into();
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.push(json!({"destination": "/vol", "type": "bind",
            "source": vol, "options": ["rbind", "rw"]}));
    });
    // Podman's image root: mode 0555, host root's.
    fs::set_permissions(t.join("rootfs"), fs::Permissions::from_mode(0o555)).unwrap();
    let pid = create(&rt, t.path(), "shifted");
    assert!(rt.run(&["start", "shifted"]).status.success());
    let exec = |user: &str, script: &str| {
        let out = rt.run(&["exec", "--user", user, "shifted", "sh", "-c", script]);
        (String::from_utf8_lossy(&out.stdout).into_owned(), out)
    };
    // Inside: the image's files are root's; root writes in the 0555 root
    // (its CAP_DAC_OVERRIDE, as under runc), in /tmp and the volume.
    let script = "read a b n < /proc/self/uid_map; echo \"$a $b $n\"; \
        stat -c %u:%g /bin/busybox /vol /vol/u; \
        busybox mkdir /www && echo x > /www/index.html && echo made; \
        echo r > /tmp/by-root; echo v > /vol/by-root; stat -c %u:%g /vol/by-root";
    let (seen, out) = exec("0:0", script);
    let start = supervisor_start("/etc/subuid");
    assert_eq!(supervisor_start("/etc/subgid"), start);
    assert!(start >= 100_000, "{start}");
    assert_eq!(
        seen,
        format!("0 {start} 65536\n0:0\n0:0\n1000:1000\nmade\n0:0\n"),
        "{out:?}"
    );
    let (seen, out) = exec(
        "1000:1000",
        "id -u; echo u > /vol/u/by-1000; stat -c %u:%g /vol/u/by-1000",
    );
    assert_eq!(seen, "1000\n1000:1000\n", "{out:?}");
    // Host root in the anchor's mount namespace (where Podman's `cp`
    // works) writes the tree as it is, and sees the sandbox's /proc; the
    // container reads the file as its root's.
    let entered = std::process::Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-m", "/bin/sh", "-c"])
        .arg("echo from-host > /tmp/from-host && cat /proc/1/cmdline")
        .output()
        .expect("nsenter");
    assert!(entered.status.success(), "{entered:?}");
    assert!(!entered.stdout.is_empty(), "{entered:?}");
    let (seen, out) = exec("0:0", "cat /tmp/from-host; stat -c %u:%g /tmp/from-host");
    assert_eq!(seen, "from-host\n0:0\n", "{out:?}");
    // From the host: no process of the container is host root; each is
    // an id of the range (the runtime's anchor and monitor are not the
    // container's).
    assert_on_range(&rt.pids("shifted"), start);
    // What the container wrote is host 0's, and uid 1000's host 1000's,
    // as runc's container leaves them.
    let owner = |path: &std::path::Path| {
        let m = fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (m.uid(), m.gid())
    };
    for made in [
        "rootfs/www",
        "rootfs/www/index.html",
        "rootfs/tmp/by-root",
        "rootfs/tmp/from-host",
        "vol/by-root",
    ] {
        assert_eq!(owner(&t.join(made)), (0, 0), "{made}");
    }
    assert_eq!(owner(&t.join("vol/u/by-1000")), (1000, 1000));
    assert!(rt.run(&["delete", "--force", "shifted"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}

#[test]
fn a_bind_whose_file_system_takes_no_idmap_fails_create_with_one_line() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "true");
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.push(json!({"destination": "/kernel", "type": "bind",
            "source": "/proc/sys/kernel", "options": ["rbind", "ro"]}));
    });
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(t.path())
        .arg("noidmap")
        .output()
        .expect("create");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/kernel") && err.contains("/proc/sys/kernel") && err.contains("idmapped"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
