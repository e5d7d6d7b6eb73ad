//! `--rw` mounts: what the guest writes there is on the host once the
//! supervisor has exited, and nothing leads out of them: hard links and
//! renames across the mount's boundary, and symlinks pointing out,
//! resolve in the view (compared with the kernel's own answer natively
//! where that means something).

use crate::common;
use common::*;
use std::path::Path;

const PY: &str = "/usr/bin/python3";

/// What the guest wrote to a `--rw` mount is there when the supervisor
/// has exited, and flushing it (syncfs, under the supervisor's own
/// seccomp filter) raises no warning.
#[test]
fn rw_writes_are_there_after_the_run() {
    let t = Tree::new();
    let script = "mkdir -p /out/d/e && head -c 1048576 /dev/urandom > /out/d/e/big && \
                  echo tail >> /out/d/e/big && ln -s big /out/d/e/link && echo small > /out/s";
    let out = Run::sh(script, &[])
        .sup(&["--rw", &format!("{}:/out", t.s())])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let big = std::fs::metadata(t.join("d/e/big")).unwrap();
    assert_eq!(big.len(), 1048576 + 5);
    assert_eq!(std::fs::read_to_string(t.join("s")).unwrap(), "small\n");
    assert_eq!(
        std::fs::read_link(t.join("d/e/link")).unwrap(),
        Path::new("big")
    );
}

/// Links and renames between two mounts fail with EXDEV, even when both
/// are the same host file system: natively (two binds in a private mount
/// namespace) and in the sandbox (`--rw`, `--rw`, `--ro`, the layer).
#[test]
fn rw_links_and_renames_stay_inside() {
    if !have(PY) {
        skip!("no {PY}");
    }
    let (a, b, c) = (Tree::new(), Tree::new(), Tree::new());
    a.file("f", "f\n");
    c.file("r", "r\n");
    a.dir("dir");
    // The three directories come as arguments, never spliced into the
    // source: a temp dir's random name may itself contain "B/".
    let script = "import os, sys\n\
        A, B, C = sys.argv[1:4]\n\
        for src, dst in [(A+'/f', B+'/g'), (A+'/f', C+'/g'), (C+'/r', A+'/r'), (A+'/dir', B+'/dir')]:\n\
        \x20   for fn in (os.link, os.rename):\n\
        \x20       try:\n\
        \x20           fn(src, dst); print(fn.__name__, 'ok')\n\
        \x20       except OSError as e:\n\
        \x20           print(fn.__name__, e.strerror)\n";
    let out = Run::new(&[PY, "-c", script, "/out", "/out2", "/data"])
        .sup(&[
            "--rw",
            &format!("{}:/out", a.s()),
            "--rw",
            &format!("{}:/out2", b.s()),
            "--ro",
            &format!("{}:/data", c.s()),
        ])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    // EXDEV, but a link into a read-only mount meets EROFS first.
    let want = "link Invalid cross-device link\nrename Invalid cross-device link\n\
                link Read-only file system\nrename Invalid cross-device link\n\
                link Invalid cross-device link\nrename Invalid cross-device link\n\
                link Invalid cross-device link\nrename Invalid cross-device link\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
    // Linking into the layer's /tmp fails the same way.
    let out = Run::new(&[
        PY,
        "-c",
        "import os\ntry: os.link('/out/f', '/tmp/f')\nexcept OSError as e: print(e.strerror)",
    ])
    .sup(&["--rw", &format!("{}:/out", a.s())])
    .supervised();
    assert_eq!(out.stdout, "Invalid cross-device link\n", "{}", out.dump());
    assert_eq!(listing(a.path()), ["dir", "f"]);
    assert_eq!(listing(b.path()), Vec::<String>::new());

    // Natively: the same binds, same file system, same answers.
    if !is_root() || !have("unshare") {
        eprintln!("native comparison skipped (needs root and unshare)");
        return;
    }
    let m = Tree::new();
    let (ma, mb, mc) = (m.dir("a"), m.dir("b"), m.dir("c"));
    let wrapper = "mount --bind \"$1\" \"$2\" && mount --bind \"$3\" \"$4\" && \
                   mount --bind -o ro \"$5\" \"$6\" && exec \"$7\" -c \"$8\" \"$2\" \"$4\" \"$6\"";
    let out = Run::new(&[
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        wrapper,
        "sh",
        &a.s(),
        &ma.display().to_string(),
        &b.s(),
        &mb.display().to_string(),
        &c.s(),
        &mc.display().to_string(),
        PY,
        script,
    ])
    .native();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, want, "natively:\n{}", out.dump());
}

/// Symlinks in a `--rw` tree that point out of it resolve in the view:
/// they never reach the host's files, whether absolute or relative,
/// followed for reading or for writing.
#[test]
fn rw_symlinks_resolve_in_the_view() {
    let (t, host) = (Tree::new(), Tree::new());
    host.file("secret", "host secret\n");
    let out_dir = t.dir("out");
    let secret = host.join("secret").display().to_string();
    std::os::unix::fs::symlink(&secret, out_dir.join("abs")).unwrap();
    // From <t>/out, enough `..` to reach the host's /, then the secret.
    let rel = format!("../../../../../../../..{secret}");
    std::os::unix::fs::symlink(&rel, out_dir.join("rel")).unwrap();
    std::os::unix::fs::symlink("../../../../../../..", out_dir.join("up")).unwrap();
    std::os::unix::fs::symlink(host.join("new").display().to_string(), out_dir.join("w")).unwrap();
    let script = "cat /out/abs 2>&1; cat /out/rel 2>&1; ls /out/up/ | tr '\\n' ' '; echo; \
                  echo pwned > /out/w 2>&1 || echo write-failed; \
                  ln -s /etc/passwd /out/pw && head -c 5 /out/pw; echo; cd /out/up && pwd -P";
    let out = Run::sh(&(guard() + script), &[])
        .sup(&["--rw", &format!("{}:/out", out_dir.display())])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(!out.stdout.contains("host secret"), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", out.dump());
    assert!(
        lines[0].ends_with("No such file or directory"),
        "{}",
        out.dump()
    );
    assert!(
        lines[1].ends_with("No such file or directory"),
        "{}",
        out.dump()
    );
    assert!(
        lines[2].contains("out") && lines[2].contains("proc"),
        "{}",
        out.dump()
    );
    assert!(lines[3].ends_with("write-failed"), "{}", out.dump());
    assert_eq!(lines[4], "root:");
    assert_eq!(lines[5], "/");
    assert_eq!(
        listing(host.path()),
        ["secret"],
        "the guest wrote to the host"
    );
    assert_eq!(
        std::fs::read_to_string(host.join("secret")).unwrap(),
        "host secret\n"
    );
}
