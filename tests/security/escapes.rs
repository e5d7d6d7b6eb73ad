//! Escapes stay inside: symlinks out of a `--rw` mount (to /, /root,
//! /etc/shadow, a host dir outside every mount), `..` past the root, dirfd
//! and /proc/<pid>/root tricks, an inherited host fd, hard links to files
//! outside `--rw`, and a guest writing everywhere it can. The host must be
//! untouched outside `--rw`, and nothing of it outside the view may be read.

use crate::common;
use common::*;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const PY: &str = "/usr/bin/python3";
const SECRET: &str = "TOPSECRET-sbx-7f3a";

/// Names allowed in the sandbox's `/`.
const ROOT_ALLOWED: &[&str] = &[
    "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp", "usr",
];

/// A host directory outside every mount, holding a secret file.
fn secret_dir() -> Tree {
    let t = Tree::new();
    t.file("secret.txt", SECRET);
    t
}

/// Identity and state of a host file: (dev, ino, mode, nlink, size, mtime).
fn ident(p: &Path) -> Option<(u64, u64, u32, u64, u64, i64)> {
    let m = std::fs::symlink_metadata(p).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.mode(),
        m.nlink(),
        m.size(),
        m.mtime_nsec() + m.mtime() * 1_000_000_000,
    ))
}

/// Assert that each "== label" section of `out` listed only allowed root names.
fn assert_root_listings(out: &str, labels: &[&str]) {
    let mut sections: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut cur = "";
    for l in out.lines() {
        if let Some(lab) = l.strip_prefix("== ") {
            cur = lab;
            sections.entry(cur).or_default();
        } else if !cur.is_empty() {
            sections.entry(cur).or_default().push(l);
        }
    }
    for lab in labels {
        let names = sections
            .get(lab)
            .unwrap_or_else(|| panic!("no section {lab} in:\n{out}"));
        if lab.starts_with("pid1-root") && names.is_empty() {
            // Init (pid 1) is not dumpable: /proc/1/root refuses the guest.
            continue;
        }
        assert!(
            names.contains(&"usr"),
            "{lab}: expected the sandbox root, got {names:?}\n{out}"
        );
        for n in names {
            assert!(
                ROOT_ALLOWED.contains(n),
                "{lab}: host /{n} visible (listing {names:?})\n{out}"
            );
        }
    }
}

#[test]
fn symlinks_out_of_rw_stay_in_view() {
    let (w, s) = (Tree::new(), secret_dir());
    let nonce = format!("sbx-created-{}", std::process::id());
    let links: &[(&str, String)] = &[
        ("toroot", "/".into()),
        ("toroothome", "/root".into()),
        ("toshadow", "/etc/shadow".into()),
        ("tosecret", format!("{}/secret.txt", s.s())),
        ("tosecretdir", s.s()),
        ("up", "../../../../../../../../../../..".into()),
        ("created", format!("/tmp/{nonce}")),
    ];
    for (name, target) in links {
        std::os::unix::fs::symlink(target, w.join(name)).unwrap();
    }
    let before = (
        ident(&s.join("secret.txt")),
        ident(Path::new("/etc/shadow")),
    );
    let script = guard() + "cd \"$1\"; echo '== toroot'; ls toroot/; echo '== up'; ls up/; echo '== rest'; \
        cat toshadow tosecret tosecretdir/secret.txt toroothome/.bashrc; ls tosecretdir/ toroothome/; \
        echo new > created; chmod 777 tosecret toshadow; truncate -s 0 tosecret toshadow; \
        touch tosecret toshadow; ln -L tosecret hl1; ln -L toshadow hl2; ln tosecret hl3; \
        chown 0:0 tosecret; rm -f tosecretdir/secret.txt; mkdir tosecretdir/new; true";
    let out = Run::sh(&script, &[&w.s()]).rw(w.path()).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        !out.stdout.contains(SECRET) && !out.stderr.contains(SECRET),
        "secret read:\n{}",
        out.dump()
    );
    assert_root_listings(&out.stdout, &["toroot", "up"]);
    let after = (
        ident(&s.join("secret.txt")),
        ident(Path::new("/etc/shadow")),
    );
    assert_eq!(before, after, "a host file outside the view changed");
    assert_eq!(
        listing(s.path()),
        vec!["secret.txt"],
        "the host secret dir changed"
    );
    assert!(
        !Path::new("/tmp").join(&nonce).exists(),
        "writing through a dangling symlink created a host file"
    );
    assert_no_alias(w.path(), &[s.join("secret.txt"), "/etc/shadow".into()]);
}

