//! A rootfs that is an overlayfs mount, as the engines' default drivers
//! leave it (made here with `mount -t overlay`, `index=off` as Docker and
//! containerd mount it): the sandbox remakes the overlay over idmapped
//! copies of its layers, so the container's ids are the subordinate
//! range (no process of it is host root), its root writes in the 0555
//! root, what it writes lands in the upper directory as host 0's, and
//! files the host writes through the engine's mount while it runs (as
//! `docker cp` does) show inside; nothing of the sandbox's propagates
//! onto the engine's (shared) mount, whose plain unmount succeeds after
//! the container ends, as containerd's does. With the index on, a second overlay of
//! the upper directory is refused, and an overlay the kernel will not
//! remake (a lower layer that is itself an overlayfs mount, which takes
//! no idmap) fails the trial remake at `create`: both keep the host's
//! ids, with a warning, and run. A `volatile` engine mount (Podman's for
//! `--rm`) is remade with a work directory of the runtime's own beside
//! the engine's, which stays untouched; `delete` removes ours.
//! Part of the `oci` test binary's `cli` module.

use super::ids::{assert_on_range, supervisor_start};
use super::*;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

/// The engine's overlay at the bundle's `rootfs`: the bundle's tree as
/// its lower layer, `upper` and `work` beside; unmounted when dropped.
pub(super) struct EngineMount(PathBuf);

impl EngineMount {
    pub(super) fn new(t: &Tree, index: &str) -> EngineMount {
        fs::rename(t.join("rootfs"), t.join("lower")).expect("moving the tree");
        // Podman's image root: mode 0555, host root's.
        fs::set_permissions(t.join("lower"), fs::Permissions::from_mode(0o555)).unwrap();
        EngineMount::on_lower(t, index)
    }

    /// Podman's mount of a `--rm` container's root: `volatile`, which
    /// marks the work directory so that the kernel refuses any later
    /// mount of it (`work/incompat/volatile`).
    pub(super) fn volatile(t: &Tree) -> EngineMount {
        EngineMount::new(t, "off,volatile")
    }

    /// The overlay over the lower layer already at `lower`; `index` is
    /// the value of `index=`, with any further options after a comma.
    fn on_lower(t: &Tree, index: &str) -> EngineMount {
        for d in ["rootfs", "layers/upper", "layers/work"] {
            fs::create_dir_all(t.join(d)).unwrap();
        }
        fs::set_permissions(t.join("layers/upper"), fs::Permissions::from_mode(0o555)).unwrap();
        let options = format!(
            "lowerdir={},upperdir={},workdir={},index={index}",
            t.join("lower").display(),
            t.join("layers/upper").display(),
            t.join("layers/work").display()
        );
        let out = std::process::Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &options])
            .arg(t.join("rootfs"))
            .output()
            .expect("mount");
        assert!(out.status.success(), "mount -t overlay: {out:?}");
        // Shared, as containerd's mounts are on the host: what anyone
        // stacks on a peer of it would show here.
        let out = std::process::Command::new("mount")
            .arg("--make-shared")
            .arg(t.join("rootfs"))
            .output()
            .expect("mount --make-shared");
        assert!(out.status.success(), "mount --make-shared: {out:?}");
        EngineMount(t.join("rootfs"))
    }
}

