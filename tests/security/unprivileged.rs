//! The same sandbox for an unprivileged invoker: user `sbxtest` (created with
//! useradd when missing) runs a copy of the binary (mode 0755 in a world-
//! readable dir). Covers identity, the fsprobe comparison with every case
//! compared (no capabilities on either side), denied calls, exit/signal
//! passthrough, `--rw` ownership, and that nothing root-only becomes readable.
//! Needs root to switch users; skips with a message otherwise.

use crate::common;
use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

const USER: &str = "sbxtest";

struct Unpriv {
    uid: u32,
    gid: u32,
    bin: PathBuf,
}

/// The test user and the binary it runs; None (with the reason printed) when
/// that cannot be arranged.
fn unpriv() -> Option<&'static Unpriv> {
    static U: OnceLock<Result<Unpriv, String>> = OnceLock::new();
    match U.get_or_init(setup) {
        Ok(u) => Some(u),
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            None
        }
    }
}

fn id_of(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, USER]).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|_| out.status.success())
}

fn setup() -> Result<Unpriv, String> {
    if !is_root() {
        return Err("unprivileged tests need root (to create and become user sbxtest)".into());
    }
    if id_of("-u").is_none() {
        if !have("useradd") && !std::path::Path::new("/usr/sbin/useradd").exists() {
            return Err("no useradd to create user sbxtest".into());
        }
        let st = Command::new("/usr/sbin/useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .status()
            .map_err(|e| format!("useradd: {e}"))?;
        // A concurrent test binary may have created it meanwhile.
        if !st.success() && id_of("-u").is_none() {
            return Err(format!("useradd {USER} failed: {st}"));
        }
    }
    let (uid, gid) = (id_of("-u").ok_or("no uid")?, id_of("-g").ok_or("no gid")?);
    // A copy of the binary the user can execute, in a 0755 dir.
    let bin = copy_for_others("unpriv-bin")?;
    // Every directory above the C programs must be searchable.
    let mut cur = Some(c_dir());
    while let Some(d) = cur {
        let mode = std::fs::metadata(d).map(|m| m.mode()).unwrap_or(0);
        if mode & 0o001 == 0 {
            return Err(format!(
                "{} is not searchable by others (mode {mode:o})",
                d.display()
            ));
        }
        cur = d.parent();
    }
    Ok(Unpriv { uid, gid, bin })
}

/// A Run as the test user with its binary, in a directory it owns.
fn run_as(u: &Unpriv, argv: &[&str], cwd: &Tree) -> Run {
    Run::new(argv)
        .user(u.uid, u.gid)
        .bin(&u.bin)
        .cwd(cwd.path())
}

#[test]
fn unprivileged_identity_and_view() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    // The user's name inside is the sandbox's choice; it must resolve.
    let script = "id -u; id -g; id -un | grep -qv '^[0-9]*$' && echo named; cat /proc/self/uid_map | wc -l; \
                  test -e /etc/shadow && echo shadow; touch /tmp/ok && echo tmp-ok; pwd";
    let out = run_as(u, &["/bin/sh", "-c", &(guard() + script)], &t).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let want = format!("{}\n{}\nnamed\n1\ntmp-ok\n{}\n", u.uid, u.gid, t.s());
    assert_eq!(out.stdout, want, "{}", out.dump());
}

/// As on the host, a user who is not root cannot create or delete entries
/// in /usr and /etc, nor change root's files there (the layer over them
/// lets writes vanish; it must not change who may write).
#[test]
fn unprivileged_cannot_write_system_dirs() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    let script = "touch /usr/x && echo usr-create; mkdir /etc/d && echo etc-mkdir; rm -f /etc/hosts && echo etc-rm; \
                  echo x >> /etc/passwd && echo passwd-append; chmod 777 /etc/group && echo group-chmod; \
                  touch /usr/bin/x && echo usrbin-create; true";
    let native = run_as(u, &["/bin/sh", "-c", script], &t).native();
    assert_eq!(
        native.stdout,
        "",
        "natively {USER} could write system dirs?\n{}",
        native.dump()
    );
    // Read-only binds by default; overlays (the layer) with the flag.
    for flags in [&[][..], &["--writable-system"]] {
        let out = run_as(u, &["/bin/sh", "-c", &(guard() + script)], &t)
            .sup(flags)
            .supervised();
        assert_eq!(out.code, Some(0), "{}", out.dump());
        assert_eq!(
            out.stdout,
            "",
            "as {USER} in the sandbox ({flags:?}) these writes succeeded:\n{}",
            out.dump()
        );
    }
}

