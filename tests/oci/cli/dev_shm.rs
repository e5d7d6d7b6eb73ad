//! The engine's /dev/shm (docs/oci.md, "/dev/shm"): two containers whose
//! config.json binds one shm source at /dev/shm (a tmpfs, as Docker's
//! `--ipc shareable` and `container:X` and a Kubernetes pod's sandbox shm
//! give it) share their POSIX shared memory objects and named semaphores
//! both ways, as two processes natively with one /dev/shm; a container of
//! its own does not see them; and a tmpfs destination (Docker's
//! `--shm-size`) has the size and mode it asks for, as natively. The
//! probe is `tests/c/pod_probe.c` (`posix-make`, `posix-read`), bound at
//! /probe. Part of the `oci` test binary's `cli` module.

use super::*;
use crate::pods::{native_posix_read, pod_probe, PROBE};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

/// A tmpfs mounted at a directory of the test's tree (the engine's shm
/// source), unmounted when dropped.
struct ShmSource(PathBuf);

impl ShmSource {
    fn mount(dir: PathBuf) -> ShmSource {
        fs::create_dir_all(&dir).unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "mode=1777,size=8m,nosuid,nodev,noexec",
                "shm",
            ])
            .arg(&dir)
            .output()
            .expect("mount (util-linux)");
        assert!(out.status.success(), "mount: {out:?}");
        ShmSource(dir)
    }
}

impl Drop for ShmSource {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A bundle in `dir` running `script`, the probe at /probe, and the
/// config's /dev/shm mount replaced by `shm` (none: the default spec's
/// tmpfs, a container of its own).
fn shm_bundle(dir: &Path, script: &str, shm: Option<serde_json::Value>) {
    fs::create_dir_all(dir).unwrap();
    let probe = pod_probe();
    let probe_dir = probe.parent().expect("the probe's directory").to_owned();
    bundle(dir, |c| {
        set_args(c, script);
        let mounts = c["mounts"].as_array_mut().unwrap();
        if let Some(shm) = shm {
            mounts.retain(|m| m["destination"] != "/dev/shm");
            mounts.push(shm);
        }
        mounts.push(json!({"destination": "/probe", "type": "bind",
            "source": probe_dir, "options": ["rbind", "ro"]}));
    });
}

/// Whether this kernel idmaps a tmpfs (Linux 6.3).
fn kernel_idmaps_tmpfs() -> bool {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut nums = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
    (major, minor) >= (6, 3)
}

#[test]
fn containers_binding_one_shm_source_share_posix_shared_memory() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root (mounts the engine's shm tmpfs)");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let source = ShmSource::mount(t.join("shm"));
    // Docker's shareable IPC: a bind of the engine's tmpfs.
    let bind = json!({"destination": "/dev/shm", "type": "bind",
        "source": source.0, "options": ["rbind", "nosuid", "noexec", "nodev"]});
    let (a, b, c) = (t.join("a"), t.join("b"), t.join("c"));
    // A makes its objects, then waits for B's and reads them.
    let script_a = format!(
        "{PROBE} posix-make /from-a a-wrote && \
         until {PROBE} posix-read /from-b >/dev/null; do sleep 1; done && \
         {PROBE} posix-read /from-b"
    );
    shm_bundle(&a, &script_a, Some(bind.clone()));
    let pid_a = create(&rt, &a, "shm-a");
    assert!(rt.run(&["start", "shm-a"]).status.success());
    wait_for_text(&a.join("stdout"), "made\n");
    // B reads A's, then makes its own.
    let script_b = format!("{PROBE} posix-read /from-a && {PROBE} posix-make /from-b b-wrote");
    shm_bundle(&b, &script_b, Some(bind));
    let out_b = run_to_end(&rt, &b, "shm-b");
    assert_eq!(
        out_b,
        format!("{}made\n", native_posix_read("/from-a", "a-wrote"))
    );
    let out_a = finish(&rt, &a, "shm-a", pid_a);
    assert_eq!(
        out_a,
        format!("made\n{}", native_posix_read("/from-b", "b-wrote"))
    );
    // On the host, in the engine's tmpfs: the containers' root's files,
    // host root's where the kernel idmaps a tmpfs (the container's ids as
    // runc's), else the subordinate range's first id (both containers
    // have the same map).
    let owner = match kernel_idmaps_tmpfs() {
        true => 0,
        false => super::ids::supervisor_start("/etc/subuid"),
    };
    for name in ["from-a", "sem.from-a", "from-b", "sem.from-b"] {
        let meta = fs::metadata(source.0.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(meta.uid(), owner, "{name}");
    }
    // A container with its own /dev/shm (the spec's tmpfs) sees none.
    let script_c = format!("{PROBE} posix-read /from-a; echo $?");
    shm_bundle(&c, &script_c, None);
    let out_c = run_to_end(&rt, &c, "shm-c");
    assert_eq!(out_c, "no posix /from-a: No such file or directory\n1\n");
}

#[test]
fn a_tmpfs_at_dev_shm_has_the_size_it_asks_for() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root (unshare -m for the native tmpfs)");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    // Docker's private IPC with --shm-size 24m.
    let tmpfs = json!({"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
        "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=25165824"]});
    let probe = "df -k /dev/shm | awk 'NR == 2 { print $2, $3 }'; stat -c %a /dev/shm";
    let dir = t.join("sized");
    shm_bundle(&dir, probe, Some(tmpfs));
    let inside = run_to_end(&rt, &dir, "shm-sized");
    let native_dir = t.join("native");
    fs::create_dir_all(&native_dir).unwrap();
    let native_script = format!(
        "mount -t tmpfs -o nosuid,noexec,nodev,mode=1777,size=25165824 shm {d} && \
         {bb} df -k {d} | {bb} awk 'NR == 2 {{ print $2, $3 }}'; {bb} stat -c %a {d}",
        d = native_dir.display(),
        bb = common::oci::BUSYBOX,
    );
    let native = Command::new("unshare")
        .args(["-m", "sh", "-c", &native_script])
        .output()
        .expect("unshare -m (util-linux)");
    assert!(native.status.success(), "native: {native:?}");
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    assert_eq!(native, "24576 0\n1777\n");
    assert_eq!(inside, native);
}
