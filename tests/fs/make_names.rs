//! `mkdir`, `mkdirat`, and `mknod` and `mknodat` of anything but a device
//! pass the filter: the kernel makes the name in the guest's own view as
//! the guest. `tests/fs/make_names.py`
//! makes them through Python's `os`, raw `syscall`s with hostile arguments
//! (bad and kernel pointers, huge and typed modes, devices, sockets and
//! whiteouts, bad descriptors, long names and paths, errno orders, EROFS)
//! under several umasks and a default ACL, and coreutils (`mkdir -p -m`,
//! `mkfifo`, `mknod`, `tar x`). The outputs must be equal to a native
//! run's: on a host directory bound with `--rw` (a read-only bind within
//! it), where the native side runs as uid 0 without capabilities
//! (`setpriv --bounding-set=-all`), as the guest does, and the report must
//! count as serviced only the mknods of devices (`handlers/mknod.rs`,
//! which leaves them to the kernel's EPERM there); and in the sandbox's
//! own layer, where a root supervisor makes device nodes as a container's
//! root with CAP_MKNOD does: the native side holds CAP_MKNOD alone.
//! Both run the guest with one id (`--userns-range none`), the root
//! without capabilities these native sides model; root's default, a range
//! whose root holds Docker's set, is `tests/security/ids.rs`'s.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = concat!(include_str!("syscall.py"), include_str!("make_names.py"));
const PASSED: &[&str] = &["mkdir", "mkdirat"];
/// The device mknods `make_names.py` makes on a host directory, each
/// serviced: by `mknod`, its "## types" (5), the errno orders' `chr` (2)
/// and the read-only section's `chr` (8); by `mknodat`, its "## types" (5)
/// and coreutils' `mknod ... c` (2).
const DEVICE_MKNODS: &[(&str, i64)] = &[("mknod", 15), ("mknodat", 7)];
/// The guest's ids: the invoker's one (root without capabilities).
const ONE_ID: [&str; 2] = ["--userns-range", "none"];
/// uid 0 with no capability, in this process's namespaces.
const NO_CAPS: &[&str] = &["setpriv", "--bounding-set=-all", "--inh-caps=-all"];
/// uid 0 with CAP_MKNOD alone, as a container's root makes nodes.
const MKNOD_ONLY: &[&str] = &["setpriv", "--bounding-set=-all,+mknod", "--inh-caps=-all"];

fn cannot_run() -> Option<&'static str> {
    if !is_root() {
        return Some("needs root (a read-only bind natively)");
    }
    ["setpriv", "unshare", "mkfifo", "mknod", "tar"]
        .into_iter()
        .find(|t| !have(t))
}

/// Both sides' output must name the sections, and the ACL when possible.
fn check_sections(out: &str, read_only: bool) {
    for section in [
        "## types",
        "## names and errno orders",
        "## coreutils",
        "## tree",
    ] {
        assert!(out.contains(section), "no {section}:\n{out}");
    }
    assert_eq!(out.contains("## read-only"), read_only, "{out}");
    if have("setfacl") {
        assert!(out.contains("setfacl 0"), "{out}");
    }
}

fn assert_only_devices_serviced(report: &std::path::Path) {
    let r = read_report(report);
    let serviced = &r["syscalls"]["serviced"];
    assert!(serviced.is_object(), "{r}");
    for call in PASSED {
        assert!(serviced[call].is_null(), "{call} was serviced: {r}");
    }
    for (call, n) in DEVICE_MKNODS {
        assert_eq!(serviced[call].as_i64(), Some(*n), "{call} serviced: {r}");
    }
}

#[test]
fn mkdir_and_mknod_match_native_on_a_host_directory() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let pair = Pair::new(|d| {
        std::fs::create_dir_all(d.join("ro/sub")).unwrap();
        std::fs::write(d.join("ro/f"), "x").unwrap();
    });
    // Natively: the same read-only bind, in a mount namespace of its own.
    let bind_ro =
        r#"mount --bind "$1/ro" "$1/ro" && mount -o remount,bind,ro "$1/ro" && shift && exec "$@""#;
    let a = pair.a.display().to_string();
    let mut argv = vec!["unshare", "-m", "sh", "-c", bind_ro, "sh", &a];
    argv.extend_from_slice(NO_CAPS);
    argv.extend_from_slice(&[PY, "-c", SCRIPT, &a]);
    let native = Run::new(&argv).native().ok("native");
    check_sections(&native.stdout, true);
    let report = pair.base.join("report.json");
    let sup = Run::new(&[PY, "-c", SCRIPT, &pair.b.display().to_string()])
        .rw(&pair.b)
        .ro(pair.b.join("ro"))
        .sup(&["--report".to_string(), report.display().to_string()])
        .sup(&ONE_ID)
        .supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert_same(
        "mkdir and mknod on a host directory",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
    assert_only_devices_serviced(&report);
}

#[test]
fn mkdir_and_mknod_match_native_in_the_layer() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let scratch = Tree::new();
    let dir = scratch.dir("t").display().to_string();
    let mut argv = MKNOD_ONLY.to_vec();
    argv.extend_from_slice(&[PY, "-c", SCRIPT, &dir]);
    let native = Run::new(&argv).native().ok("native");
    check_sections(&native.stdout, false);
    // The sandbox's /tmp: the root's tmpfs layer, where directories are
    // cached.
    let inside = "/tmp/make_names";
    let sup = Run::sh(
        r#"mkdir "$1" && shift && exec "$@""#,
        &[inside, PY, "-c", SCRIPT, inside],
    )
    .sup(&ONE_ID)
    .supervised()
    .ok("supervised");
    assert_same(
        "mkdir and mknod in the layer",
        &native.stdout.replace(&dir, "<T>"),
        &sup.stdout.replace(inside, "<T>"),
    );
}

/// overlayfs refuses a whiteout (a character device 0:0) made through it,
/// natively as in the sandbox's /etc overlay; a FIFO and a directory are
/// made in its upper layer.
#[test]
fn whiteouts_through_an_overlay_are_refused() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let make = r#"cd "$1" && for n in wh p d; do rm -rf "$n"; done
mknod wh c 0 0 2>&1 | sed 's/.*: //'; mknod p p && mkdir d && stat -c '%F %a' p d"#;
    let t = Tree::new();
    for d in ["lower", "upper", "work", "merged"] {
        t.dir(d);
    }
    let mount = format!(
        "mount -t overlay overlay -o lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work {0}/merged && exec \"$@\"",
        t.s()
    );
    let merged = t.join("merged").display().to_string();
    let mut argv = vec!["unshare", "-m", "sh", "-c", &mount, "sh"];
    argv.extend_from_slice(NO_CAPS);
    argv.extend_from_slice(&["sh", "-c", make, "sh", &merged]);
    let native = Run::new(&argv).native().ok("native");
    assert_eq!(
        native.stdout, "Operation not permitted\nfifo 644\ndirectory 755\n",
        "natively"
    );
    let sup = Run::sh(make, &["/etc"]).supervised().ok("supervised");
    assert_eq!(sup.stdout, native.stdout, "{}", sup.dump());
}
