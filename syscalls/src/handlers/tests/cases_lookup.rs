//! Path resolution against the kernel, through the handlers' pure lookup:
//! open with `O_PATH` (the handler's descriptor must be the very file the
//! kernel opens: same device and inode); and the cache of resolved
//! directories, which link's parent lookups go through. Path stats,
//! access, readlink and statfs themselves pass the filter.

use super::*;

/// The open flags of a pure lookup, following a final symlink or not.
const LOOKUPS: [i32; 2] = [libc::O_PATH, libc::O_PATH | libc::O_NOFOLLOW];

/// `path` looked up both ways: open `O_PATH` with and without O_NOFOLLOW.
fn every_lookup(root: &Path, what: &str, path: &dyn Fn(&mut dyn Side) -> u64) {
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
        P::Raw("/proc"),
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
    for &d in &dirs {
        for &p in &paths {
            for fl in LOOKUPS {
                same(t.path(), &format!("openat {d:?} {p:?} {fl:#o}"), &|s| {
                    let (d, p) = (da(s, d), pa(s, p));
                    (libc::SYS_openat, [d, p, fl as u64, 0, 0, 0], vec![])
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

/// Whether `root/rel` exists, as the handlers resolve it: a hard link of
/// the name onto itself fails with EEXIST when it does (ENOENT, ENOTDIR,
/// EACCES... when it cannot be reached) and never changes the tree. Both
/// of its names are looked up through their parent, so through the cache
/// of resolved directories.
fn probe(f: &mut Fake, rel: &str) -> Outcome {
    let p = f.path(rel);
    f.call(libc::SYS_link, [p, p, 0, 0, 0, 0])
}

const EXISTS: Outcome = Outcome::Err(Errno::EEXIST);
const MISSING: Outcome = Outcome::Err(Errno::ENOENT);

#[test]
fn dir_cache_follows_guest_changes() {
    let t = tree();
    let mut f = Fake::new(t.path());
    assert_eq!(probe(&mut f, "dir/up"), EXISTS);
    assert_eq!(probe(&mut f, "dlink/up"), EXISTS);
    assert_eq!(probe(&mut f, "dir/nothing"), MISSING);
    // Rename the directory through the handlers: the cached one is stale.
    let (a, b) = (f.path("dir"), f.path("moved"));
    assert_eq!(
        f.call(libc::SYS_rename, [a, b, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(probe(&mut f, "dir/up"), MISSING);
    assert_eq!(probe(&mut f, "moved/up"), EXISTS);
    // Swap a symlinked directory: a name only the new target holds.
    fs::create_dir(t.path().join("other")).unwrap();
    fs::write(t.path().join("other/only-here"), b"").unwrap();
    assert_eq!(probe(&mut f, "dlink/up"), MISSING);
    // unlink passes the filter: the kernel removes the link, unseen by
    // the handlers.
    fs::remove_file(t.path().join("dlink")).unwrap();
    let (tg, l) = (f.s("other"), f.path("dlink"));
    assert_eq!(
        f.call(libc::SYS_symlink, [tg, l, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(probe(&mut f, "dlink/only-here"), EXISTS);
    assert_eq!(probe(&mut f, "dlink/up"), MISSING);
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
    assert_eq!(probe(&mut f, "dir/up"), EXISTS);
    let d = f.path("dir");
    assert_eq!(
        f.call(libc::SYS_chmod, [d, 0o600, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(probe(&mut f, "dir/up"), Outcome::Err(Errno::EACCES));
}