#[test]
fn unprivileged_fsprobe_matches_native() {
    let Some(u) = unpriv() else { return };
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let p = probes::fsprobe(Some((u.uid, u.gid)), &u.bin);
    probes::judge_fsprobe(&p, false);
}

#[test]
fn unprivileged_denied_calls() {
    let Some(u) = unpriv() else { return };
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let bad = probes::check_denied(Some((u.uid, u.gid)), &u.bin);
    assert!(
        bad.is_empty(),
        "denied calls as {USER}:\n{}",
        bad.join("\n")
    );
}

#[test]
fn unprivileged_exit_codes_and_signals() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    for (script, code) in [
        ("exit 0", 0),
        ("exit 42", 42),
        ("kill -9 $$", 137),
        ("kill -TERM $$", 143),
    ] {
        let out = run_as(u, &["/bin/sh", "-c", script], &t).supervised();
        assert_eq!(out.code, Some(code), "{script}:\n{}", out.dump());
    }
    let out = run_as(u, &["/nonexistent/cmd"], &t).supervised();
    assert_eq!(out.code, Some(127), "{}", out.dump());
}

#[test]
fn unprivileged_rw_files_belong_to_the_user() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    let w = t.join("w");
    std::fs::create_dir(&w).unwrap();
    std::os::unix::fs::chown(&w, Some(u.uid), Some(u.gid)).unwrap();
    let out = run_as(
        u,
        &[
            "/bin/sh",
            "-c",
            "echo data > w/f && mkdir w/d && cd w && stat -c '%u %g %n' d f",
        ],
        &t,
    )
    .rw(t.path())
    .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout,
        format!("{0} {1} d\n{0} {1} f\n", u.uid, u.gid),
        "{}",
        out.dump()
    );
    let m = std::fs::metadata(w.join("f")).unwrap();
    assert_eq!(
        (m.uid(), m.gid()),
        (u.uid, u.gid),
        "host owner of a file the guest wrote"
    );
}

#[test]
fn unprivileged_cannot_read_root_only_files() {
    let Some(u) = unpriv() else { return };
    let (t, data) = (Tree::new(), Tree::new());
    t.give_to(u.uid, u.gid);
    std::fs::set_permissions(data.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = data.file("rootonly", "root secret\n");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run_as(
        u,
        &["/bin/sh", "-c", "cat /data/rootonly; ls -a /hostroot; true"],
        &t,
    )
    .sup(&[
        "--ro",
        &format!("{}:/data", data.s()),
        "--ro",
        "/root:/hostroot",
    ])
    .supervised();
    assert!(
        !out.stdout.contains("root secret"),
        "a root-only file was read:\n{}",
        out.dump()
    );
    assert!(
        !out.stdout.contains(".bashrc") && !out.stdout.contains(".cargo"),
        "/root was listed:\n{}",
        out.dump()
    );
    assert!(
        out.code == Some(0) || out.code == Some(125),
        "{}",
        out.dump()
    );
}

#[test]
fn unprivileged_limits_fall_back_and_say_so() {
    let Some(u) = unpriv() else { return };
    // The guest allocates past --memory: it runs capped by a safety cgroup.
    let Some(cg) = common::cgroups::SafetyCgroup::new("unpriv", 2 << 30, 500) else {
        eprintln!("SKIPPED: no cgroup to contain the test");
        return;
    };
    cg.admit_user(u.uid, u.gid);
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    let script = format!(
        "{}exec /usr/bin/python3 -c 'b = bytearray(300 * 2**20)\nprint(\"allocated\")'",
        guard()
    );
    let run = run_as(u, &["/bin/sh", "-c", &script], &t)
        .sup(&["--memory", "64m", "--pids", "50", "--cpus", "1"]);
    let out = cg.wrap(run).supervised();
    assert_ne!(out.code, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("MemoryError"), "{}", out.dump());
    let warning = out
        .stderr
        .lines()
        .find(|l| l.starts_with("supervisor: warning:"));
    let warning = warning.unwrap_or_else(|| panic!("no warning\n{}", out.dump()));
    assert!(
        warning.contains("--memory") && warning.contains("cannot enforce --cpus"),
        "{warning}"
    );
    assert!(
        cg.wait_empty(std::time::Duration::from_secs(10)),
        "left behind"
    );
}

/// The guest's limits as an unprivileged invoker sets them: the synthetic
/// /proc files (a memfd the worker makes with the user's ids) and the
/// read-only /sys (the layer belongs to the user).
#[test]
fn unprivileged_guest_limits() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.give_to(u.uid, u.gid);
    let script = "grep MemTotal /proc/./meminfo; nproc; grep -c ^processor /proc/cpuinfo; \
                  cat /sys/devices/system/cpu/online; echo 1 > /sys/devices/system/cpu/online || echo ro; \
                  mkdir /sys/x 2>/dev/null || echo no-mkdir";
    let out = run_as(u, &["/bin/sh", "-c", script], &t)
        .sup(&["--memory", "1g", "--cpus", "1"])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout,
        "MemTotal:        1048576 kB\n1\n1\n0\nro\nno-mkdir\n",
        "{}",
        out.dump()
    );
}

