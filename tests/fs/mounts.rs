//! Mounts and storage: `--rootfs` (a tiny tree holding one static
//! program), `--mask`, the sandbox's /etc/resolv.conf and machine id,
//! and the sizes statfs/df report for `/` and `--tmpfs` mounts. `--rw`
//! mounts are `rw_mounts.rs`'s.

use crate::common;
use common::*;
use std::path::Path;

/// A tiny rootfs in `t/root`, or None (reason printed) when no static
/// program can be built.
fn rootfs(t: &Tree) -> Option<String> {
    let root = t.join("root");
    match tiny_rootfs(&root) {
        Ok(()) => Some(root.display().to_string()),
        Err(e) => {
            eprintln!("SKIPPED: cannot build a rootfs: {e}");
            None
        }
    }
}

/// `rootprobe OPS...` under `--rootfs ROOT` with the extra options.
fn in_rootfs(root: &str, sup: &[&str], ops: &[&str]) -> Out {
    let mut argv = vec!["/bin/rootprobe"];
    argv.extend_from_slice(ops);
    Run::new(&argv)
        .sup(&["--rootfs", root])
        .sup(sup)
        .supervised()
}

#[test]
fn rootfs_shows_only_the_tree() {
    let t = Tree::new();
    let Some(root) = rootfs(&t) else { return };
    let ops = [
        "ls",
        "/",
        ",",
        "ls",
        "/usr",
        ",",
        "ls",
        "/etc",
        ",",
        "cat",
        "/etc/hostname",
        ",",
        "cat",
        "/data/f",
        ",",
        "write",
        "/data/f",
        "changed\n",
        ",",
        "cat",
        "/data/f",
        ",",
        "stat",
        "/tmp",
        ",",
        "write",
        "/tmp/t",
        "t\n",
        ",",
        "statfs",
        "/",
        ",",
        "ls",
        "/proc/self/fd",
    ];
    let out = in_rootfs(&root, &["--disk", "64m"], &ops);
    let want = format!(
        "bin data dev etc proc sys tmp\n\
         ERR No such file or directory\n\
         {}\n\
         sandbox\n\
         tree\n\
         ok\n\
         changed\n\
         dir 1777 40\n\
         ok\n\
         67108864\n\
         0 1 2 3\n",
        tree_etc_listing()
    );
    assert_eq!(out.stdout, want, "{}", out.dump());
    assert_eq!(out.code, Some(1), "{}", out.dump());
    // The tree is never written: the write landed in the layer.
    assert_eq!(
        std::fs::read_to_string(t.join("root/data/f")).unwrap(),
        "tree\n"
    );
    assert_eq!(listing(&t.join("root")), ["bin", "data", "etc"]);
    // The sandbox's passwd, not the tree's.
    let out = in_rootfs(&root, &[], &["cat", "/etc/passwd"]);
    assert!(out.stdout.starts_with("root:x:0:"), "{}", out.dump());
}

#[test]
fn rootfs_takes_mounts_and_workdir() {
    let (t, rw, ro) = (Tree::new(), Tree::new(), Tree::new());
    let Some(root) = rootfs(&t) else { return };
    ro.file("in.txt", "input\n");
    let out = in_rootfs(
        &root,
        &[
            "--rw",
            &format!("{}:/out", rw.s()),
            "--ro",
            &format!("{}:/data/in", ro.s()),
            "--tmpfs",
            "/scratch:8m",
            "--workdir",
            "/data",
        ],
        &[
            "write",
            "/out/x",
            "made\n",
            ",",
            "cat",
            "/data/in/in.txt",
            ",",
            "write",
            "/data/in/no",
            "x",
            ",",
            "statfs",
            "/scratch",
            ",",
            "ls",
            ".",
        ],
    );
    assert_eq!(
        out.stdout,
        "ok\ninput\nERR Read-only file system\n8388608\nf in\n",
        "{}",
        out.dump()
    );
    assert_eq!(
        std::fs::read_to_string(rw.join("x")).ok().as_deref(),
        Some("made\n")
    );
    assert_eq!(listing(&t.join("root")), ["bin", "data", "etc"]);
}

#[test]
fn rootfs_errors() {
    let t = Tree::new();
    let Some(root) = rootfs(&t) else { return };
    let missing = t.join("nope").display().to_string();
    let file = t.join("root/data/f").display().to_string();
    for (dir, why) in [
        (missing.as_str(), "No such file or directory"),
        (file.as_str(), "not a directory"),
    ] {
        let out = Run::new(&["/bin/true"])
            .sup(&["--rootfs", dir])
            .supervised();
        assert_eq!(out.code, Some(125), "{}", out.dump());
        assert_eq!(
            out.stderr,
            format!("supervisor: --rootfs {dir}: {why}\n"),
            "{}",
            out.dump()
        );
    }
    // No shell in the tree is fine; only the command must exist.
    let out = Run::new(&["/bin/sh", "-c", "true"])
        .sup(&["--rootfs", &root])
        .supervised();
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert_eq!(
        out.stderr,
        "supervisor: /bin/sh: No such file or directory\n"
    );
}

