//! Escapes stay inside: with a tempdir as the view's root, no handler
//! reaches or changes anything outside it, whatever the guest names.

use std::os::unix::fs::symlink;

use super::*;

struct View {
    _t: tempfile::TempDir,
    outside: PathBuf,
    view: PathBuf,
}

fn view() -> View {
    process_umask();
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    let view = outside.join("view");
    fs::create_dir_all(view.join("sub/deeper")).unwrap();
    fs::write(outside.join("secret"), b"secret").unwrap();
    fs::create_dir(outside.join("outdir")).unwrap();
    fs::write(view.join("file"), b"inside").unwrap();
    symlink("/", view.join("toroot")).unwrap();
    symlink("../../../..", view.join("up")).unwrap();
    symlink("/../secret", view.join("abs")).unwrap();
    symlink(&outside, view.join("hostpath")).unwrap();
    symlink("../secret", view.join("dangling")).unwrap();
    View {
        _t: t,
        outside,
        view,
    }
}

/// The printed path of the file an open answered must be in the view.
fn opened_inside(f: &Fake, v: &View, p: &str, flags: i32) -> Result<(), Errno> {
    let a = f.g.put(&[p.as_bytes(), &[0]].concat());
    match dispatch(
        &f.ctx,
        &f.g,
        &SyscallArgs {
            nr: libc::SYS_open,
            args: [a, flags as u64, 0o600, 0, 0, 0],
        },
    ) {
        Reply::InstallFd { fd, .. } => {
            let target = fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
            assert!(target.starts_with(&v.view), "{p} opened {target:?}");
            Ok(())
        }
        Reply::Error(e) => Err(e),
        r => panic!("{r:?}"),
    }
}

#[test]
fn escapes_stay_inside() {
    let v = view();
    let before = snapshot(&v.outside.join("outdir"));
    let secret_meta = fs::metadata(v.outside.join("secret")).unwrap();
    let mut f = Fake::new(&v.view.join("sub/deeper"));
    f.ctx = ctx_root(&v.view);

    for p in [
        "/../secret",
        "/toroot/../secret",
        "/up/secret",
        "/abs",
        "/dangling",
        "/hostpath/secret",
        "../../../secret",
        "/sub/../../secret",
    ] {
        assert_eq!(
            opened_inside(&f, &v, p, libc::O_RDONLY),
            Err(Errno::ENOENT),
            "{p}"
        );
    }
    assert!(opened_inside(&f, &v, "/toroot/file", libc::O_RDONLY).is_ok());
    assert!(opened_inside(&f, &v, "../../up/up/file", libc::O_RDONLY).is_ok());
    // Creating through escaping links lands inside.
    assert!(opened_inside(&f, &v, "/abs", libc::O_WRONLY | libc::O_CREAT).is_ok());
    assert!(v.view.join("secret").exists());
    fs::remove_file(v.view.join("secret")).unwrap();
    assert!(opened_inside(&f, &v, "/up/outdir", libc::O_PATH).is_err());

    let s = |f: &Fake, x: &str| f.g.put(&[x.as_bytes(), &[0]].concat());
    let at = libc::AT_FDCWD as i64 as u64;
    let cases: Vec<(i64, [u64; 6])> = vec![
        (libc::SYS_rmdir, [s(&f, "/toroot/../outdir"), 0, 0, 0, 0, 0]),
        (libc::SYS_rmdir, [s(&f, "../../../outdir"), 0, 0, 0, 0, 0]),
        (libc::SYS_unlinkat, [at, s(&f, "/up/secret"), 0, 0, 0, 0]),
        (
            libc::SYS_rename,
            [s(&f, "/file"), s(&f, "/up/outdir/stolen"), 0, 0, 0, 0],
        ),
        (
            libc::SYS_link,
            [s(&f, "/up/secret"), s(&f, "/x"), 0, 0, 0, 0],
        ),
        (
            libc::SYS_linkat,
            [
                at,
                s(&f, "/abs"),
                at,
                s(&f, "/y"),
                libc::AT_SYMLINK_FOLLOW as u64,
                0,
            ],
        ),
        (
            libc::SYS_symlink,
            [s(&f, "/"), s(&f, "/hostpath/outdir/l"), 0, 0, 0, 0],
        ),
        (libc::SYS_chmod, [s(&f, "/abs"), 0o777, 0, 0, 0, 0]),
        (
            libc::SYS_chmod,
            [s(&f, "/hostpath/secret"), 0o777, 0, 0, 0, 0],
        ),
        (
            libc::SYS_fchmodat,
            [at, s(&f, "/toroot/../secret"), 0o777, 0, 0, 0],
        ),
        (
            libc::SYS_chown,
            [
                s(&f, "/up/secret"),
                u32::MAX as u64,
                u32::MAX as u64,
                0,
                0,
                0,
            ],
        ),
        (
            libc::SYS_open,
            [s(&f, "../../../../secret"), libc::O_PATH as u64, 0, 0, 0, 0],
        ),
        (
            libc::SYS_open,
            [s(&f, "/hostpath"), libc::O_PATH as u64, 0, 0, 0, 0],
        ),
        (
            libc::SYS_symlink,
            [s(&f, "x"), s(&f, "/up/outdir/sym"), 0, 0, 0, 0],
        ),
    ];
    for (nr, a) in cases {
        let r = f.call(nr, a);
        assert!(matches!(r, Outcome::Err(Errno::ENOENT)), "{nr}: {r:?}");
    }
    assert_eq!(snapshot(&v.outside.join("outdir")), before);
    let after = fs::metadata(v.outside.join("secret")).unwrap();
    assert_eq!(
        (after.mode(), after.len(), after.mtime()),
        (secret_meta.mode(), secret_meta.len(), secret_meta.mtime())
    );
    assert_eq!(fs::read(v.outside.join("secret")).unwrap(), b"secret");
}