impl Drop for EngineMount {
    fn drop(&mut self) {
        // Quiet: a test may have unmounted it already.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[test]
fn an_overlay_rootfs_is_remade_over_idmapped_layers() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "sleep 100");
        c["root"]["readonly"] = false.into();
    });
    let _engine = EngineMount::new(&t, "off");
    let pid = create(&rt, t.path(), "ovl");
    assert!(rt.run(&["start", "ovl"]).status.success());
    let exec = |script: &str| {
        let out = rt.run(&["exec", "--user", "0:0", "ovl", "sh", "-c", script]);
        (String::from_utf8_lossy(&out.stdout).into_owned(), out)
    };
    // Inside: the image's files are root's, root writes in the 0555 root
    // (its CAP_DAC_OVERRIDE, as under runc) and in /tmp.
    let script = "read a b n < /proc/self/uid_map; echo \"$a $b $n\"; \
        stat -c %u:%g /bin/busybox /; \
        busybox mkdir /www && echo x > /www/index.html && echo made; \
        echo r > /tmp/by-root && echo tmp";
    let (seen, out) = exec(script);
    let start = supervisor_start("/etc/subuid");
    assert!(start >= 100_000, "{start}");
    assert_eq!(
        seen,
        format!("0 {start} 65536\n0:0\n0:0\nmade\ntmp\n"),
        "{out:?}"
    );
    // What it wrote is in the engine's upper directory, host 0's, and
    // reads through the engine's mount (`docker cp` out of it).
    let owner = |path: &Path| {
        let m = fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (m.uid(), m.gid())
    };
    for made in ["www", "www/index.html", "tmp/by-root"] {
        assert_eq!(owner(&t.join("layers/upper").join(made)), (0, 0), "{made}");
    }
    let copied_out = fs::read_to_string(t.join("rootfs/www/index.html")).expect("merged dir");
    assert_eq!(copied_out, "x\n");
    // Host root writes through the engine's mount (`docker cp` in): the
    // container reads the files as its root's.
    fs::write(t.join("rootfs/from-engine"), "in\n").expect("writing the merged dir");
    fs::write(t.join("rootfs/tmp/from-engine"), "tmp-in\n").expect("writing the merged dir");
    let (seen, out) = exec("cat /from-engine /tmp/from-engine; stat -c %u:%g /from-engine");
    assert_eq!(seen, "in\ntmp-in\n0:0\n", "{out:?}");
    // From the host: no process of the container is host root.
    assert_on_range(&rt.pids("ovl"), start);
    // Nothing of the sandbox's is mounted on the engine's rootfs on the
    // host (the anchor's copy of it is a clone, a peer: its /proc must
    // not propagate here), so the engine's plain unmount after the
    // container ends succeeds (containerd's, without MNT_DETACH).
    assert_eq!(mounts_beneath(&t.join("rootfs")), Vec::<String>::new());
    assert!(rt.run(&["delete", "--force", "ovl"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
    let out = std::process::Command::new("umount")
        .arg(t.join("rootfs"))
        .output()
        .expect("umount");
    assert!(out.status.success(), "umount without -l: {out:?}");
}

#[test]
fn a_volatile_overlay_is_remade_with_a_work_directory_of_its_own() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "sleep 100");
        c["root"]["readonly"] = false.into();
    });
    let _engine = EngineMount::volatile(&t);
    let engine_work = t.join("layers/work/work");
    let marker = t.join("layers/work/work/incompat/volatile");
    assert!(marker.is_dir(), "the engine's volatile marker");
    let engine_work_ino = fs::metadata(&engine_work).expect("engine's work").ino();
    // What a crashed container's volatile overlay leaves in ours: the
    // next create over the same layers starts afresh.
    let ours = t.join("layers/upper.supervisor-work");
    fs::create_dir_all(ours.join("work/incompat/volatile")).unwrap();
    fs::write(ours.join("work/incompat/volatile/dirty"), "").unwrap();
    let pid = create(&rt, t.path(), "ovl-volatile");
    assert!(rt.run(&["start", "ovl-volatile"]).status.success());
    let out = rt.run(&[
        "exec",
        "ovl-volatile",
        "sh",
        "-c",
        "read a b n < /proc/self/uid_map; echo \"$a $b $n\"; busybox mkdir /www && echo made",
    ]);
    let start = supervisor_start("/etc/subuid");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("0 {start} 65536\nmade\n"),
        "{out:?}"
    );
    assert_on_range(&rt.pids("ovl-volatile"), start);
    let log = fs::read_to_string(&rt.log).unwrap_or_default();
    assert!(!log.contains("ids are the host's"), "{log}");
    // The engine's work directory is as the engine left it (not remade,
    // its marker kept); ours beside it carries the marker of our own
    // volatile overlay; `delete` removes it.
    assert_eq!(fs::metadata(&engine_work).unwrap().ino(), engine_work_ino);
    assert!(marker.is_dir(), "the engine's volatile marker");
    assert!(ours.join("work/incompat/volatile").is_dir(), "our marker");
    assert!(fs::metadata(t.join("layers/upper/www")).is_ok());
    assert!(rt
        .run(&["delete", "--force", "ovl-volatile"])
        .status
        .success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
    assert!(!ours.exists(), "{} after delete", ours.display());
}

#[test]
fn the_own_work_directory_goes_with_a_failed_create_and_with_delete() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "sleep 100");
        c["root"]["readonly"] = false.into();
        c["hooks"] = json!({"createRuntime": [{"path": "/bin/false"}]});
    });
    let _engine = EngineMount::new(&t, "off");
    let ours = t.join("layers/upper.supervisor-work");
    fs::create_dir_all(ours.join("work")).unwrap();
    // A create that fails (its hook) removes ours with its state.
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(t.path())
        .arg("ovl-failed")
        .output()
        .expect("create");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!rt.root.join("ovl-failed").exists());
    assert!(!ours.exists(), "{} after a failed create", ours.display());
    // `delete` removes the one the state records, though the engine has
    // unmounted its overlay first (nothing in mountinfo names it now).
    let mut config: serde_json::Value =
        serde_json::from_slice(&fs::read(t.join("config.json")).unwrap()).unwrap();
    config["hooks"] = json!({});
    fs::write(t.join("config.json"), config.to_string()).unwrap();
    let pid = create(&rt, t.path(), "ovl-delete");
    let state: serde_json::Value = serde_json::from_slice(
        &fs::read(rt.root.join("ovl-delete/state.json")).expect("state.json"),
    )
    .unwrap();
    assert_eq!(state["overlay_workdir"], ours.display().to_string());
    assert!(ours.is_dir(), "{} while it runs", ours.display());
    let out = std::process::Command::new("umount")
        .args(["-l"])
        .arg(t.join("rootfs"))
        .output()
        .expect("umount");
    assert!(out.status.success(), "umount -l: {out:?}");
    assert!(rt
        .run(&["delete", "--force", "ovl-delete"])
        .status
        .success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
    assert!(!ours.exists(), "{} after delete", ours.display());
}

