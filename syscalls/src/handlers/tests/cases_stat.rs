//! stat, lstat, newfstatat, statx, statfs against the kernel.

use super::*;

const SZ: usize = 144;
const SX: usize = 256;

/// A tree one level down in a tempdir (so `..` is ours, not /tmp).
pub struct Tree(#[allow(dead_code)] tempfile::TempDir, PathBuf);
impl Tree {
    pub fn path(&self) -> &Path {
        &self.1
    }
}
pub fn tree() -> Tree {
    process_umask();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    std_tree(&root);
    Tree(t, root)
}

#[test]
fn stat_and_lstat() {
    let t = tree();
    for &rel in PATHS {
        for nr in [libc::SYS_stat, libc::SYS_lstat] {
            same(t.path(), &format!("{nr} {rel}"), &|s| {
                let (p, b) = (s.path(rel), s.buf(SZ));
                (nr, [p, b, 0, 0, 0, 0], vec![(b, SZ)])
            });
        }
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
        // ("/" is root's: 65534 to a guest that is not root)
        let owners = if nix::unistd::getuid().is_root() {
            0..0
        } else {
            28..36
        };
        same_masked(
            t.path(),
            &format!("stat {p:?}"),
            &|s| {
                let (p, b) = (pa(s, p), s.buf(SZ));
                (libc::SYS_stat, [p, b, 0, 0, 0, 0], vec![(b, SZ)])
            },
            &[owners],
        );
    }
    // A bad output buffer.
    same(t.path(), "stat to a bad buffer", &|s| {
        (libc::SYS_stat, [s.path("file"), 1, 0, 0, 0, 0], vec![])
    });
}

#[test]
fn newfstatat() {
    let t = tree();
    let flag_sets = [
        0,
        libc::AT_SYMLINK_NOFOLLOW,
        libc::AT_EMPTY_PATH,
        libc::AT_NO_AUTOMOUNT,
        0x8000,
        -1,
    ];
    let dirs = [
        D::Cwd,
        D::Fd("dir"),
        D::Fd("file"),
        D::Bad,
        D::Neg,
        D::AtCwd,
    ];
    let paths = [
        P::Rel("file"),
        P::Rel("link"),
        P::Rel("up"),
        P::Rel("../file"),
        P::Rel(""),
        P::Abs("link"),
        P::Bad,
    ];
    for &f in &flag_sets {
        for &d in &dirs {
            for &p in &paths {
                // Natively "the cwd" is a real descriptor, which takes the
                // fstat path even with bad flags; AT_FDCWD does not.
                let bad =
                    f & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH | libc::AT_NO_AUTOMOUNT)
                        != 0;
                if bad && matches!((d, p), (D::Cwd, P::Rel(""))) {
                    continue;
                }
                if matches!(d, D::AtCwd) && matches!(p, P::Rel(r) if !r.is_empty() || !bad) {
                    continue;
                }
                same(t.path(), &format!("newfstatat {d:?} {p:?} {f:#x}"), &|s| {
                    let (d, p, b) = (da(s, d), pa(s, p), s.buf(SZ));
                    (
                        libc::SYS_newfstatat,
                        [d, p, b, f as u64, 0, 0],
                        vec![(b, SZ)],
                    )
                });
            }
        }
    }
}