/// No file under `dir` may be the same inode as one of `outside`.
fn assert_no_alias(dir: &Path, outside: &[PathBuf]) {
    let ids: Vec<(u64, u64)> = outside
        .iter()
        .filter_map(|p| ident(p))
        .map(|i| (i.0, i.1))
        .collect();
    for ent in std::fs::read_dir(dir).unwrap() {
        let p = ent.unwrap().path();
        if let Some(i) = ident(&p) {
            assert!(
                !ids.contains(&(i.0, i.1)),
                "{} is a hard link to a host file outside --rw",
                p.display()
            );
        }
    }
}

#[test]
fn dotdot_and_proc_root_stay_in_view() {
    let script = "echo '== dotdot'; ls /../../..; echo '== cd-up'; cd / && cd ../.. && ls; \
        echo '== self-root-up'; ls /proc/self/root/..; echo '== pid1-root'; ls /proc/1/root/; \
        echo '== pid1-root-up'; ls /proc/1/root/../..; echo '== cwd-up'; ls /proc/self/cwd/../../../..; \
        echo '== rest'; cat /proc/1/root/etc/shadow /../etc/shadow /proc/self/root/../etc/shadow; \
        ls /proc/1/root/root /proc/self/root/home; true";
    let t = Tree::new();
    let out = Run::sh(script, &[]).cwd(t.path()).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_root_listings(
        &out.stdout,
        &[
            "dotdot",
            "cd-up",
            "self-root-up",
            "pid1-root",
            "pid1-root-up",
            "cwd-up",
        ],
    );
    let rest = out.stdout.split("== rest\n").nth(1).unwrap_or("");
    assert_eq!(
        rest,
        "",
        "reads that must fail printed something:\n{}",
        out.dump()
    );
}

/// dirfd tricks in Python: relative `..` from a dirfd, O_PATH fds, fchdir,
/// /proc/self/fd magic links, /proc/1/root as a dirfd.
#[test]
fn dirfd_tricks_stay_in_view() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let (w, s) = (Tree::new(), secret_dir());
    std::os::unix::fs::symlink("/", w.join("toroot")).unwrap();
    std::os::unix::fs::symlink(s.path(), w.join("tosecretdir")).unwrap();
    let code = r#"
