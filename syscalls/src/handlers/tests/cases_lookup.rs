//! Path resolution against the kernel, through the serviced calls that
//! only look a path up: access and faccessat2 (following a final symlink
//! or not), open with `O_PATH` (the handler's descriptor must be the very
//! file the kernel opens: same device and inode), readlink (its parent
//! lookup is the one the cache of resolved directories serves), and
//! statfs. Path stats themselves pass the filter.

use super::*;

/// The open flags of a pure lookup, following a final symlink or not.
const LOOKUPS: [i32; 2] = [libc::O_PATH, libc::O_PATH | libc::O_NOFOLLOW];

/// `path` looked up every way: access (follows), faccessat2 with
/// AT_SYMLINK_NOFOLLOW, and open `O_PATH` with and without O_NOFOLLOW.
fn every_lookup(root: &Path, what: &str, path: &dyn Fn(&mut dyn Side) -> u64) {
    same(root, &format!("access {what}"), &|s| {
        (libc::SYS_access, [path(s), 0, 0, 0, 0, 0], vec![])
    });
    same(root, &format!("faccessat2 nofollow {what}"), &|s| {
        let at = libc::AT_FDCWD as i64 as u64;
        let nofollow = libc::AT_SYMLINK_NOFOLLOW as u64;
        (
            libc::SYS_faccessat2,
            [at, path(s), 0, nofollow, 0, 0],
            vec![],
        )
    });
    for fl in LOOKUPS {
        same(root, &format!("open {what} {fl:#o}"), &|s| {
            (libc::SYS_open, [path(s), fl as u64, 0, 0, 0, 0], vec![])
        });
    }
}

#[test]
fn paths_resolve_as_natively() {
    let t = tree();
    for &rel in PATHS {
        every_lookup(t.path(), rel, &|s| s.path(rel));
    }
    for p in [
        P::Bad,
        P::Null,
        P::Raw(""),
        P::LongAbs(4096),
        P::LongAbs(4095),
        P::Raw("/"),
        P::Raw("//.."),
    ] {
        every_lookup(t.path(), &format!("{p:?}"), &|s| pa(s, p));
    }
}

#[test]
fn dirfds_and_relative_paths() {
    let t = tree();
    let dirs = [D::Cwd, D::Fd("dir"), D::Fd("file"), D::Bad, D::Neg];
    let paths = [
        P::Rel("file"),
        P::Rel("link"),
        P::Rel("up"),
        P::Rel("../file"),
        P::Rel("../dlink/sub/.."),
        P::Rel(""),
        P::Abs("link"),
        P::Bad,
    ];
    let flags = [0, libc::AT_SYMLINK_NOFOLLOW, libc::AT_EMPTY_PATH];
    for &d in &dirs {
        for &p in &paths {
            for fl in LOOKUPS {
                same(t.path(), &format!("openat {d:?} {p:?} {fl:#o}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_openat, [d, p, fl as u64, 0, 0, 0], vec![])
                });
            }
            for f in flags {
                same(t.path(), &format!("faccessat2 {d:?} {p:?} {f:#x}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_faccessat2, [d, p, 0, f as u64, 0, 0], vec![])
                });
            }
        }
    }
}

#[test]
fn proc_self_paths() {
    // /proc/self must name the caller (here: this test process on both sides).
    let t = tree();
    let f = fs::File::open(t.path().join("file")).unwrap();
    let fd = f.as_raw_fd();
    let paths: Vec<String> = vec![
        "/proc/self".into(),
        "/proc/self/".into(),
        "/proc/self/task".into(),
        format!("/proc/self/fd/{fd}"),
        format!("/dev/fd/{fd}"),
        "/proc/thread-self/comm".into(),
        "/proc/self/cwd".into(),
        "/proc/mounts".into(),
    ];
    for p in &paths {
        every_lookup(t.path(), p, &|s| s.s(p));
    }
}

#[test]
fn statfs() {
    let t = tree();
    for p in [
        P::Abs("file"),
        P::Abs("link"),
        P::Abs("dangling"),
        P::Abs("file/"),
        P::Raw("/proc"),
        P::Raw(""),
        P::Bad,
    ] {
        // f_bfree, f_bavail, f_ffree move as other tests write.
        same_masked(
            t.path(),
            &format!("statfs {p:?}"),
            &|s| {
                let (p, b) = (pa(s, p), s.buf(120));
                (libc::SYS_statfs, [p, b, 0, 0, 0, 0], vec![(b, 120)])
            },
            &[24..40, 48..56],
        );
    }
    same(t.path(), "statfs to a bad buffer", &|s| {
        (libc::SYS_statfs, [s.path("file"), 1, 0, 0, 0, 0], vec![])
    });
}

/// What readlink of `root/rel` answers through the handlers: the link's
/// text, or the error (EINVAL: not a symlink; ENOENT: no such name).
fn readlink(f: &mut Fake, rel: &str) -> Result<String, Outcome> {
    let (p, b) = (f.path(rel), f.buf(64));
    match f.call(libc::SYS_readlink, [p, b, 64, 0, 0, 0]) {
        Outcome::Val(n) => Ok(String::from_utf8_lossy(&f.read(b, n as usize)).into_owned()),
        o => Err(o),
    }
}

#[test]
fn dir_cache_follows_guest_changes() {
    let t = tree();
    let mut f = Fake::new(t.path());
    let up = || Ok("../file".to_owned());
    let enoent = || Err(Outcome::Err(Errno::ENOENT));
    assert_eq!(readlink(&mut f, "dir/up"), up());
    assert_eq!(readlink(&mut f, "dlink/up"), up());
    assert_eq!(
        readlink(&mut f, "dir/inner"),
        Err(Outcome::Err(Errno::EINVAL))
    );
    // Rename the directory through the handlers: the cached one is stale.
    let (a, b) = (f.path("dir"), f.path("moved"));
    assert_eq!(
        f.call(libc::SYS_rename, [a, b, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(readlink(&mut f, "dir/up"), enoent());
    assert_eq!(readlink(&mut f, "moved/up"), up());
    // Swap a symlinked directory.
    fs::create_dir(t.path().join("other")).unwrap();
    std::os::unix::fs::symlink("other-target", t.path().join("other/up")).unwrap();
    assert_eq!(readlink(&mut f, "dlink/up"), enoent());
    let l = f.path("dlink");
    assert_eq!(
        f.call(libc::SYS_unlink, [l, 0, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    let (tg, l) = (f.s("other"), f.path("dlink"));
    assert_eq!(
        f.call(libc::SYS_symlink, [tg, l, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(readlink(&mut f, "dlink/up"), Ok("other-target".to_owned()));
}

#[test]
fn dir_cache_respects_permissions() {
    // Without search permission on a directory, lookups in it fail even
    // after it was cached (chmod through the handlers starts afresh).
    if nix::unistd::getuid().is_root() {
        return; // root passes every permission check
    }
    let t = tree();
    let mut f = Fake::new(t.path());
    assert_eq!(readlink(&mut f, "dir/up"), Ok("../file".to_owned()));
    let d = f.path("dir");
    assert_eq!(
        f.call(libc::SYS_chmod, [d, 0o600, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(readlink(&mut f, "dir/up"), Err(Outcome::Err(Errno::EACCES)));
}
