//! chmod, chown, utimes, truncate against the kernel.

use super::*;

const SOME: &[&str] = &[
    "file", "link", "dir", "dlink/", "dangling", "missing", "file/", "loop1", "dir/up",
];

#[test]
fn chmod_family() {
    for &rel in SOME {
        for mode in [0o600u64, 0o4755, 0o177777] {
            twin(&std_tree, &format!("chmod {rel} {mode:o}"), &|s| {
                (libc::SYS_chmod, [s.path(rel), mode, 0, 0, 0, 0], vec![])
            });
        }
    }
    let flags = [0, libc::AT_SYMLINK_NOFOLLOW, libc::AT_EMPTY_PATH, 0x1];
    for &f in &flags {
        for &d in &[D::Cwd, D::Fd("dir"), D::Bad] {
            for &p in &[
                P::Rel("file"),
                P::Rel("link"),
                P::Rel("up"),
                P::Rel(""),
                P::Bad,
            ] {
                twin(&std_tree, &format!("fchmodat2 {d:?} {p:?} {f:#x}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_fchmodat2, [d, p, 0o700, f as u64, 0, 0], vec![])
                });
            }
        }
        twin(&std_tree, &format!("fchmodat {f:#x}"), &|s| {
            let (d, p) = (da(s, D::Cwd), pa(s, P::Rel("link")));
            (libc::SYS_fchmodat, [d, p, 0o700, f as u64, 0, 0], vec![])
        });
    }
}

#[test]
fn chown_family() {
    let me = nix::unistd::getuid().as_raw() as u64;
    let gme = nix::unistd::getgid().as_raw() as u64;
    let ids = [
        (me, gme),
        (u32::MAX as u64, u32::MAX as u64),
        (me, u32::MAX as u64),
    ];
    for &rel in &["file", "link", "dangling", "missing"] {
        for &(u, g) in &ids {
            for nr in [libc::SYS_chown, libc::SYS_lchown] {
                twin(&std_tree, &format!("{nr} {rel} {u} {g}"), &|s| {
                    (nr, [s.path(rel), u, g, 0, 0, 0], vec![])
                });
            }
        }
    }
    for f in [0, libc::AT_SYMLINK_NOFOLLOW, libc::AT_EMPTY_PATH, 0x1] {
        for &p in &[P::Rel("link"), P::Rel(""), P::Bad] {
            twin(&std_tree, &format!("fchownat {p:?} {f:#x}"), &|s| {
                let (d, p) = (da(s, D::Fd("dir")), pa(s, p));
                (libc::SYS_fchownat, [d, p, me, gme, f as u64, 0], vec![])
            });
        }
    }
}

#[test]
fn chown_to_unmapped_ids() {
    // The guest has one id; others have no mapping (EINVAL, after lookup).
    let t = tree();
    let mut f = Fake::new(t.path());
    let other = nix::unistd::getuid().as_raw().wrapping_add(1) as u64;
    let p = f.path("file");
    assert_eq!(
        f.call(libc::SYS_chown, [p, other, u32::MAX as u64, 0, 0, 0]),
        Outcome::Err(Errno::EINVAL)
    );
    let p = f.path("missing");
    assert_eq!(
        f.call(libc::SYS_chown, [p, other, u32::MAX as u64, 0, 0, 0]),
        Outcome::Err(Errno::ENOENT)
    );
}

fn pairs(s: &mut dyn Side, a: (i64, i64), b: (i64, i64)) -> u64 {
    let mut v = Vec::new();
    for x in [a.0, a.1, b.0, b.1] {
        v.extend_from_slice(&x.to_ne_bytes());
    }
    s.bytes(&v)
}

/// The atime and mtime of `root/rel` (without following).
fn times(root: &Path, rel: &str) -> (i64, i64, i64, i64) {
    let m = fs::symlink_metadata(root.join(rel)).unwrap();
    (m.atime(), m.atime_nsec(), m.mtime(), m.mtime_nsec())
}