/// A tree from a stranger may have symlinks where the sandbox mounts or
/// writes (/etc, /sys, /tmp, /proc, /dev, /etc/passwd): none of them may
/// lead the building of the view to the host.
#[test]
fn rootfs_symlinks_do_not_lead_out() {
    let (t, victim) = (Tree::new(), Tree::new());
    let Some(root) = rootfs(&t) else { return };
    let r = Path::new(&root);
    let v = victim.s();
    std::fs::remove_dir_all(r.join("etc")).unwrap();
    for (name, target) in [
        ("etc", format!("/oldroot{v}")),
        ("sys", format!("/oldroot{v}")),
        ("tmp", format!("../../../../../../../..{v}")),
        ("proc", format!("/oldroot{v}")),
        ("dev", format!("/oldroot{v}")),
        ("home", format!("/oldroot{v}")),
    ] {
        std::os::unix::fs::symlink(target, r.join(name)).unwrap();
    }
    let out = Run::new(&[
        "/bin/rootprobe",
        "ls",
        "/etc",
        ",",
        "ls",
        "/sys/devices/system",
        ",",
        "write",
        "/tmp/x",
        "x",
        ",",
        "stat",
        "/dev/null",
    ])
    .sup(&["--rootfs", &root])
    .env("HOME", "/home/u")
    .supervised();
    assert_eq!(
        out.stdout,
        format!("{}\ncpu\nok\nchr 666 0\n", tree_etc_listing()),
        "{}",
        out.dump()
    );
    assert_eq!(
        listing(victim.path()),
        Vec::<String>::new(),
        "building the view wrote to the host through the tree's symlinks"
    );
}

#[test]
fn mask_hides_files_and_dirs_in_the_host_view() {
    let ro = Tree::new();
    ro.file("secret.txt", "secret\n");
    ro.file("sub/x", "x\n");
    ro.file("plain.txt", "plain\n");
    let script = "cat /data/secret.txt | wc -c; ls -A /data/sub | wc -l; cat /data/plain.txt; \
                  cat /etc/hostname | wc -c; touch /data/sub/new 2>&1 | grep -c 'Read-only'; \
                  echo x > /etc/hostname; cat /etc/hostname | wc -c; test -e /nowhere || echo absent";
    let out = Run::sh(&(guard() + script), &[])
        .sup(&[
            "--ro",
            &format!("{}:/data", ro.s()),
            "--mask",
            "/data/secret.txt",
            "--mask",
            "/data/sub",
            "--mask",
            "/etc/hostname",
            "--mask",
            "/nowhere/at/all",
        ])
        .supervised();
    assert_eq!(
        out.stdout,
        "0\n0\nplain\n0\n1\n0\nabsent\n",
        "{}",
        out.dump()
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        std::fs::read_to_string(ro.join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[test]
fn mask_under_rootfs() {
    let t = Tree::new();
    let Some(root) = rootfs(&t) else { return };
    std::fs::write(t.join("root/data/g"), "g\n").unwrap();
    let out = in_rootfs(
        &root,
        &["--mask", "/data/f", "--mask", "/bin/../etc"],
        &["cat", "/data/f", ",", "cat", "/data/g", ",", "ls", "/etc"],
    );
    assert_eq!(out.stdout, "g\n\n", "{}", out.dump());
    assert_eq!(out.code, Some(0), "{}", out.dump());
}

#[test]
fn mask_rejects_bad_paths() {
    for (path, why) in [("relative", "absolute"), ("/", "guest's /")] {
        let out = Run::new(&["/bin/true"]).sup(&["--mask", path]).supervised();
        assert_eq!(out.code, Some(125), "{}", out.dump());
        assert!(out.stderr.contains(why), "{}", out.dump());
    }
}

#[test]
fn resolv_conf_is_the_sandboxs() {
    let out = Run::sh(
        "stat -c '%a %F' /etc/resolv.conf; grep -c nameserver /etc/resolv.conf; grep -c '^#' /etc/resolv.conf",
        &[],
    )
    .supervised();
    let mode = if is_root() { "644" } else { "444" };
    assert_eq!(
        out.stdout,
        format!("{mode} regular file\n0\n1\n"),
        "{}",
        out.dump()
    );
}

/// Each sandbox on the host's /etc gets a machine id of its own, new
/// every run (`launch/etc.rs`): the host's would name the host to every
/// tenant. A `--rootfs` tree keeps the one it ships.
#[test]
fn machine_id_is_the_sandboxs() {
    let read = || {
        let out = Run::new(&["/bin/cat", "/etc/machine-id"]).supervised();
        out.ok("cat /etc/machine-id").stdout
    };
    let (a, b) = (read(), read());
    let hex = a.strip_suffix('\n').unwrap_or_default();
    assert!(
        hex.len() == 32
            && hex
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "not a machine id: {a:?}"
    );
    assert_ne!(a, b, "two runs got the same id");
    if let Ok(host) = std::fs::read_to_string("/etc/machine-id") {
        assert_ne!(a, host, "the host's id");
    }
    let t = Tree::new();
    let Some(root) = rootfs(&t) else { return };
    std::fs::write(
        t.join("root/etc/machine-id"),
        "0123456789abcdef0123456789abcdef\n",
    )
    .unwrap();
    let out = in_rootfs(&root, &[], &["cat", "/etc/machine-id"]);
    assert_eq!(
        out.stdout,
        "0123456789abcdef0123456789abcdef\n",
        "{}",
        out.dump()
    );
}

/// df and statfs inside report the sandbox's quotas, and writing past
/// one fails with ENOSPC.
#[test]
fn df_reports_quotas() {
    let script = "df -h / | tail -1 | awk '{print $2}'; df -h /scratch | tail -1 | awk '{print $2}'; \
                  head -c 70M /dev/zero > /scratch/f; ls -l /scratch/f | awk '{print ($5 <= 67108864)}'; \
                  rm /scratch/f; head -c 300M /dev/zero > /tmp/f";
    let out = Run::sh(script, &[])
        .sup(&["--disk", "256m", "--tmpfs", "/scratch:64m"])
        .supervised();
    assert_eq!(out.stdout, "256M\n64M\n1\n", "{}", out.dump());
    assert_eq!(
        out.stderr.matches("No space left on device").count(),
        2,
        "{}",
        out.dump()
    );
}