#[test]
fn dead_notifications_change_nothing() {
    let v = view();
    let mut f = Fake::new(&v.view);
    f.ctx = ctx_root(&v.view);
    let before = snapshot(&v.view);
    f.g.valid.set(false);
    let s = |f: &Fake, x: &str| f.g.put(&[x.as_bytes(), &[0]].concat());
    let at = libc::AT_FDCWD as i64 as u64;
    let cases: Vec<(i64, [u64; 6])> = vec![
        (libc::SYS_rmdir, [s(&f, "/sub/deeper"), 0, 0, 0, 0, 0]),
        (libc::SYS_unlinkat, [at, s(&f, "/file"), 0, 0, 0, 0]),
        (
            libc::SYS_rename,
            [s(&f, "/file"), s(&f, "/moved"), 0, 0, 0, 0],
        ),
        (libc::SYS_link, [s(&f, "/file"), s(&f, "/hard"), 0, 0, 0, 0]),
        (libc::SYS_symlink, [s(&f, "x"), s(&f, "/sym"), 0, 0, 0, 0]),
        (libc::SYS_chmod, [s(&f, "/file"), 0o777, 0, 0, 0, 0]),
        (libc::SYS_fchmodat, [at, s(&f, "/file"), 0o777, 0, 0, 0]),
        (
            libc::SYS_chown,
            [s(&f, "/file"), u32::MAX as u64, u32::MAX as u64, 0, 0, 0],
        ),
        (
            libc::SYS_open,
            [
                s(&f, "/file"),
                (libc::O_WRONLY | libc::O_TRUNC) as u64,
                0,
                0,
                0,
                0,
            ],
        ),
        (
            libc::SYS_open,
            [
                s(&f, "/new"),
                (libc::O_RDONLY | libc::O_CREAT) as u64,
                0o600,
                0,
                0,
                0,
            ],
        ),
    ];
    for (nr, a) in cases {
        assert_eq!(f.call(nr, a), Outcome::Err(Errno::ENOENT), "{nr}");
    }
    assert_eq!(snapshot(&v.view), before);
}

#[test]
fn every_serviced_call_has_a_handler() {
    use crate::policy::{self, Trapped};
    let f = Fake::new(Path::new("/tmp"));
    let mut missing = Vec::new();
    for (nr, _) in policy::table() {
        let nr = nr.id() as i64;
        if policy::trapped(nr) != Trapped::Service {
            continue;
        }
        // All-zero arguments: NULL paths and buffers, fd 0.
        let r = dispatch(&f.ctx, &f.g, &SyscallArgs { nr, args: [0; 6] });
        if matches!(r, Reply::Error(Errno::ENOSYS)) {
            missing.push(policy::name(nr));
        }
    }
    assert!(missing.is_empty(), "no handler for {missing:?}");
}

/// A number the filter never traps for service (`creat` and `unlink`
/// pass, `mount` is denied) reaches no handler.
#[test]
fn calls_never_serviced_reach_no_handler() {
    use crate::policy::{self, Trapped};
    let f = Fake::new(Path::new("/tmp"));
    let mut routed = Vec::new();
    for (nr, _) in policy::table() {
        let nr = nr.id() as i64;
        if policy::trapped(nr) == Trapped::Service {
            continue;
        }
        let r = dispatch(&f.ctx, &f.g, &SyscallArgs { nr, args: [0; 6] });
        if !matches!(r, Reply::Error(Errno::ENOSYS)) {
            routed.push(policy::name(nr));
        }
    }
    assert!(routed.is_empty(), "handlers never reached: {routed:?}");
}
