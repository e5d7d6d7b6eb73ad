//! What the guest sees: the default view (host dirs hidden, /etc without
//! secrets, /dev, /proc, /sys with only devices/system/cpu, merged-usr
//! symlinks), the read-only host cwd and --workdir, --ro/--rw/--tmpfs
//! mounts, and the --disk quota of the writable layer.

use crate::common;
use common::*;

#[test]
fn default_view() {
    let script = "ls /; echo ==; ls /etc | grep -E '^(shadow|gshadow|sudoers|sudoers.d|passwd|group)$'; \
                  echo ==; for p in /etc/shadow /etc/gshadow /etc/sudoers /root /home /var /run /srv /mnt /opt; do \
                  test -e $p && echo present $p; done; echo ==; ls /dev; echo ==; ls -A /sys /sys/devices /sys/devices/system | tr '\\n' ' '; echo; \
                  readlink /bin /lib /lib64 /sbin; echo ==; pwd; touch /tmp/x && echo tmp-writable; \
                  touch /usr/x 2>/dev/null || echo usr-read-only; mkdir /app && echo root-writable; echo ==; ls /proc/self/ >/dev/null && echo proc-ok";
    let t = Tree::new();
    let out = Run::sh(&(guard() + script), &[]).cwd(t.path()).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let parts: Vec<&str> = out.stdout.split("==\n").collect();
    assert_eq!(parts.len(), 7, "{}", out.dump());
    let allowed = [
        "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp", "usr",
    ];
    for name in parts[0].lines() {
        assert!(
            allowed.contains(&name),
            "/{name} is visible in the sandbox; / is:\n{}",
            parts[0]
        );
    }
    for name in ["usr", "etc", "tmp", "proc", "dev"] {
        assert!(
            parts[0].lines().any(|l| l == name),
            "/{name} missing; / is:\n{}",
            parts[0]
        );
    }
    assert_eq!(
        parts[1], "group\npasswd\n",
        "secrets in /etc (or passwd/group missing)"
    );
    assert_eq!(parts[2], "", "these must be absent:\n{}", parts[2]);
    for dev in [
        "null", "zero", "full", "random", "urandom", "tty", "pts", "shm", "fd",
    ] {
        assert!(
            parts[3].lines().any(|l| l == dev),
            "/dev/{dev} missing; /dev is:\n{}",
            parts[3]
        );
    }
    let cwd = t.path().display().to_string();
    assert_eq!(
        parts[4].lines().next(),
        Some("/sys: devices  /sys/devices: system  /sys/devices/system: cpu "),
        "/sys must hold devices/system/cpu only"
    );
    assert_eq!(
        parts[5],
        format!("{cwd}\ntmp-writable\nusr-read-only\nroot-writable\n"),
        "cwd, /tmp, /usr and / writes:\n{}",
        out.dump()
    );
    assert_eq!(parts[6], "proc-ok\n", "{}", out.dump());
    // /bin, /lib, /lib64, /sbin look as on the host (symlinks on merged-usr).
    let host: Vec<String> = ["/bin", "/lib", "/lib64", "/sbin"]
        .iter()
        .filter_map(|p| std::fs::read_link(p).ok().map(|t| t.display().to_string()))
        .collect();
    let guest: Vec<&str> = parts[4].lines().skip(1).collect();
    assert_eq!(guest, host, "readlink /bin /lib /lib64 /sbin");
}

