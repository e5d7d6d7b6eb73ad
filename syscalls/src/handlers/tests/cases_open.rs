//! open, openat, openat2, creat against the kernel.

use super::*;

const O: i32 = 0;

fn flag_sets() -> Vec<i32> {
    use libc::*;
    vec![
        O_RDONLY,
        O_RDONLY | O_CLOEXEC,
        O_WRONLY | O_APPEND,
        O_RDWR | O_NONBLOCK,
        O_RDONLY | O_DIRECTORY,
        O_RDONLY | O_NOFOLLOW,
        O_PATH,
        O_PATH | O_NOFOLLOW,
        O_PATH | O_RDWR | O_TRUNC,
        O_WRONLY | O_CREAT,
        O_WRONLY | O_CREAT | O_EXCL,
        O_WRONLY | O_CREAT | O_TRUNC,
        O_RDWR | O_CREAT | O_NOFOLLOW,
        O_CREAT | O_DIRECTORY,
        O_TMPFILE | O_RDWR,
        O_TMPFILE | O_RDONLY,
        O_TMPFILE,
        3,
        O | 0x4000_0000,
    ]
}

#[test]
fn openat_flags_and_paths() {
    for &f in &flag_sets() {
        for &rel in PATHS
            .iter()
            .chain(&["new", "new/", "dir/new", "missing/new", "dangling"])
        {
            twin(&std_tree, &format!("open {rel} {f:#o}"), &|s| {
                (
                    libc::SYS_open,
                    [s.path(rel), f as u64, 0o640, 0, 0, 0],
                    vec![],
                )
            });
        }
    }
}

#[test]
fn openat_dirfds() {
    let dirs = [D::Cwd, D::Fd("dir"), D::Fd("file"), D::Bad, D::Neg];
    let paths = [
        P::Rel("file"),
        P::Rel("inner"),
        P::Rel("up"),
        P::Rel("../link"),
        P::Rel("new"),
        P::Abs("file"),
        P::Rel(""),
        P::Bad,
        P::Long(4096),
        P::Long(4095),
    ];
    for &d in &dirs {
        for &p in &paths {
            for f in [
                libc::O_RDONLY,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            ] {
                twin(&std_tree, &format!("openat {d:?} {p:?} {f:#o}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_openat, [d, p, f as u64, 0o600, 0, 0], vec![])
                });
            }
        }
    }
}

/// Creating opens' modes (the legacy calls keep only the permission
/// bits). A creating open that reads is serviced (`creat` and opens that
/// write pass the filter).
#[test]
fn creating_opens_and_modes() {
    let flags = (libc::O_RDONLY | libc::O_CREAT) as u64;
    for mode in [0o777, 0o4755, 0o1777, 0o170777, 0] {
        for rel in ["new", "file", "link", "dangling", "dir"] {
            twin(&std_tree, &format!("open O_CREAT {rel} {mode:o}"), &|s| {
                (libc::SYS_open, [s.path(rel), flags, mode, 0, 0, 0], vec![])
            });
        }
    }
}

fn how(s: &mut dyn Side, flags: u64, mode: u64, resolve: u64, extra: &[u8]) -> u64 {
    let mut b = Vec::new();
    b.extend_from_slice(&flags.to_ne_bytes());
    b.extend_from_slice(&mode.to_ne_bytes());
    b.extend_from_slice(&resolve.to_ne_bytes());
    b.extend_from_slice(extra);
    s.bytes(&b)
}

#[test]
fn openat2_struct_and_flags() {
    let rd = libc::O_RDONLY as u64;
    let cases: Vec<(u64, u64, u64, Vec<u8>, u64)> = vec![
        (rd, 0, 0, vec![], 24),
        (rd, 0, 0, vec![], 16),
        (rd, 0, 0, vec![0; 8], 32),
        (rd, 0, 0, vec![0, 1, 0, 0, 0, 0, 0, 0], 32),
        (rd, 0, 0, vec![], 5000),
        (rd, 0o644, 0, vec![], 24),
        (libc::O_CREAT as u64, 0o10644, 0, vec![], 24),
        (1 << 33, 0, 0, vec![], 24),
        (rd, 0, 0x40, vec![], 24),
        (rd, 0, 0x18, vec![], 24),
        (
            (libc::O_WRONLY | libc::O_CREAT) as u64,
            0o644,
            0,
            vec![],
            24,
        ),
        ((libc::O_PATH | libc::O_RDWR) as u64, 0, 0, vec![], 24),
        (
            (libc::O_WRONLY | libc::O_CREAT) as u64,
            0o644,
            0x20,
            vec![],
            24,
        ),
        ((libc::O_WRONLY | libc::O_TRUNC) as u64, 0, 0x20, vec![], 24),
    ];
    for (f, m, r, extra, size) in cases {
        for p in [P::Abs("file"), P::Abs("new"), P::Bad] {
            twin(
                &std_tree,
                &format!(
                    "openat2 {f:#o} {m:o} {r:#x} +{} size {size} {p:?}",
                    extra.len()
                ),
                &|s| {
                    let h = how(s, f, m, r, &extra);
                    let (d, p) = (da(s, D::Cwd), pa(s, p));
                    (libc::SYS_openat2, [d, p, h, size, 0, 0], vec![])
                },
            );
        }
    }
    // A bad struct pointer.
    twin(&std_tree, "openat2 bad how", &|s| {
        let p = s.path("file");
        (libc::SYS_openat2, [da(s, D::Cwd), p, 1, 24, 0, 0], vec![])
    });
}