#[test]
fn statx() {
    let t = tree();
    let masks = [
        libc::STATX_BASIC_STATS,
        libc::STATX_ALL,
        0,
        libc::STATX_MNT_ID,
        0x8000_0000,
        0xffff_ffff,
    ];
    let flags = [
        0,
        libc::AT_SYMLINK_NOFOLLOW,
        libc::AT_EMPTY_PATH,
        libc::AT_STATX_DONT_SYNC,
        libc::AT_STATX_FORCE_SYNC | libc::AT_STATX_DONT_SYNC,
        0x1,
        0x1 | libc::AT_EMPTY_PATH,
    ];
    for &m in &masks {
        for &f in &flags {
            for &p in &[
                P::Abs("link"),
                P::Abs("dir/"),
                P::Rel("dangling"),
                P::Rel(""),
                P::Abs("missing"),
                P::Bad,
            ] {
                for &d in &[D::Cwd, D::Fd("dir"), D::Bad] {
                    if f & 1 != 0 && matches!((d, p), (D::Cwd, P::Rel(""))) {
                        continue; // as in newfstatat
                    }
                    same(
                        t.path(),
                        &format!("statx {d:?} {p:?} {f:#x} {m:#x}"),
                        &|s| {
                            let (d, p, b) = (da(s, d), pa(s, p), s.buf(SX));
                            (
                                libc::SYS_statx,
                                [d, p, f as u64, m as u64, b, 0],
                                vec![(b, SX)],
                            )
                        },
                    );
                }
            }
        }
    }
    // NULL path with AT_EMPTY_PATH: the dirfd.
    same(t.path(), "statx NULL path", &|s| {
        let (d, b) = (da(s, D::Fd("dir")), s.buf(SX));
        (
            libc::SYS_statx,
            [
                d,
                0,
                libc::AT_EMPTY_PATH as u64,
                libc::STATX_BASIC_STATS as u64,
                b,
                0,
            ],
            vec![(b, SX)],
        )
    });
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
        for nr in [libc::SYS_stat, libc::SYS_lstat] {
            // (owners other than the caller show as 65534 to the guest)
            let owners = if nix::unistd::getuid().is_root() {
                0..0
            } else {
                28..36
            };
            same_masked(
                t.path(),
                &format!("{nr} {p}"),
                &|s| {
                    let (a, b) = (s.s(p), s.buf(SZ));
                    (nr, [a, b, 0, 0, 0, 0], vec![(b, SZ)])
                },
                &[owners],
            );
        }
    }
}

#[test]
fn owners_are_mapped() {
    if !nix::unistd::getuid().is_root() {
        return;
    }
    let t = tree();
    std::os::unix::fs::chown(t.path().join("file"), Some(4321), Some(4321)).unwrap();
    let mut f = Fake::new(t.path());
    let (p, b) = (f.path("file"), f.buf(SZ));
    assert_eq!(f.call(libc::SYS_stat, [p, b, 0, 0, 0, 0]), Outcome::Val(0));
    let st = f.read(b, SZ);
    assert_eq!(&st[28..36], &[0xfe, 0xff, 0, 0, 0xfe, 0xff, 0, 0]);
    let b = f.buf(SX);
    let r = f.call(
        libc::SYS_statx,
        [
            libc::AT_FDCWD as i64 as u64,
            p,
            0,
            libc::STATX_BASIC_STATS as u64,
            b,
            0,
        ],
    );
    assert_eq!(r, Outcome::Val(0));
    let sx = f.read(b, SX);
    assert_eq!(&sx[20..28], &[0xfe, 0xff, 0, 0, 0xfe, 0xff, 0, 0]);
}

/// Timing of a serviced newfstatat on an absolute path (run with
/// `cargo test -p sandbox-syscalls --release -- --ignored --nocapture timing`).
#[test]
#[ignore]
fn timing_newfstatat() {
    let t = tree();
    let mut f = Fake::new(t.path());
    let (p, b) = (f.s("/usr/lib/os-release"), f.buf(SZ));
    let args = SyscallArgs {
        nr: libc::SYS_newfstatat,
        args: [libc::AT_FDCWD as i64 as u64, p, b, 0, 0, 0],
    };
    let n = 200_000;
    let start = std::time::Instant::now();
    for _ in 0..n {
        let _ = dispatch(&f.ctx, &f.g, &args);
    }
    let per = start.elapsed() / n;
    let c = CString::new("/usr/lib/os-release").unwrap();
    let start = std::time::Instant::now();
    for _ in 0..n {
        // SAFETY (test only): valid path and buffer.
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        unsafe { libc::stat(c.as_ptr(), st.as_mut_ptr()) };
    }
    let native = start.elapsed() / n;
    let root = open_path(Path::new("/"), libc::O_PATH);
    let start = std::time::Instant::now();
    for _ in 0..n {
        let fd = vfs::sys::openat2(
            root.as_fd(),
            &c,
            (libc::O_PATH | libc::O_CLOEXEC) as u64,
            0,
            0x10,
        )
        .unwrap();
        let _ = vfs::sys::fstat(fd.as_fd());
    }
    let raw = start.elapsed() / n;
    let caller = super::super::Caller(&f.g);
    let at = vfs::At {
        dir: None,
        caller: &caller,
    };
    let start = std::time::Instant::now();
    for _ in 0..n {
        let _ = f.ctx.fs.stat(&at, &c, true);
    }
    let cached = start.elapsed() / n;
    let dir = open_path(Path::new("/usr/lib"), libc::O_PATH);
    let start = std::time::Instant::now();
    for _ in 0..n {
        let _ = vfs::sys::fstatat(dir.as_fd(), c"os-release", libc::AT_SYMLINK_NOFOLLOW);
    }
    eprintln!("plain fstatat: {:?}", start.elapsed() / n);
    eprintln!("serviced newfstatat work: {per:?} per call; resolver stat {cached:?}; openat2+fstat+close: {raw:?}; native stat: {native:?}");
}

