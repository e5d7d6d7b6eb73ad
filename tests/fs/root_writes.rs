//! Opens for reading and writing of names made at the view's root while
//! the guest runs (`procfs/fence.rs`: the guest's Landlock domain checks
//! an `O_RDWR` open as a read, and grants nothing directly in the root
//! nor beneath a top-level name made since the start, so the handler
//! opens such a file as the caller). A busybox shell in a writable
//! `--rootfs` tree, compared with the same script run natively in a
//! chroot of another copy of the tree; an `O_RDWR` open of a procfs file
//! keeps the kernel's answer.

use crate::common;
use common::oci::{
    busybox_rootfs, have_busybox, ROOT_WRITES as SCRIPT, ROOT_WRITES_NATIVE as NATIVE,
};
use common::*;

const CHROOT: &str = "/usr/sbin/chroot";

#[test]
fn read_write_opens_at_a_writable_root_match_native() {
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if !is_root() || !have(CHROOT) {
        skip!("the native run needs root and {CHROOT}");
    }
    let native_root = tempfile::tempdir().expect("tempdir");
    busybox_rootfs(native_root.path());
    let root = native_root.path().display().to_string();
    let native = Run::new(&[CHROOT, &root, "/bin/sh", "-c", SCRIPT])
        .native()
        .ok("native");
    assert_eq!(native.stdout, NATIVE, "{}", native.dump());

    let tree = tempfile::tempdir().expect("tempdir");
    busybox_rootfs(tree.path());
    let rootfs = tree.path().display().to_string();
    let supervised = Run::new(&["/bin/sh", "-c", SCRIPT])
        .sup(&["--rootfs", &rootfs])
        .supervised()
        .ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    assert_eq!(supervised.stderr, native.stderr, "{}", supervised.dump());
    // (The tree is shown through an overlay: the writes stay in its
    // upper layer, and `cat /d/g` read them back.)
}

/// An `O_RDWR` open of a file of the kernel's procfs gets the kernel's
/// answer, as before the filter trapped such opens: the guest's domain
/// refuses it (EACCES) even after names were made at the root, and the
/// supervisor never opens it for writing in the guest's place.
#[test]
fn read_write_opens_of_procfs_stay_the_kernels() {
    if !have_busybox() {
        skip!("no busybox-static at /bin/busybox (apt-get install busybox-static)");
    }
    if landlock_abi() < 1 {
        skip!("no Landlock: the guest has no fence");
    }
    let tree = tempfile::tempdir().expect("tempdir");
    busybox_rootfs(tree.path());
    let rootfs = tree.path().display().to_string();
    let script = "true <> /proc/self/status; echo before $?; touch /made; \
                  true <> /proc/self/status; echo after $?; \
                  true <> /proc/self/attr/current; echo attr $?";
    let out = Run::new(&["/bin/sh", "-c", script])
        .sup(&["--rootfs", &rootfs])
        .supervised();
    out.assert_lines(&["before 1", "after 1", "attr 1"]);
    assert_eq!(
        out.stderr.matches("Permission denied").count(),
        3,
        "{}",
        out.dump()
    );
}
