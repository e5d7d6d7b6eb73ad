//! Where a container's writes land: with a writable bundle root
//! (`root.readonly` false, what Docker, Podman and containerd give) the
//! guest writes to the bundle's root itself, as under runc, so the engine
//! finds them there (`docker cp` out, `docker diff`); the sandbox's own
//! /etc files are bound over the tree's, never written into it. With a
//! read-only root (`docker run --read-only`) the guest's writes to it fail
//! with EROFS, as under runc, and nothing reaches the tree.
//! Part of the `oci` test binary's `cli` module (`tests/oci/cli.rs` owns
//! the bundle and helpers).

use super::*;

/// Writes two files, reads the sandbox's hostname, says what / is.
const SCRIPT: &str =
    "echo from-tmp > /tmp/out; busybox mkdir -p /root; echo from-root > /root/file; \
                      cat /etc/hostname";

/// Runs `SCRIPT` in a bundle whose root is read-only or not; the tree
/// after the run, and the guest's stdout.
fn run_writer(readonly: bool) -> (Tree, String) {
    let id = if readonly { "writer-ro" } else { "writer-rw" };
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, SCRIPT);
        c["root"]["readonly"] = readonly.into();
        c["hostname"] = "writer".into();
    });
    let out = run_to_end(&rt, t.path(), id);
    (t, out)
}

#[test]
fn a_writable_root_takes_the_containers_writes() {
    need_busybox!();
    let (t, out) = run_writer(false);
    assert_eq!(out, "writer\n");
    let rootfs = t.join("rootfs");
    let read = |rel: &str| fs::read_to_string(rootfs.join(rel)).ok();
    assert_eq!(read("tmp/out").as_deref(), Some("from-tmp\n"));
    assert_eq!(read("root/file").as_deref(), Some("from-root\n"));
    // The sandbox's hostname was bound over the tree's (an empty mount
    // point made for it), not written into the tree.
    assert_eq!(read("etc/hostname").as_deref(), Some(""));
}

/// A read-only root refuses the guest's writes: EROFS, as runc's
/// read-only root does (its /dev/shm stays writable).
#[test]
fn a_read_only_root_refuses_writes() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let script = "touch /tmp/x 2>&1 | busybox grep -q 'Read-only file system' && echo erofs; \
                  busybox mkdir /made 2>/dev/null || echo no-mkdir; \
                  echo shm > /dev/shm/x && cat /dev/shm/x";
    bundle(t.path(), |c| {
        set_args(c, script);
        c["root"]["readonly"] = true.into();
    });
    let out = run_to_end(&rt, t.path(), "ro-root");
    assert_eq!(out, "erofs\nno-mkdir\nshm\n");
    assert!(!t.join("rootfs/made").exists());
}

#[test]
fn a_read_only_root_keeps_the_writes_in_the_sandbox() {
    need_busybox!();
    let (t, out) = run_writer(true);
    assert_eq!(out, "writer\n");
    let rootfs = t.join("rootfs");
    assert!(!rootfs.join("tmp/out").exists());
    assert!(!rootfs.join("root").exists());
    assert!(!rootfs.join("etc/hostname").exists());
}

#[test]
fn a_writable_root_whose_mount_point_is_a_symlink_is_refused() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "true");
        c["root"]["readonly"] = false.into();
    });
    // /dev leading out of the tree, where the sandbox's /dev would be mounted.
    let dev = t.join("rootfs/dev");
    fs::remove_dir(&dev).expect("rmdir dev");
    std::os::unix::fs::symlink("/oldroot/tmp", &dev).expect("dev symlink");
    subreaper();
    let out = rt
        .cmd(&["create", "--bundle"])
        .arg(t.path())
        .arg("linked")
        .output()
        .expect("create");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "create succeeded: {err}");
    assert!(
        err.contains("the root file system's /dev is not a directory"),
        "{err}"
    );
    let _ = rt.run(&["delete", "--force", "linked"]);
}