/// `--rootfs` and `--mask` as an unprivileged invoker: the user's own
/// tree (a static program, no shell) under /, writes to it landing in the
/// layer (copy-up of the user's files), the sandbox's /etc, masks over the
/// tree's files and directories and over the host view.
#[test]
fn unprivileged_rootfs_and_mask() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    if let Err(e) = tiny_rootfs(&t.join("root")) {
        skip!("cannot build a rootfs: {e}");
    }
    std::fs::write(t.join("root/data/g"), "g\n").unwrap();
    t.file("root/hidden/x", "x\n");
    t.give_to(u.uid, u.gid);
    let root = t.join("root").display().to_string();
    let ops = [
        "/bin/rootprobe",
        "ls",
        "/",
        ",",
        "write",
        "/data/f",
        "changed\n",
        ",",
        "cat",
        "/data/f",
        ",",
        "write",
        "/tmp/t",
        "t\n",
        ",",
        "cat",
        "/etc/hostname",
        ",",
        "write",
        "/etc/hostname",
        "x",
        ",",
        "cat",
        "/data/g",
        ",",
        "ls",
        "/hidden",
    ];
    let out = run_as(u, &ops, &t)
        .sup(&["--rootfs", &root, "--mask", "/data/g", "--mask", "/hidden"])
        .supervised();
    assert_eq!(
        out.stdout,
        "bin data dev etc hidden proc sys tmp\nok\nchanged\nok\nsandbox\nERR Read-only file system\n\n",
        "{}",
        out.dump()
    );
    assert_eq!(
        std::fs::read_to_string(t.join("root/data/f")).unwrap(),
        "tree\n"
    );
    // A mask in the host view, over a root-owned file.
    let out = run_as(u, &["/bin/sh", "-c", "wc -c < /etc/group"], &t)
        .sup(&["--mask", "/etc/group"])
        .supervised();
    assert_eq!(out.stdout, "0\n", "{}", out.dump());
}

/// Mount points inside host directories the user does not own
/// (`/usr/local/...`, `/etc/...`): the sandbox makes their parents in its
/// layer, so `--ro`, `--rw` and `--tmpfs` work there as they do for root,
/// and the host's content around them stays visible.
#[test]
fn unprivileged_mount_points_in_system_dirs() {
    let Some(u) = unpriv() else { return };
    let t = Tree::new();
    t.file("data/f", "hi\n");
    t.give_to(u.uid, u.gid);
    let data = t.join("data").display().to_string();
    let script =
        "cat /usr/local/data/f /etc/deep/er/data/f; touch /usr/local/scratch/x && echo tmpfs-ok; \
                  test -d /usr/local/bin && echo host-kept; test -e /etc/passwd && echo etc-kept";
    let out = run_as(u, &["/bin/sh", "-c", &(guard() + script)], &t)
        .sup(&[
            "--ro".to_string(),
            format!("{data}:/usr/local/data"),
            "--ro".to_string(),
            format!("{data}:/etc/deep/er/data"),
            "--tmpfs".to_string(),
            "/usr/local/scratch".to_string(),
        ])
        .supervised();
    assert_eq!(
        out.stdout,
        "hi\nhi\ntmpfs-ok\nhost-kept\netc-kept\n",
        "{}",
        out.dump()
    );
}
