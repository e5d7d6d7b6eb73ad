//! chmod, chown and inotify_add_watch against the kernel.

use super::*;

const SOME: &[&str] = &[
    "file", "link", "dir", "dlink/", "dangling", "missing", "file/", "loop1", "dir/up",
];

#[test]
fn chmod_family() {
    for &rel in SOME {
        // No set-id program: the test's tree is on a file system the host
        // has mounted, where those bits are dropped (`setid.rs`).
        for mode in [0o600u64, 0o4644, 0o2644, 0o171777] {
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
                // SAFETY: (test only) creates a descriptor we then own.
                let raw = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
                assert!(raw >= 0, "inotify_init1: {}", Errno::last());
                // SAFETY: (test only) the descriptor just made, owned by no one else.
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
    // SAFETY: (test only) a fresh descriptor we own.
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
