//! A model test: random sequences of namespace changes and lookups, run
//! natively on one tree and through one long-lived context on its twin.
//! Every answer must agree, which checks that the cache of resolved
//! directories (which every serviced call here but open resolves its
//! parent through) never answers from a stale directory. A hard link of
//! a name onto itself is the probe that changes nothing: EEXIST says it
//! exists. mkdir, unlink and creat pass the filter: the kernel runs them
//! on both sides, unseen by the handlers, as in a sandbox.

use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug)]
enum Op {
    Mkdir(&'static str),
    Rmdir(&'static str),
    Unlink(&'static str),
    Rename(&'static str, &'static str),
    Symlink(&'static str, &'static str),
    Creat(&'static str),
    Chmod(&'static str, u32),
    OpenPath(&'static str),
    Link(&'static str, &'static str),
}

const NAMES: &[&str] = &[
    "a", "b", "a/b", "b/a", "a/b/c", "l", "a/l", "l/b", "l/b/c", "b/l/c", "a/../b",
];
const TARGETS: &[&str] = &["a", "b", "a/b", "..", "/", "l", "nowhere"];

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => name().prop_map(Op::Mkdir),
        1 => name().prop_map(Op::Rmdir),
        1 => name().prop_map(Op::Unlink),
        2 => (name(), name()).prop_map(|(a, b)| Op::Rename(a, b)),
        2 => (prop::sample::select(TARGETS), name()).prop_map(|(t, p)| Op::Symlink(t, p)),
        1 => name().prop_map(Op::Creat),
        1 => (name(), prop::sample::select(vec![0o755u32, 0o600, 0o000])).prop_map(|(p, m)| Op::Chmod(p, m)),
        1 => name().prop_map(Op::OpenPath),
        6 => name().prop_map(|p| Op::Link(p, p)),
        1 => (name(), name()).prop_map(|(a, b)| Op::Link(a, b)),
    ]
}

/// `call` of `p` beneath `root`, made by the kernel, as when the call
/// passes the filter.
fn natively(root: &Path, p: &str, call: impl Fn(*const libc::c_char) -> i32) -> Outcome {
    let path = CString::new(root.join(p).into_os_string().into_encoded_bytes()).unwrap();
    if call(path.as_ptr()) < 0 {
        return Outcome::Err(Errno::last());
    }
    Outcome::Val(0)
}

/// `mkdir(path, 0755)` with the guest's umask.
fn mkdir(path: *const libc::c_char) -> i32 {
    // SAFETY: (test only) a NUL-terminated path of ours.
    unsafe { libc::mkdir(path, 0o755 & !process_umask()) }
}

/// `unlink(path)`.
fn unlink(path: *const libc::c_char) -> i32 {
    // SAFETY: (test only) a NUL-terminated path of ours.
    unsafe { libc::unlink(path) }
}

/// `creat(path, 0644)` with the guest's umask; the descriptor closed.
fn creat(path: *const libc::c_char) -> i32 {
    // SAFETY: (test only) a NUL-terminated path of ours; the descriptor
    // returned is ours to close.
    unsafe {
        let fd = libc::creat(path, 0o644 & !process_umask());
        if fd >= 0 {
            libc::close(fd);
        }
        fd.min(0)
    }
}

/// Run `op` on a side; its outcome.
fn run(s: &mut dyn Side, op: &Op) -> Outcome {
    let (nr, a) = match *op {
        Op::Mkdir(p) => return natively(s.root(), p, mkdir),
        Op::Rmdir(p) => (libc::SYS_rmdir, [s.path(p), 0, 0, 0, 0, 0]),
        Op::Unlink(p) => return natively(s.root(), p, unlink),
        Op::Rename(p, q) => (libc::SYS_rename, [s.path(p), s.path(q), 0, 0, 0, 0]),
        Op::Symlink(t, p) => {
            let t = if t == "/" { s.path("") } else { s.s(t) };
            (libc::SYS_symlink, [t, s.path(p), 0, 0, 0, 0])
        }
        Op::Creat(p) => return natively(s.root(), p, creat),
        Op::Chmod(p, m) => (libc::SYS_chmod, [s.path(p), m as u64, 0, 0, 0, 0]),
        Op::OpenPath(p) => {
            let flags = (libc::O_PATH | libc::O_NOFOLLOW) as u64;
            (libc::SYS_open, [s.path(p), flags, 0, 0, 0, 0])
        }
        Op::Link(p, q) => (libc::SYS_link, [s.path(p), s.path(q), 0, 0, 0, 0]),
    };
    // (a descriptor's type, mode and size agree on twins; inodes differ)
    loose(s.call(nr, a))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn dir_cache_never_stale(ops in prop::collection::vec(op(), 1..40)) {
        process_umask();
        let t = tempfile::tempdir().unwrap();
        // Deep enough that `..` links stay on their own side.
        let (np, gp) = (t.path().join("n/1/2/root"), t.path().join("g/1/2/root"));
        fs::create_dir_all(&np).unwrap();
        fs::create_dir_all(&gp).unwrap();
        let mut n = Native::new(&np);
        let mut f = Fake::new(&gp);
        for (i, op) in ops.iter().enumerate() {
            let a = run(&mut n, op);
            let b = run(&mut f, op);
            prop_assert_eq!(a, b, "step {} {:?} of {:?}", i, op, ops);
        }
        // (absolute link targets name each side's own root)
        let mut sn = snapshot(&t.path().join("n"));
        for v in sn.values_mut() {
            *v = v.replace("/n/1/2/root", "/g/1/2/root");
        }
        prop_assert_eq!(sn, snapshot(&t.path().join("g")));
    }
}