/// /usr is the host's, read-only, by default; `--writable-system` (or a
/// mount below /usr) puts it under the layer, where writes succeed and
/// vanish with the run. A program's reads see the same files either way.
#[test]
fn system_dirs_are_read_only_unless_writable_system() {
    if !is_root() {
        return; // /usr is root's: only root may write there, with the flag.
    }
    let name = format!("sv-writable-{}", std::process::id());
    let script = format!(
        "{}touch /usr/{name} 2>&1 | sed 's/.*: //'; mkdir -p /usr/local/lib/{name} && echo pip-ok; \
         ls /usr/lib/os-release >/dev/null && echo reads-ok",
        guard()
    );
    let plain = Run::sh(&script, &[]).supervised();
    assert_eq!(
        plain.stdout,
        "Read-only file system\nreads-ok\n",
        "{}",
        plain.dump()
    );
    for flags in [
        &["--writable-system"][..],
        &["--tmpfs", "/usr/local/scratch"],
    ] {
        let out = Run::sh(&script, &[]).sup(flags).supervised();
        assert_eq!(
            out.stdout,
            "pip-ok\nreads-ok\n",
            "{flags:?}: {}",
            out.dump()
        );
    }
    let left: Vec<_> = ["/usr", "/usr/local/lib"]
        .iter()
        .map(|d| std::path::Path::new(d).join(&name))
        .filter(|p| p.exists())
        .collect();
    assert!(left.is_empty(), "guest writes reached the host: {left:?}");
}

#[test]
fn cwd_is_read_only_and_workdir_moves_start() {
    let t = Tree::new();
    t.file("input.txt", "data\n");
    let out = Run::sh("cat input.txt; pwd; touch new.txt", &[])
        .cwd(t.path())
        .supervised();
    assert_eq!(
        out.code,
        Some(1),
        "writing into the read-only cwd must fail:\n{}",
        out.dump()
    );
    assert!(
        out.stdout.starts_with(&format!("data\n{}\n", t.s())),
        "{}",
        out.dump()
    );
    assert!(!t.join("new.txt").exists(), "write reached the host cwd");
    let out = Run::new(&["pwd"])
        .cwd(t.path())
        .sup(&["--workdir", "/usr/share"])
        .supervised();
    assert_eq!(out.stdout, "/usr/share\n", "{}", out.dump());
    // A cwd inside a --rw mount is writable.
    let out = Run::sh("echo hi > made.txt", &[])
        .cwd(t.path())
        .rw(t.path())
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        std::fs::read_to_string(t.join("made.txt")).ok().as_deref(),
        Some("hi\n")
    );
}

#[test]
fn mounts_ro_rw_tmpfs() {
    let (ro, rw) = (Tree::new(), Tree::new());
    ro.file("in.txt", "input\n");
    let script = "cat /data/in.txt; echo x > /data/new 2>/dev/null || echo ro-denied; \
                  echo result > /out/res.txt; echo y > /scratch/s && cat /scratch/s; \
                  df -k /scratch | tail -1 | awk '{print $2}'";
    let out = Run::sh(script, &[])
        .sup(&[
            "--ro",
            &format!("{}:/data", ro.s()),
            "--rw",
            &format!("{}:/out", rw.s()),
            "--tmpfs",
            "/scratch:8m",
        ])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "input\nro-denied\ny\n8192\n", "{}", out.dump());
    assert_eq!(
        listing(ro.path()),
        vec!["in.txt"],
        "the --ro mount was written to"
    );
    assert_eq!(
        std::fs::read_to_string(rw.join("res.txt")).ok().as_deref(),
        Some("result\n")
    );
}

/// Writes beyond `--disk` fail with ENOSPC, inside the sandbox only.
#[test]
fn disk_quota_applies_to_the_layer() {
    let script = "dd if=/dev/zero of=/tmp/big bs=1M count=32 2>&1 | grep -c 'No space left'; \
                  rm -f /tmp/big; dd if=/dev/zero of=/tmp/small bs=1M count=4 2>/dev/null && echo small-ok";
    let out = Run::sh(script, &[]).sup(&["--disk", "16m"]).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "1\nsmall-ok\n", "{}", out.dump());
}

/// With the host's HOME (/root when root) passed through, /root may exist
/// for the guest, but empty: never the host's.
#[test]
fn home_is_not_the_hosts() {
    let out = Run::sh("ls -A /root 2>/dev/null | wc -l; echo $HOME", &[])
        .env("HOME", "/root")
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "0\n/root\n", "{}", out.dump());
}
