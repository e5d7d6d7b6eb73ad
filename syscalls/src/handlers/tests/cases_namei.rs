//! unlink, rmdir, rename, link, symlink against the kernel. (mkdir and
//! mknod pass the filter: `tests/fs/make_names.rs` compares them under the
//! binary with native.)

use super::*;

/// Final components and paths with every odd ending.
const NAMES: &[&str] = &[
    "new",
    "new/",
    "new//",
    "file",
    "file/",
    "link",
    "link/",
    "dlink",
    "dlink/",
    "dangling",
    "dangling/",
    "dir",
    "dir/",
    "empty",
    "empty/",
    "dir/sub",
    "dir/inner",
    "dir/inner/",
    "missing/x",
    "file/x",
    ".",
    "..",
    "dir/.",
    "dir/..",
    "empty/.",
    "loop1",
    "loop1/",
    "dlink/new",
    "dlink/inner",
];

/// The arguments of `unlinkat(AT_FDCWD, path, 0)` (`unlink` passes the
/// filter; unlinkat is the serviced number) or of `rmdir(path)`.
fn remove_args(nr: i64, path: u64) -> [u64; 6] {
    if nr == libc::SYS_unlinkat {
        [libc::AT_FDCWD as i64 as u64, path, 0, 0, 0, 0]
    } else {
        [path, 0, 0, 0, 0, 0]
    }
}

#[test]
fn unlink_and_rmdir() {
    for &rel in NAMES {
        for nr in [libc::SYS_unlinkat, libc::SYS_rmdir] {
            twin(&std_tree, &format!("{nr} {rel}"), &|s| {
                (nr, remove_args(nr, s.path(rel)), vec![])
            });
        }
    }
    for &p in &[P::Raw("/"), P::Raw(""), P::Bad] {
        for nr in [libc::SYS_unlinkat, libc::SYS_rmdir] {
            twin(&std_tree, &format!("{nr} {p:?}"), &|s| {
                (nr, remove_args(nr, pa(s, p)), vec![])
            });
        }
    }
    for f in [0, libc::AT_REMOVEDIR, 0x1] {
        for &d in &[D::Cwd, D::Fd("dir"), D::Bad] {
            for &p in &[
                P::Rel("file"),
                P::Rel("inner"),
                P::Rel("sub"),
                P::Rel("../empty"),
                P::Rel("."),
                P::Rel(""),
            ] {
                twin(&std_tree, &format!("unlinkat {d:?} {p:?} {f:#x}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_unlinkat, [d, p, f as u64, 0, 0, 0], vec![])
                });
            }
        }
    }
}

#[test]
fn rename_family() {
    let ends = [
        "file",
        "link",
        "dir",
        "empty",
        "new",
        "dir/inner",
        "file/",
        "dir/",
        "dangling",
        ".",
        "..",
        "dir/sub/",
        "missing/x",
    ];
    for &a in &ends {
        for &b in &ends {
            twin(&std_tree, &format!("rename {a} {b}"), &|s| {
                (libc::SYS_rename, [s.path(a), s.path(b), 0, 0, 0, 0], vec![])
            });
        }
    }
    for flags in [1u64, 2, 4, 3, 6, 8] {
        for (a, b) in [
            ("file", "new"),
            ("file", "link"),
            ("dir", "empty"),
            ("file", "missing"),
        ] {
            twin(&std_tree, &format!("renameat2 {a} {b} {flags}"), &|s| {
                let (d1, p1, d2, p2) = (
                    da(s, D::Cwd),
                    s.s(a),
                    da(s, D::Fd("dir")),
                    s.s(&format!("../{b}")),
                );
                (libc::SYS_renameat2, [d1, p1, d2, p2, flags, 0], vec![])
            });
        }
    }
    twin(&std_tree, "renameat bad dirfd", &|s| {
        let (p1, p2) = (s.s("file"), s.path("x"));
        (
            libc::SYS_renameat,
            [9999, p1, libc::AT_FDCWD as i64 as u64, p2, 0, 0],
            vec![],
        )
    });
    twin(&std_tree, "rename bad new", &|s| {
        (libc::SYS_rename, [s.path("file"), 1, 0, 0, 0, 0], vec![])
    });
    twin(&std_tree, "rename missing, bad new", &|s| {
        (
            libc::SYS_rename,
            [s.path("missing/x"), 1, 0, 0, 0, 0],
            vec![],
        )
    });
}

