//! A model test: random sequences of namespace changes and lookups, run
//! natively on one tree and through one long-lived context on its twin.
//! Every answer must agree, which checks that the cache of resolved
//! directories (which every call here but access and open resolves its
//! parent through) never answers from a stale directory.

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
    Access(&'static str),
    OpenPath(&'static str),
    Readlink(&'static str),
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
        1 => name().prop_map(Op::Access),
        1 => name().prop_map(Op::OpenPath),
        6 => name().prop_map(Op::Readlink),
    ]
}

/// Run `op` on a side; the outcome and what a readlink read (each side's
/// root spelled `ROOT`: absolute link targets name their own side).
fn run(s: &mut dyn Side, op: &Op) -> (Outcome, String) {
    let (nr, a, out) = match *op {
        Op::Mkdir(p) => (libc::SYS_mkdir, [s.path(p), 0o755, 0, 0, 0, 0], None),
        Op::Rmdir(p) => (libc::SYS_rmdir, [s.path(p), 0, 0, 0, 0, 0], None),
        Op::Unlink(p) => (libc::SYS_unlink, [s.path(p), 0, 0, 0, 0, 0], None),
        Op::Rename(p, q) => (libc::SYS_rename, [s.path(p), s.path(q), 0, 0, 0, 0], None),
        Op::Symlink(t, p) => {
            let t = if t == "/" { s.path("") } else { s.s(t) };
            (libc::SYS_symlink, [t, s.path(p), 0, 0, 0, 0], None)
        }
        Op::Creat(p) => (libc::SYS_creat, [s.path(p), 0o644, 0, 0, 0, 0], None),
        Op::Chmod(p, m) => (libc::SYS_chmod, [s.path(p), m as u64, 0, 0, 0, 0], None),
        Op::Access(p) => (libc::SYS_access, [s.path(p), 0, 0, 0, 0, 0], None),
        Op::OpenPath(p) => {
            let flags = (libc::O_PATH | libc::O_NOFOLLOW) as u64;
            (libc::SYS_open, [s.path(p), flags, 0, 0, 0, 0], None)
        }
        Op::Readlink(p) => {
            let b = s.buf(256);
            (libc::SYS_readlink, [s.path(p), b, 256, 0, 0, 0], Some(b))
        }
    };
    let r = s.call(nr, a);
    let text = match (out, &r) {
        (Some(b), Outcome::Val(n)) => {
            let text = String::from_utf8_lossy(&s.read(b, *n as usize)).into_owned();
            text.replace(&*s.root().to_string_lossy(), "ROOT")
        }
        _ => String::new(),
    };
    // (a descriptor's type, mode and size agree on twins; inodes differ)
    (loose(r), text)
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
