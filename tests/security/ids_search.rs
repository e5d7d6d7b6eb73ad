//! The guest root's capabilities reach the serviced calls' path walk
//! (`--userns-range auto`): beneath a mode-000 directory of its own, or
//! in another guest user's 0700 one, a guest root removes, renames,
//! links, chmods and chowns as root does natively (its CAP_DAC_OVERRIDE
//! searches a directory whose owner and group are guest ids). Without the
//! capability (another user, `--cap-drop DAC_OVERRIDE`, one id) the walk
//! is refused as natively, and a directory without a guest owner stays
//! closed, as in a container. Each script runs natively in a fresh
//! directory and under the supervisor in the sandbox's /tmp; the answers
//! must be the same.

use crate::common;
use common::*;

const AUTO: [&str; 2] = ["--userns-range", "auto"];

/// Makes `BASE/w/a` with names in it, closes `a` (mode 000, or another
/// user's 0700 with `other`), then tries each call beneath it, reopens
/// `a` and lists what is left. Owners are printed as `me` or their id.
const BENEATH: &str = r#"
import errno, os, sys
base, kind = sys.argv[1], sys.argv[2]
d = os.path.join(base, 'w')
a = os.path.join(d, 'a')
os.makedirs(a + '/dir1')
os.mkdir(a + '/dir2')
for n in ('f', 'g'):
    open(os.path.join(a, n), 'w').write('x')
if kind == 'other':
    os.chown(a, 1000, 1000)
    os.chmod(a, 0o700)
else:
    os.chmod(a, 0)
def t(label, fn):
    try:
        fn()
        print(label, 'ok')
    except OSError as e:
        print(label, errno.errorcode[e.errno])
t('stat', lambda: os.stat(a + '/f'))
t('read', lambda: open(a + '/f').read())
t('rmdir', lambda: os.rmdir(a + '/dir1'))
t('unlink', lambda: os.unlink(a + '/g'))
t('rename', lambda: os.rename(a + '/f', a + '/f2'))
t('rename out', lambda: os.rename(a + '/dir2', d + '/dir2'))
t('link', lambda: os.link(a + '/f2', a + '/h'))
t('symlink', lambda: os.symlink('f2', a + '/s'))
t('chmod', lambda: os.chmod(a + '/f2', 0o640))
t('chown', lambda: os.chown(a + '/f2', 5, 6))
t('lchown', lambda: os.lchown(a + '/s', 7, 8))
t('setxattr', lambda: os.setxattr(a + '/f2', 'user.k', b'v'))
if kind == 'other':
    os.chown(a, os.getuid(), os.getgid())
os.chmod(a, 0o755)
me = os.getuid()
for n in sorted(os.listdir(a)):
    st = os.lstat(os.path.join(a, n))
    who = 'me' if st.st_uid == me else '%d:%d' % (st.st_uid, st.st_gid)
    print(n, who, oct(st.st_mode & 0o777) if not os.path.islink(os.path.join(a, n)) else 'link')
"#;

/// Every call beneath the closed directory, refused its search.
const ALL_REFUSED: [&str; 12] = [
    "stat EACCES",
    "read EACCES",
    "rmdir EACCES",
    "unlink EACCES",
    "rename EACCES",
    "rename out EACCES",
    "link EACCES",
    "symlink EACCES",
    "chmod EACCES",
    "chown EACCES",
    "lchown EACCES",
    "setxattr EACCES",
];

/// The script natively as root (or as `user`) in a fresh directory
/// (owned by `user`), through `wrap` (a `setpriv`, or nothing).
fn native(kind: &str, user: Option<(u32, u32)>, wrap: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().display().to_string();
    let mut argv: Vec<&str> = wrap.to_vec();
    argv.extend(["python3", "-c", BENEATH, &p, kind]);
    let mut run = Run::new(&argv);
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        run = run.user(uid, gid);
    }
    run.native().ok("native")
}