#[test]
fn link_family() {
    let olds = [
        "file", "link", "dangling", "dir", "file/", "dlink/", "missing", "dir/up",
    ];
    let news = ["new", "file", "dir/new", "new/", "missing/new"];
    for &a in &olds {
        for &b in &news {
            twin(&std_tree, &format!("link {a} {b}"), &|s| {
                (libc::SYS_link, [s.path(a), s.path(b), 0, 0, 0, 0], vec![])
            });
            for f in [libc::AT_SYMLINK_FOLLOW, 0x1] {
                twin(&std_tree, &format!("linkat {a} {b} {f:#x}"), &|s| {
                    let (d, p1, p2) = (da(s, D::Cwd), s.s(a), s.path(b));
                    (libc::SYS_linkat, [d, p1, d, p2, f as u64, 0], vec![])
                });
            }
        }
    }
    // AT_EMPTY_PATH on a descriptor of a regular file (root may link it natively).
    if nix::unistd::getuid().is_root() {
        twin(&std_tree, "linkat AT_EMPTY_PATH", &|s| {
            let (d, e, p2) = (da(s, D::Fd("file")), s.s(""), s.path("new"));
            (
                libc::SYS_linkat,
                [
                    d,
                    e,
                    libc::AT_FDCWD as i64 as u64,
                    p2,
                    libc::AT_EMPTY_PATH as u64,
                    0,
                ],
                vec![],
            )
        });
    }
    twin(&std_tree, "linkat empty without AT_EMPTY_PATH", &|s| {
        let (d, e, p2) = (da(s, D::Fd("file")), s.s(""), s.path("new"));
        (
            libc::SYS_linkat,
            [d, e, libc::AT_FDCWD as i64 as u64, p2, 0, 0],
            vec![],
        )
    });
}

#[test]
fn link_through_proc_self_fd() {
    // The documented way to give an O_TMPFILE a name.
    let t = tree();
    let mut f = Fake::new(t.path());
    let p = f.path("dir");
    let Outcome::Fd { .. } = f.call(
        libc::SYS_open,
        [p, (libc::O_TMPFILE | libc::O_RDWR) as u64, 0o600, 0, 0, 0],
    ) else {
        panic!("O_TMPFILE")
    };
    // The handler kept no copy; open one natively and hand it to the guest.
    let tmp = open_path(&t.path().join("dir"), libc::O_TMPFILE | libc::O_RDWR);
    let src = format!("/proc/self/fd/{}", tmp.as_raw_fd());
    let (a, b) = (f.s(&src), f.path("named"));
    let r = f.call(
        libc::SYS_linkat,
        [
            libc::AT_FDCWD as i64 as u64,
            a,
            libc::AT_FDCWD as i64 as u64,
            b,
            libc::AT_SYMLINK_FOLLOW as u64,
            0,
        ],
    );
    assert_eq!(r, Outcome::Val(0));
    assert!(t.path().join("named").is_file());
}

#[test]
fn symlink_family() {
    let targets = ["file", "/etc/passwd", "../x", "a/b/c", ""];
    for &tg in &targets {
        for &b in &["new", "file", "dangling", "new/", "missing/x", "dir/sub/x"] {
            twin(&std_tree, &format!("symlink {tg} {b}"), &|s| {
                (libc::SYS_symlink, [s.s(tg), s.path(b), 0, 0, 0, 0], vec![])
            });
        }
    }
    for &d in &[D::Cwd, D::Fd("dir"), D::Bad] {
        twin(&std_tree, &format!("symlinkat {d:?}"), &|s| {
            let (t, d, p) = (s.s("x"), da(s, d), s.s("l"));
            (libc::SYS_symlinkat, [t, d, p, 0, 0, 0], vec![])
        });
    }
    twin(&std_tree, "symlink bad target", &|s| {
        (libc::SYS_symlink, [1, s.path("x"), 0, 0, 0, 0], vec![])
    });
    twin(&std_tree, "symlink long target", &|s| {
        (
            libc::SYS_symlink,
            [s.s(&long_path(4096)), s.path("x"), 0, 0, 0, 0],
            vec![],
        )
    });
}