import os, sys, errno
W, S = sys.argv[1], sys.argv[2]
def t(label, f):
    try:
        r = f()
        print(label, "OK", sorted(r) if isinstance(r, list) else r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
    except Exception as e:
        print(label, "EXC", type(e).__name__)
def opened(label, path, flags):
    try:
        return os.open(path, flags)
    except OSError as e:
        print(label, "cannot open", path, errno.errorcode[e.errno])
fd = os.open(W, os.O_RDONLY)
t("dotdot-from-dirfd", lambda: os.open("../../../../../../etc/shadow", os.O_RDONLY, dir_fd=fd))
t("dotdot-listdir", lambda: os.listdir(os.open("../../../../../..", os.O_RDONLY, dir_fd=fd)))
root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
t("root-fd-root", lambda: os.open("root", os.O_RDONLY, dir_fd=root))
t("root-fd-home", lambda: os.stat("home", dir_fd=root))
proot = opened("open-opath", "/proc/self/root", os.O_PATH)
t("proc-self-root", lambda: os.open("../../etc/shadow", os.O_RDONLY, dir_fd=proot))
t("proc-1-root", lambda: os.listdir(os.open("/proc/1/root/..", os.O_RDONLY)))
t("magic-fd", lambda: os.listdir(f"/proc/self/fd/{os.open('/', os.O_RDONLY)}/.."))
lnk = opened("open-opath", W + "/toroot", os.O_PATH | os.O_NOFOLLOW)
t("symlink-opath", lambda: os.open("root", os.O_RDONLY, dir_fd=lnk))
t("via-link-dirfd", lambda: os.open("secret.txt", os.O_RDONLY, dir_fd=os.open(W + "/tosecretdir", os.O_RDONLY)))
t("host-path", lambda: os.stat(S + "/secret.txt"))
t("host-parent", lambda: os.path.basename(S) in os.listdir(os.path.dirname(S)))
os.fchdir(fd)
os.chdir("../../../../../../..")
t("fchdir-up", lambda: os.listdir("."))
"#;
    let out = Run::new(&[PY, "-c", code, &w.s(), &s.s()])
        .rw(w.path())
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(!out.stdout.contains(SECRET), "{}", out.dump());
    let got: BTreeMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .collect();
    let root_list = |v: &str| {
        v.strip_prefix("OK [").map(|l| {
            l.trim_end_matches(']')
                .split(", ")
                .all(|n| ROOT_ALLOWED.contains(&n.trim_matches('\'')))
        })
    };
    let expect_fail = [
        "dotdot-from-dirfd",
        "root-fd-root",
        "root-fd-home",
        "proc-self-root",
        "symlink-opath",
        "via-link-dirfd",
        "host-path",
    ];
    for k in expect_fail {
        let v = got.get(k).copied().unwrap_or("missing");
        let errno = v.starts_with('E') && !v.starts_with("EXC");
        assert!(errno, "{k}: expected an errno, got {v}\n{}", out.dump());
    }
    assert!(
        !got.contains_key("open-opath"),
        "O_PATH opens failed:\n{}",
        out.stdout
    );
    // Init (pid 1) is not dumpable: its /proc entries refuse the guest.
    let v = got.get("proc-1-root").copied().unwrap_or("missing");
    assert!(
        v == "EACCES" || root_list(v) == Some(true),
        "proc-1-root: expected EACCES or the sandbox root, got {v}"
    );
    for k in ["dotdot-listdir", "magic-fd", "fchdir-up"] {
        let v = got.get(k).copied().unwrap_or("missing");
        assert_eq!(
            root_list(v),
            Some(true),
            "{k}: expected a listing of the sandbox root, got {v}"
        );
    }
    assert_eq!(
        got.get("host-parent").copied(),
        Some("OK False"),
        "{}",
        out.stdout
    );
}

/// A directory fd the invoker leaves open must not reach the guest.
#[test]
fn inherited_host_fd_is_not_passed() {
    let s = secret_dir();
    let dir = std::fs::File::open(s.path()).unwrap();
    let mut r = Run::sh(
        "ls /proc/self/fd/3/; cat /proc/self/fd/3/secret.txt; ls -l /proc/self/fd/",
        &[],
    );
    r.pass_fd = Some(std::os::unix::io::AsRawFd::as_raw_fd(&dir));
    let native = r.native();
    assert!(
        native.stdout.contains("secret.txt"),
        "fixture: fd 3 not passed natively:\n{}",
        native.dump()
    );
    let out = r.supervised();
    assert!(
        !out.stdout.contains("secret.txt") && !out.stdout.contains(SECRET),
        "the guest used an inherited host fd:\n{}",
        out.dump()
    );
}