/// The script under the supervisor (with `opts`) in the sandbox's /tmp.
fn supervised(kind: &str, opts: &[&str]) -> Run {
    Run::new(&["python3", "-c", BENEATH, "/tmp", kind]).sup(opts)
}

#[test]
fn guest_root_acts_beneath_its_mode_000_directory_as_natively() {
    if !is_root() {
        skip!("needs root");
    }
    let native = native("zero", None, &[]);
    let out = supervised("zero", &AUTO).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    // The script's own claims, so that a run where both fail alike fails.
    out.assert_lines(&[
        "stat ok",
        "rmdir ok",
        "unlink ok",
        "rename ok",
        "rename out ok",
        "link ok",
        "symlink ok",
        "chmod ok",
        "chown ok",
        "lchown ok",
        "setxattr ok",
        "f2 5:6 0o640",
        "s 7:8 link",
    ]);
}

#[test]
fn guest_root_searches_another_guest_users_directory_as_natively() {
    if !is_root() {
        skip!("needs root");
    }
    let native = native("other", None, &[]);
    let out = supervised("other", &AUTO).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&["stat ok", "rmdir ok", "rename out ok", "chown ok"]);
}

/// A guest root without CAP_DAC_OVERRIDE (`--cap-drop`; natively
/// `setpriv` dropping it and CAP_DAC_READ_SEARCH from the bounding set):
/// its own mode-000 directory stays closed.
#[test]
fn guest_root_without_dac_override_is_refused_as_natively() {
    if !is_root() || !have("setpriv") {
        skip!("needs root and setpriv");
    }
    let drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"];
    let native = native("zero", None, &drop);
    let out = supervised("zero", &AUTO)
        .sup(&["--cap-drop", "DAC_OVERRIDE"])
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&ALL_REFUSED);
}

/// An unprivileged guest gets no search: as `tester` (an unprivileged
/// invoker), and as root with one id (`--userns-range none`), as the
/// user tester natively.
#[test]
fn an_unprivileged_guest_is_refused_as_natively() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    let native = native("zero", Some((uid, gid)), &[]);
    native.assert_lines(&ALL_REFUSED);
    let as_tester = supervised("zero", &[])
        .bin(&bin)
        .user(uid, gid)
        .supervised()
        .ok("supervised as tester");
    assert_eq!(as_tester.stdout, native.stdout, "{}", as_tester.dump());
    let one_id = supervised("zero", &["--userns-range", "none"])
        .supervised()
        .ok("supervised with one id");
    assert_eq!(one_id.stdout, native.stdout, "{}", one_id.dump());
}

/// In a `--rw` directory (idmapped: its owner, host root, is the guest's
/// root; other host ids have no guest id), the guest root searches a
/// mode-000 directory of host root's, and not one of an unmapped owner,
/// which it sees as 65534: in a container with the same mapping the
/// kernel answers the same.
#[test]
fn a_directory_without_a_guest_owner_stays_closed() {
    if !is_root() {
        skip!("needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, owner) in [("mine", 0), ("theirs", 1000)] {
        let sub = dir.path().join(name);
        std::fs::create_dir_all(sub.join("x")).unwrap();
        std::os::unix::fs::chown(&sub, Some(owner), Some(owner)).unwrap();
        let closed = std::os::unix::fs::PermissionsExt::from_mode(0o000);
        std::fs::set_permissions(&sub, closed).unwrap();
    }
    let script = r#"
for d in mine theirs; do
  rmdir "$1/$d/x" 2>/dev/null; echo "$d $?"
  stat -c "$d %u %a" "$1/$d"
done
"#;
    let p = dir.path().display().to_string();
    let out = Run::sh(script, &[&p])
        .sup(&AUTO)
        .rw(dir.path())
        .supervised()
        .ok("supervised");
    out.assert_lines(&["mine 0", "mine 0 0", "theirs 1", "theirs 65534 0"]);
    assert!(!dir.path().join("mine/x").exists(), "{}", out.dump());
    assert!(dir.path().join("theirs/x").exists(), "{}", out.dump());
}