#[test]
fn openat2_resolve_flags() {
    use vfs::resolve::flags::*;
    // (RESOLVE_CACHED answers depend on the dentry cache: not compared here.)
    let sets = [
        0,
        BENEATH,
        IN_ROOT,
        NO_SYMLINKS,
        NO_MAGICLINKS,
        NO_XDEV,
        BENEATH | NO_SYMLINKS,
        IN_ROOT | NO_XDEV,
    ];
    let dirs = [D::Cwd, D::Fd("dir"), D::Fd("file"), D::Bad];
    let paths = [
        P::Rel("file"),
        P::Rel("link"),
        P::Rel("up"),
        P::Rel("../file"),
        P::Rel("inner"),
        P::Rel("sub/../inner"),
        P::Abs("file"),
        P::Raw("/"),
        P::Rel("dlink/inner"),
    ];
    for &r in &sets {
        for &d in &dirs {
            for &p in &paths {
                twin(
                    &std_tree,
                    &format!("openat2 resolve {r:#x} {d:?} {p:?}"),
                    &|s| {
                        let h = how(s, (libc::O_RDONLY | libc::O_CLOEXEC) as u64, 0, r, &[]);
                        let (d, p) = (da(s, d), pa(s, p));
                        (libc::SYS_openat2, [d, p, h, 24, 0, 0], vec![])
                    },
                );
            }
        }
    }
}

#[test]
fn proc_and_dev_paths() {
    // Opening through /proc/self and /dev/fd must reach the caller's files.
    let t = tree();
    let f = fs::File::open(t.path().join("file")).unwrap();
    let d = fs::File::open(t.path().join("dir")).unwrap();
    let (fd, dd) = (f.as_raw_fd(), d.as_raw_fd());
    let paths: Vec<String> = vec![
        format!("/proc/self/fd/{fd}"),
        format!("/dev/fd/{fd}"),
        format!("/proc/self/fd/{dd}/inner"),
        format!("/proc/thread-self/fd/{dd}/../file"),
        format!("/proc/{}/fd/{fd}", std::process::id()),
        "/proc/self/status".into(),
        "/proc/self/task/".into(),
        "/dev/null".into(),
        "/proc/self/exe".into(),
    ];
    for p in &paths {
        for fl in [
            libc::O_RDONLY,
            libc::O_PATH | libc::O_NOFOLLOW,
            libc::O_RDONLY | libc::O_NOFOLLOW,
        ] {
            same(t.path(), &format!("open {p} {fl:#o}"), &|s| {
                (libc::SYS_open, [s.s(p), fl as u64, 0, 0, 0, 0], vec![])
            });
        }
    }
}

#[test]
fn umask_is_applied_and_liveness_checked() {
    let t = tree();
    let mut f = Fake::new(t.path());
    f.g = FakeGuest {
        umask: 0o077,
        ..FakeGuest::new(t.path())
    };
    let p = f.path("created");
    let r = f.call(
        libc::SYS_open,
        [p, (libc::O_CREAT | libc::O_WRONLY) as u64, 0o666, 0, 0, 0],
    );
    assert!(matches!(r, Outcome::Fd { .. }), "{r:?}");
    let m = fs::metadata(t.path().join("created"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(m & 0o777, 0o600);
    // A dead notification: nothing is created.
    f.g.valid.set(false);
    let p = f.path("not-created");
    let r = f.call(
        libc::SYS_open,
        [p, (libc::O_CREAT | libc::O_WRONLY) as u64, 0o666, 0, 0, 0],
    );
    assert_eq!(r, Outcome::Err(Errno::ENOENT));
    assert!(!t.path().join("not-created").exists());
}