/// The mount points of this namespace strictly beneath `dir`.
fn mounts_beneath(dir: &Path) -> Vec<String> {
    let prefix = format!("{}/", dir.display());
    let info = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    (info.lines())
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// A bundle whose container prints its uid map and writes /tmp/w in its
/// writable root: the cases where the container keeps the host's ids.
fn map_and_write_bundle(dir: &Path) {
    bundle(dir, |c| {
        set_args(
            c,
            "read a b n < /proc/self/uid_map; echo \"$a $b $n\"; echo w > /tmp/w",
        );
        c["root"]["readonly"] = false.into();
    });
}

#[test]
fn an_overlay_with_the_index_on_keeps_the_host_ids() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    map_and_write_bundle(t.path());
    let _engine = EngineMount::new(&t, "on");
    let out = run_to_end(&rt, t.path(), "ovl-index");
    assert_eq!(out, "0 0 65536\n");
    let log = fs::read_to_string(&rt.log).unwrap_or_default();
    assert!(log.contains("index=on"), "{log}");
    let meta = fs::metadata(t.join("layers/upper/tmp/w")).expect("the container's file");
    assert_eq!((meta.uid(), meta.gid()), (0, 0));
}

/// An overlayfs mount of `layers` (read-only, no upper layer) at `at`;
/// unmounted when dropped.
fn read_only_overlay(layers: &[PathBuf], at: &Path) -> EngineMount {
    fs::create_dir_all(at).unwrap();
    let lowers: Vec<String> = layers.iter().map(|l| l.display().to_string()).collect();
    let out = std::process::Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o"])
        .arg(format!("lowerdir={}", lowers.join(":")))
        .arg(at)
        .output()
        .expect("mount");
    assert!(out.status.success(), "mount -t overlay: {out:?}");
    EngineMount(at.to_path_buf())
}

#[test]
fn an_overlay_the_kernel_will_not_remake_keeps_the_host_ids() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    map_and_write_bundle(t.path());
    // The engine's lower layer is itself an overlayfs mount (of the
    // tree and an empty layer), which the kernel does not idmap: the
    // trial remake at create fails, and the container runs with the
    // host's ids rather than not at all.
    fs::rename(t.join("rootfs"), t.join("base")).expect("moving the tree");
    fs::create_dir_all(t.join("empty")).unwrap();
    let layers = [t.join("base"), t.join("empty")];
    let _inner = read_only_overlay(&layers, &t.join("lower"));
    let _engine = EngineMount::on_lower(&t, "off");
    let out = run_to_end(&rt, t.path(), "ovl-nested");
    assert_eq!(out, "0 0 65536\n");
    let log = fs::read_to_string(&rt.log).unwrap_or_default();
    assert!(log.contains("remaking its overlay"), "{log}");
    // A failed trial is not recorded: the next create tries again.
    assert_eq!(trial_records(&rt), 0);
    let meta = fs::metadata(t.join("layers/upper/tmp/w")).expect("the container's file");
    assert_eq!((meta.uid(), meta.gid()), (0, 0));
}

/// How many passed trial remakes the runtime's root records.
fn trial_records(rt: &Runtime) -> usize {
    fs::read_dir(rt.root.join("@overlay-trials"))
        .map(|d| {
            (d.filter_map(Result::ok))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_passed_trial_is_made_once_and_every_container_still_gets_the_range() {
    need_busybox!();
    if !common::is_root() {
        skip!("needs root");
    }
    // Two engine mounts of the same kind (their layers on one mount), one
    // runtime root, as Docker's containers are.
    let (t1, t2) = (Tree::new(), Tree::new());
    let rt = Runtime::new(t1.path());
    map_and_write_bundle(t1.path());
    map_and_write_bundle(t2.path());
    let _first = EngineMount::new(&t1, "off");
    let _second = EngineMount::new(&t2, "off");
    let start = supervisor_start("/etc/subuid");
    assert_eq!(trial_records(&rt), 0);
    assert_eq!(
        run_to_end(&rt, t1.path(), "trial-first"),
        format!("0 {start} 65536\n")
    );
    assert_eq!(trial_records(&rt), 1);
    // The second container matches the record: no second trial, and
    // still the range, its writes host 0's in its own upper directory.
    assert_eq!(
        run_to_end(&rt, t2.path(), "trial-second"),
        format!("0 {start} 65536\n")
    );
    assert_eq!(trial_records(&rt), 1);
    for t in [&t1, &t2] {
        let meta = fs::metadata(t.join("layers/upper/tmp/w")).expect("the container's file");
        assert_eq!((meta.uid(), meta.gid()), (0, 0));
    }
    let log = fs::read_to_string(&rt.log).unwrap_or_default();
    assert!(!log.contains("remaking its overlay"), "{log}");
}