/// A container's image with a dynamic loader gets the fast-reads preload
/// (`sandbox/src/launch/fast_reads.rs`): a glibc program of the image has
/// it mapped through the preload list bound over the image's, a musl
/// program through `LD_PRELOAD`, and both read as natively. Written into
/// the bundle's root: only the empty mount points of the two /etc files.
#[test]
fn an_image_with_a_loader_gets_the_preload() {
    need_busybox!();
    if common::landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        c["root"]["readonly"] = false.into();
    });
    let rootfs = t.join("rootfs");
    common::add_dynamic(&rootfs, &common::c_prog("many_reads")).expect("a glibc program");
    common::add_dynamic(&rootfs, &common::musl_prog("many_reads")).expect("a musl program");
    fs::create_dir_all(rootfs.join("data/files")).expect("mkdir");
    for i in 0..200 {
        fs::write(rootfs.join(format!("data/files/{i}")), format!("{i}\n")).expect("write");
    }
    let config_path = t.join("config.json");
    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(&config_path).expect("config")).expect("json");
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "glibc-mapped",
            &["/bin/many_reads", "mapped", "sandbox-fast-reads.so"],
            "mapped\n",
        ),
        (
            "musl-mapped",
            &["/bin/many_reads.musl", "mapped", "sandbox-fast-reads.so"],
            "mapped\n",
        ),
        (
            "glibc-read",
            &["/bin/many_reads", "read", "/data/files", "200"],
            "sum 19900 fsum 19900\n",
        ),
        (
            "musl-read",
            &["/bin/many_reads.musl", "read", "/data/files", "200"],
            "sum 19900 fsum 19900\n",
        ),
    ];
    for (id, args, want) in cases {
        let mut c = config.clone();
        c["process"]["args"] = json!(args);
        fs::write(&config_path, c.to_string()).expect("write config");
        assert_eq!(run_to_end(&rt, t.path(), id), want, "{id}");
    }
    let read = |rel: &str| fs::read(rootfs.join(rel)).ok();
    assert_eq!(read("etc/ld.so.preload").as_deref(), Some(&b""[..]));
    assert_eq!(read("etc/sandbox-fast-reads.so").as_deref(), Some(&b""[..]));
}

/// Opens for reading and writing of names the container makes at its
/// writable root (`procfs/fence.rs`: the guest's Landlock domain grants
/// nothing there, so the sandbox opens them as the caller): creating at
/// "/", a file made there, a directory made there, busybox `touch`. The
/// script and its native output are `tests/fs/root_writes.rs`'s.
#[test]
fn read_write_opens_at_a_writable_root_succeed() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, crate::common::oci::ROOT_WRITES);
        c["root"]["readonly"] = false.into();
    });
    let out = run_to_end(&rt, t.path(), "rdwr-root");
    assert_eq!(out, crate::common::oci::ROOT_WRITES_NATIVE);
    let rootfs = t.join("rootfs");
    assert_eq!(
        fs::read_to_string(rootfs.join("d/g")).ok().as_deref(),
        Some("hi\n")
    );
    assert!(rootfs.join("x").is_file() && rootfs.join("n3").is_file());
}

/// A container whose image holds static programs only (busybox and a
/// static build of `tests/c/static_reads.c`) starts them through the
/// static loader (`sandbox/src/launch/static_loader.rs`), bound into its
/// /etc as the preload is: the program prints what it prints natively,
/// started by create/start and by `exec` (whose helper looks at the
/// program in the container's own view), and a program started through
/// it reads its own arguments as its command line, not the loader's. Written into the bundle's root: only the
/// loader's empty mount point.
#[test]
fn a_static_image_starts_its_programs_through_the_loader() {
    need_busybox!();
    if common::landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let prog = common::c_static("cc");
    let here = Tree::new();
    common::fill_static_reads_dir(here.path());
    let native = common::Run::new(&[prog.as_os_str(), here.path().as_os_str()])
        .native()
        .ok("native");
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        c["root"]["readonly"] = false.into();
        c["process"]["args"] = json!(["/bin/static_reads", "/data/d"]);
    });
    let rootfs = t.join("rootfs");
    fs::copy(&prog, rootfs.join("bin/static_reads")).expect("copy the program");
    common::fill_static_reads_dir(&rootfs.join("data/d"));
    let main_out = run_to_end(&rt, t.path(), "static-main");
    common::assert_static_reads_as_native(&main_out, &native, "create/start");
    // The same program from `exec`, beside a main process (busybox sleep)
    // that started through the loader too.
    let config_path = t.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&fs::read(&config_path).expect("config")).expect("json");
    config["process"]["args"] = json!(["sleep", "100"]);
    fs::write(&config_path, config.to_string()).expect("write config");
    let pid = create(&rt, t.path(), "static-exec");
    assert!(rt.run(&["start", "static-exec"]).status.success());
    let exec = rt.run(&["exec", "static-exec", "/bin/static_reads", "/data/d"]);
    common::assert_static_reads_as_native(
        &String::from_utf8_lossy(&exec.stdout),
        &native,
        &String::from_utf8_lossy(&exec.stderr),
    );
    let cmdline = rt.run(&["exec", "static-exec", "cat", "/proc/self/cmdline"]);
    let cmdline = String::from_utf8_lossy(&cmdline.stdout);
    assert_eq!(cmdline, "cat\0/proc/self/cmdline\0");
    assert!(rt
        .run(&["delete", "--force", "static-exec"])
        .status
        .success());
    let _ = wait_exit(pid);
    assert_eq!(
        fs::read(rootfs.join("etc/sandbox-static-loader"))
            .ok()
            .as_deref(),
        Some(&b""[..])
    );
}