#[test]
fn utimes_family() {
    const NOW: i64 = (1 << 30) - 1;
    const OMIT: i64 = (1 << 30) - 2;
    let specs: Vec<((i64, i64), (i64, i64))> = vec![
        ((1000, 5), (2000, 6)),
        ((1000, OMIT), (2000, 0)),
        ((1000, OMIT), (2000, OMIT)),
        ((1000, NOW), (2000, NOW)),
        ((1, -1), (2, 0)),
        ((1, 1_000_000_000), (2, 0)),
    ];
    for &rel in &["file", "link", "dangling", "missing", "file/"] {
        for &(a, b) in &specs {
            for f in [0, libc::AT_SYMLINK_NOFOLLOW, 0x1] {
                let t = tempfile::tempdir().unwrap();
                let (n, g) = (t.path().join("n"), t.path().join("g"));
                for r in [&n, &g] {
                    fs::create_dir(r).unwrap();
                    std_tree(r);
                }
                let mut ns = Native::new(&n);
                let mut fs_ = Fake::new(&g);
                let run = |s: &mut dyn Side| {
                    let (d, p, tp) = (da(s, D::Cwd), s.path(rel), pairs(s, a, b));
                    s.call(libc::SYS_utimensat, [d, p, tp, f as u64, 0, 0])
                };
                let (rn, rg) = (run(&mut ns), run(&mut fs_));
                assert_eq!(rn, rg, "utimensat {rel} {a:?} {b:?} {f:#x}");
                if a.1 != NOW && b.1 != NOW && rn == Outcome::Val(0) && rel != "missing" {
                    let key = if f & libc::AT_SYMLINK_NOFOLLOW != 0 {
                        rel
                    } else {
                        "file"
                    };
                    let key = key.trim_end_matches('/');
                    let (tn, tg) = (times(&n, key), times(&g, key));
                    if a.1 != OMIT {
                        assert_eq!((tn.0, tn.1), (tg.0, tg.1), "utimensat {rel} atime");
                    }
                    if b.1 != OMIT {
                        assert_eq!((tn.2, tn.3), (tg.2, tg.3), "utimensat {rel} mtime");
                    }
                }
            }
        }
    }
    // NULL times (now), utime, utimes, futimesat, and the fd form.
    for &rel in &["file", "link", "missing"] {
        twin(&std_tree, &format!("utimensat NULL {rel}"), &|s| {
            let (d, p) = (da(s, D::Cwd), s.path(rel));
            (libc::SYS_utimensat, [d, p, 0, 0, 0, 0], vec![])
        });
        twin(&std_tree, &format!("utime {rel}"), &|s| {
            let b = s.bytes(&[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
            (libc::SYS_utime, [s.path(rel), b, 0, 0, 0, 0], vec![])
        });
        for usec in [0, 999_999, 1_000_000, -1] {
            twin(&std_tree, &format!("utimes {rel} {usec}"), &|s| {
                let b = pairs(s, (5, usec), (6, 0));
                (libc::SYS_utimes, [s.path(rel), b, 0, 0, 0, 0], vec![])
            });
            twin(&std_tree, &format!("futimesat {rel} {usec}"), &|s| {
                let (d, b) = (da(s, D::Fd("dir")), pairs(s, (5, usec), (6, 0)));
                (libc::SYS_futimesat, [d, s.s("../file"), b, 0, 0, 0], vec![])
            });
        }
    }
    for (d, f) in [
        (D::Fd("file"), 0),
        (D::Fd("file"), libc::AT_SYMLINK_NOFOLLOW),
        (D::Bad, 0),
        (D::AtCwd, 0),
    ] {
        twin(&std_tree, &format!("utimensat fd {d:?} {f:#x}"), &|s| {
            let (d, b) = (da(s, d), pairs(s, (5, 0), (6, 0)));
            (libc::SYS_utimensat, [d, 0, b, f as u64, 0, 0], vec![])
        });
    }
    twin(&std_tree, "utimensat bad times", &|s| {
        let (d, p) = (da(s, D::Cwd), s.path("file"));
        (libc::SYS_utimensat, [d, p, 1, 0, 0, 0], vec![])
    });
}

#[test]
fn truncate() {
    for &rel in SOME.iter().chain(&["empty"]) {
        for len in [0i64, 3, 100, -1] {
            twin(&std_tree, &format!("truncate {rel} {len}"), &|s| {
                (
                    libc::SYS_truncate,
                    [s.path(rel), len as u64, 0, 0, 0, 0],
                    vec![],
                )
            });
        }
    }
    twin(&std_tree, "truncate bad", &|_| {
        (libc::SYS_truncate, [1, 0, 0, 0, 0, 0], vec![])
    });
    twin(&std_tree, "truncate fifo", &|s| {
        let p = s.path("fifo");
        let c = CString::new(s.root().join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        nix::unistd::mkfifo(
            c.as_c_str(),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        (libc::SYS_truncate, [p, 0, 0, 0, 0, 0], vec![])
    });
}

#[test]
fn inotify_add_watch() {
    let t = tree();
    let masks = [
        libc::IN_MODIFY,
        libc::IN_MODIFY | libc::IN_DONT_FOLLOW,
        libc::IN_MODIFY | libc::IN_ONLYDIR,
        0,
        0x0800_0000,
        libc::IN_MASK_ADD | 0x1000_0000 | libc::IN_MODIFY,
    ];
    for &rel in SOME {
        for &m in &masks {
            let case = |s: &mut dyn Side| {
                // A fresh inotify instance on each side, as guest fd `ino`.
                // SAFETY (test only): creates a descriptor we then own.
                let raw = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
                let ino = s.adopt(unsafe { OwnedFd::from_raw_fd(raw) });
                (
                    libc::SYS_inotify_add_watch,
                    [ino as u64, s.path(rel), m as u64, 0, 0, 0],
                    vec![],
                )
            };
            same(t.path(), &format!("inotify {rel} {m:#x}"), &case);
        }
    }
    // Not an inotify descriptor; a bad descriptor.
    for d in [D::Fd("file"), D::Bad] {
        same(t.path(), &format!("inotify on {d:?}"), &|s| {
            let (d, p) = (da(s, d), s.path("file"));
            (
                libc::SYS_inotify_add_watch,
                [d, p, libc::IN_MODIFY as u64, 0, 0, 0],
                vec![],
            )
        });
    }
}

#[test]
fn inotify_events_arrive() {
    // The watch lands in the guest's own instance and reports events.
    let t = tree();
    let mut f = Fake::new(t.path());
    // SAFETY (test only): a fresh descriptor we own.
    let ino =
        unsafe { OwnedFd::from_raw_fd(libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK)) };
    let mine = ino.try_clone().unwrap();
    let n = f.adopt(ino);
    let p = f.path("link");
    assert_eq!(
        f.call(
            libc::SYS_inotify_add_watch,
            [n as u64, p, libc::IN_MODIFY as u64, 0, 0, 0]
        ),
        Outcome::Val(1)
    );
    fs::write(t.path().join("file"), b"changed").unwrap();
    let mut buf = [0u8; 256];
    let got = nix::unistd::read(mine.as_raw_fd(), &mut buf).unwrap();
    assert!(got >= 16, "an inotify event");
    assert_eq!(i32::from_ne_bytes(buf[..4].try_into().unwrap()), 1);
}