#[test]
fn hard_links_to_outside_fail() {
    let (w, ro, s) = (Tree::new(), Tree::new(), secret_dir());
    ro.file("f", "readonly data\n");
    std::os::unix::fs::symlink("/etc/passwd", w.join("topasswd")).unwrap();
    std::os::unix::fs::symlink(s.join("secret.txt"), w.join("tosecret")).unwrap();
    let outside: Vec<PathBuf> = vec![
        ro.join("f"),
        "/etc/passwd".into(),
        "/usr/bin/true".into(),
        s.join("secret.txt"),
        "/etc/shadow".into(),
    ];
    let before: Vec<_> = outside.iter().map(|p| ident(p)).collect();
    let script = guard()
        + "cd \"$1\"; ln /ro/f h1; ln /etc/passwd h2; ln /usr/bin/true h3; ln -L topasswd h4; \
        ln -L tosecret h5; ln /tmp/../etc/passwd h6; true";
    let out = Run::sh(&script, &[&w.s()])
        .rw(w.path())
        .sup(&["--ro", &format!("{}:/ro", ro.s())])
        .supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let after: Vec<_> = outside.iter().map(|p| ident(p)).collect();
    assert_eq!(
        before, after,
        "a host file outside --rw changed (link count?)"
    );
    assert_no_alias(w.path(), &outside);
}

#[test]
fn writes_everywhere_leave_host_untouched() {
    let probe = format!("sbx-probe-{}", std::process::id());
    let cwd = Tree::new();
    cwd.file("keep", "keep\n");
    let files = [
        "/etc/passwd",
        "/etc/group",
        "/etc/hosts",
        "/etc/hostname",
        "/etc/shadow",
        "/usr/bin/true",
        "/usr/bin/env",
    ];
    let state = || {
        let mut m: BTreeMap<String, String> = BTreeMap::new();
        let mut dirs: Vec<PathBuf> = vec!["/".into(), "/usr".into(), "/etc".into()];
        for top in ["/usr", "/etc"] {
            for e in std::fs::read_dir(top).unwrap().flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    dirs.push(e.path());
                }
            }
        }
        for d in dirs {
            m.insert(
                d.display().to_string(),
                format!("{:?} {:?}", ident(&d), listing(&d)),
            );
        }
        for f in files {
            let sum = std::fs::read(f)
                .map(|d| d.iter().fold(0u64, |h, b| h.wrapping_mul(31) ^ *b as u64))
                .ok();
            m.insert(f.into(), format!("{:?} {sum:?}", ident(Path::new(f))));
        }
        m.insert(cwd.s(), format!("{:?}", snapshot(cwd.path())));
        m.insert(
            "hostname".into(),
            std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default(),
        );
        m
    };
    let before = state();
    let script = guard()
        + &format!(
        "P={probe}; for d in / /* /*/* /usr/*/* /etc/*/*; do [ -d \"$d\" ] || continue; \
         true > \"$d/$P\"; done 2>/dev/null; for d in / /* /usr/* /etc/*; do [ -d \"$d\" ] && mkdir \"$d/$P.d\"; done 2>/dev/null; \
         echo pwned > /etc/passwd; echo x >> /etc/hosts; rm -f /etc/hostname; mv /usr/bin/true /usr/bin/true.moved; \
         chmod 4777 /usr/bin/env; ln -s / /usr/$P.evil; touch -d 2000-01-01 /etc/group; \
         echo x > ./new; rm -f ./keep; echo x > /proc/sys/kernel/hostname; \
         ls /$P /usr/$P /etc/$P /tmp/$P 2>/dev/null | wc -l"
    );
    let out = Run::sh(&script, &[]).cwd(cwd.path()).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_ne!(
        out.stdout.trim(),
        "0",
        "the guest could write nowhere (overlays missing?):\n{}",
        out.dump()
    );
    let after = state();
    let changed: Vec<String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}\n  before: {v}\n  after:  {:?}", after.get(k)))
        .collect();
    assert!(
        changed.is_empty(),
        "host changed by the guest:\n{}",
        changed.join("\n")
    );
    let mut scan: Vec<PathBuf> = std::fs::read_dir("/")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    scan.push("/".into());
    for d in scan {
        let hit: Vec<String> = listing(&d)
            .into_iter()
            .filter(|n| n.starts_with(&probe))
            .collect();
        assert!(
            hit.is_empty(),
            "guest files on the host in {}: {hit:?}",
            d.display()
        );
    }
}