#[test]
fn stat_cache_follows_guest_changes() {
    let t = tree();
    let mut f = Fake::new(t.path());
    let ino = |f: &mut Fake, rel: &str| -> Result<u64, Outcome> {
        let (p, b) = (f.path(rel), f.buf(SZ));
        match f.call(libc::SYS_stat, [p, b, 0, 0, 0, 0]) {
            Outcome::Val(0) => Ok(u64::from_ne_bytes(f.read(b, SZ)[8..16].try_into().unwrap())),
            o => Err(o),
        }
    };
    let inner = fs::metadata(t.path().join("dir/inner")).unwrap().ino();
    assert_eq!(ino(&mut f, "dir/inner"), Ok(inner));
    assert_eq!(ino(&mut f, "dlink/inner"), Ok(inner));
    // Rename the directory through the handlers: the cached one is stale.
    let (a, b) = (f.path("dir"), f.path("moved"));
    assert_eq!(
        f.call(libc::SYS_rename, [a, b, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(ino(&mut f, "dir/inner"), Err(Outcome::Err(Errno::ENOENT)));
    assert_eq!(ino(&mut f, "moved/inner"), Ok(inner));
    // Swap a symlinked directory.
    fs::create_dir(t.path().join("other")).unwrap();
    fs::write(t.path().join("other/inner"), b"").unwrap();
    let other = fs::metadata(t.path().join("other/inner")).unwrap().ino();
    assert_eq!(ino(&mut f, "dlink/inner"), Err(Outcome::Err(Errno::ENOENT)));
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
    assert_eq!(ino(&mut f, "dlink/inner"), Ok(other));
    // A final symlink is followed (or not) as the call asks.
    let (p, b) = (f.path("link"), f.buf(SZ));
    assert_eq!(f.call(libc::SYS_lstat, [p, b, 0, 0, 0, 0]), Outcome::Val(0));
    let mode = u32::from_ne_bytes(f.read(b, SZ)[24..28].try_into().unwrap());
    assert_eq!(mode & libc::S_IFMT, libc::S_IFLNK);
    assert_eq!(f.call(libc::SYS_stat, [p, b, 0, 0, 0, 0]), Outcome::Val(0));
    let mode = u32::from_ne_bytes(f.read(b, SZ)[24..28].try_into().unwrap());
    assert_eq!(mode & libc::S_IFMT, libc::S_IFREG);
}

#[test]
fn stat_cache_respects_permissions() {
    // Without search permission on a directory, lookups in it fail even
    // after it was cached (chmod through the handlers starts afresh).
    if nix::unistd::getuid().is_root() {
        return; // root passes every permission check
    }
    let t = tree();
    let mut f = Fake::new(t.path());
    let (p, b) = (f.path("dir/inner"), f.buf(SZ));
    assert_eq!(f.call(libc::SYS_stat, [p, b, 0, 0, 0, 0]), Outcome::Val(0));
    let d = f.path("dir");
    assert_eq!(
        f.call(libc::SYS_chmod, [d, 0o600, 0, 0, 0, 0]),
        Outcome::Val(0)
    );
    assert_eq!(
        f.call(libc::SYS_stat, [p, b, 0, 0, 0, 0]),
        Outcome::Err(Errno::EACCES)
    );
}
