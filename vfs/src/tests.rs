//! Resolver tests (a `cfg(test)` module): confinement to a tempdir root (proptest against the
//! kernel's own RESOLVE_IN_ROOT), the relative-path fallback, and the
//! procfs walk (with the host's "/" as the root, so /proc is real).

use std::ffi::{CStr, CString};
use std::fs;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::symlink;
use std::path::Path;

use crate::resolve::flags::{IN_ROOT, NO_SYMLINKS};
use crate::{sys, At, Caller, Resolver};
use nix::errno::Errno;
use proptest::prelude::*;

struct Me;
impl Caller for Me {
    fn proc_ids(&self) -> Result<(i32, i32), Errno> {
        Ok((std::process::id() as i32, nix::unistd::gettid().as_raw()))
    }
}

fn opath(p: &Path) -> OwnedFd {
    let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    sys::openat(cwd(), &c, libc::O_PATH | libc::O_CLOEXEC, 0).unwrap()
}

fn cwd() -> BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is a valid "descriptor" for the *at calls.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

fn id(fd: &OwnedFd) -> (u64, u64) {
    let st = sys::fstat(fd.as_fd()).unwrap();
    (st.st_dev, st.st_ino)
}

fn printed(fd: &OwnedFd) -> Vec<u8> {
    let mut buf = [0u8; 4096];
    let n = sys::fd_path(fd.as_fd(), &mut buf).unwrap();
    buf[..n].to_vec()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn lookup(
    r: &Resolver,
    dir: Option<BorrowedFd<'_>>,
    p: &str,
    follow: bool,
) -> Result<OwnedFd, Errno> {
    r.lookup(&At { dir, caller: &Me }, &c(p), follow)
}

// ---- The proc walk, with the host root as the view. ----------------------

#[test]
fn proc_self_is_the_caller() {
    let r = Resolver::new(opath(Path::new("/")));
    let fd = r
        .open(
            &At {
                dir: None,
                caller: &Me,
            },
            c"/proc/self/status",
            libc::O_RDONLY,
            0,
            0,
        )
        .unwrap();
    let text = fs::read_to_string(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
    assert!(
        text.contains(&format!("\nPid:\t{}\n", std::process::id())),
        "{text}"
    );
    let fd = lookup(&r, None, "/proc/thread-self/status", true).unwrap();
    assert!(printed(&fd).ends_with(b"/status"));
    let link = lookup(&r, None, "/proc/self", false).unwrap();
    let st = sys::fstat(link.as_fd()).unwrap();
    assert_eq!(st.st_mode & libc::S_IFMT, libc::S_IFLNK);
    // /proc/mounts -> self/mounts
    assert!(lookup(&r, None, "/proc/mounts", true).is_ok());
}

#[test]
fn magic_links_are_followed() {
    let t = tempfile::tempdir().unwrap();
    fs::create_dir(t.path().join("d")).unwrap();
    fs::write(t.path().join("d/f"), b"x").unwrap();
    let dir = opath(&t.path().join("d"));
    let file = opath(&t.path().join("d/f"));
    let r = Resolver::new(opath(Path::new("/")));
    let pid = std::process::id();
    let a = lookup(
        &r,
        None,
        &format!("/proc/self/fd/{}", file.as_raw_fd()),
        true,
    )
    .unwrap();
    assert_eq!(id(&a), id(&file));
    let a = lookup(
        &r,
        None,
        &format!("/proc/{pid}/fd/{}/f", dir.as_raw_fd()),
        true,
    )
    .unwrap();
    assert_eq!(id(&a), id(&file));
    let a = lookup(&r, None, &format!("/dev/fd/{}/./f", dir.as_raw_fd()), true).unwrap();
    assert_eq!(id(&a), id(&file));
    let a = lookup(&r, None, &format!("/dev/fd/{}/..", dir.as_raw_fd()), true).unwrap();
    assert_eq!(id(&a), id(&opath(t.path())));
    // A user symlink to a magic link path.
    symlink(
        format!("/proc/{pid}/fd/{}", file.as_raw_fd()),
        t.path().join("l"),
    )
    .unwrap();
    let a = lookup(&r, None, t.path().join("l").to_str().unwrap(), true).unwrap();
    assert_eq!(id(&a), id(&file));
    // Not followed: the link itself.
    let a = lookup(
        &r,
        None,
        &format!("/proc/self/fd/{}", file.as_raw_fd()),
        false,
    )
    .unwrap();
    assert_eq!(
        sys::fstat(a.as_fd()).unwrap().st_mode & libc::S_IFMT,
        libc::S_IFLNK
    );
    // Trailing slash on a file through a magic link.
    let e = lookup(
        &r,
        None,
        &format!("/proc/self/fd/{}/", file.as_raw_fd()),
        true,
    )
    .unwrap_err();
    assert_eq!(e, Errno::ENOTDIR);
    // Guest RESOLVE_NO_MAGICLINKS.
    let p = c(&format!("/proc/self/fd/{}", file.as_raw_fd()));
    let e = r
        .open(
            &At {
                dir: None,
                caller: &Me,
            },
            &p,
            libc::O_PATH,
            0,
            2,
        )
        .unwrap_err();
    assert_eq!(e, Errno::ELOOP);
    // Opening for write through the magic link, as `echo > /dev/stdout` does.
    let w = opath(&t.path().join("d/f"));
    let p = c(&format!("/proc/self/fd/{}", w.as_raw_fd()));
    let fd = r
        .open(
            &At {
                dir: None,
                caller: &Me,
            },
            &p,
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o644,
            0,
        )
        .unwrap();
    assert_eq!(id(&fd), id(&file));
    assert_eq!(fs::read(t.path().join("d/f")).unwrap(), b"");
}

#[test]
fn relative_fallback_and_parent() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::write(root.join("x"), b"").unwrap();
    fs::write(t.path().join("secret"), b"").unwrap();
    symlink("/x", root.join("a/abs")).unwrap();
    let r = Resolver::new(opath(&root));
    let b = opath(&root.join("a/b"));
    let x = opath(&root.join("x"));
    // `..` past the start directory: resolved in the view.
    assert_eq!(
        id(&lookup(&r, Some(b.as_fd()), "../../x", true).unwrap()),
        id(&x)
    );
    assert_eq!(
        id(&lookup(&r, Some(b.as_fd()), "../../../../x", true).unwrap()),
        id(&x)
    );
    assert_eq!(
        lookup(&r, Some(b.as_fd()), "../../../secret", true).unwrap_err(),
        Errno::ENOENT
    );
    assert_eq!(
        id(&lookup(&r, Some(b.as_fd()), "../abs", true).unwrap()),
        id(&x)
    );
    assert_eq!(
        id(&lookup(&r, None, "/../../a/../x", true).unwrap()),
        id(&x)
    );
    // parent()
    let at = At {
        dir: Some(b.as_fd()),
        caller: &Me,
    };
    let p = r.parent(&at, c"../../new/").unwrap();
    assert_eq!(p.name.to_bytes(), b"new/");
    assert!(p.trailing_slash());
    assert_eq!(
        id(&p.dir.as_fd().try_clone_to_owned().unwrap()),
        id(&opath(&root))
    );
    let p = r.parent(&at, c"plain").unwrap();
    assert_eq!(p.name.to_bytes(), b"plain");
    assert_eq!(p.dir.as_fd().as_raw_fd(), b.as_raw_fd());
    let p = r.parent(&at, c"//").unwrap();
    assert_eq!(p.name.to_bytes(), b"/");
    assert_eq!(r.parent(&at, c"nope/x").unwrap_err(), Errno::ENOENT);
    assert_eq!(r.parent(&at, c"").unwrap_err(), Errno::ENOENT);
    assert_eq!(r.view_path(b.as_fd()).unwrap(), b"/a/b");
}

#[test]
fn loops_and_limits() {
    let t = tempfile::tempdir().unwrap();
    symlink("l2", t.path().join("l1")).unwrap();
    symlink("l1", t.path().join("l2")).unwrap();
    let r = Resolver::new(opath(t.path()));
    assert_eq!(lookup(&r, None, "/l1", true).unwrap_err(), Errno::ELOOP);
    assert!(lookup(&r, None, "/l1", false).is_ok());
}

// ---- Confinement, as a property. -----------------------------------------

#[derive(Clone, Debug)]
enum Node {
    Dir,
    File,
    Link(String),
}

fn comp() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_string),
        2 => Just("..".to_string()),
        1 => Just(".".to_string()),
        1 => Just("".to_string()),
    ]
}

fn rel_path() -> impl Strategy<Value = String> {
    prop::collection::vec(comp(), 1..6).prop_map(|v| v.join("/"))
}

fn any_path() -> impl Strategy<Value = String> {
    (any::<bool>(), rel_path()).prop_map(|(abs, p)| if abs { format!("/{p}") } else { p })
}

fn tree() -> impl Strategy<Value = Vec<(String, Node)>> {
    let node = prop_oneof![
        3 => Just(Node::Dir),
        2 => Just(Node::File),
        3 => any_path().prop_map(Node::Link),
        1 => Just(Node::Link("/".into())),
        1 => Just(Node::Link("../../../..".into())),
    ];
    let name = prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4)
        .prop_map(|v| v.join("/"));
    prop::collection::vec((name, node), 1..20)
}

fn build(root: &Path, t: &[(String, Node)]) {
    for (name, node) in t {
        let p = root.join(name);
        if let Some(parent) = p.parent() {
            if fs::create_dir_all(parent).is_err() {
                continue;
            }
        }
        let _ = match node {
            Node::Dir => fs::create_dir(&p),
            Node::File => fs::write(&p, b""),
            Node::Link(target) => symlink(target, &p),
        };
    }
}

fn under(p: &[u8], root: &[u8]) -> bool {
    p == root || (p.starts_with(root) && p.get(root.len()) == Some(&b'/'))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn resolution_stays_in_the_root_and_matches_the_kernel(
        t in tree(),
        paths in prop::collection::vec((any_path(), any::<bool>(), prop::sample::select(vec!["", "a", "a/b", "c"])), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        fs::write(dir.path().join("c"), b"").unwrap();
        build(&root, &t);
        let rootfd = opath(&root);
        let root_printed = printed(&rootfd);
        let r = Resolver::new(opath(&root));
        for (p, follow, start) in paths {
            if p.is_empty() { continue; }
            let startfd = if start.is_empty() { opath(&root) } else {
                match fs::canonicalize(root.join(start)) {
                    Ok(c) if c.is_dir() && c.starts_with(&root) => opath(&c),
                    _ => opath(&root),
                }
            };
            let dirarg = if p.starts_with('/') { None } else { Some(startfd.as_fd()) };
            let ours = lookup(&r, dirarg, &p, follow);
            if let Ok(fd) = &ours {
                let pr = printed(fd);
                prop_assert!(under(&pr, &root_printed), "{p:?} escaped to {:?}", String::from_utf8_lossy(&pr));
            }
            // The kernel's own answer: the path joined to the start's view path, IN_ROOT.
            let joined = if p.starts_with('/') { p.clone() } else {
                let vp = r.view_path(startfd.as_fd()).unwrap();
                format!("{}/{p}", String::from_utf8(vp).unwrap())
            };
            let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
            let flags = (libc::O_PATH | libc::O_CLOEXEC | nofollow) as u64;
            // (the kernel answers EAGAIN when a rename or mount anywhere raced the lookup)
            let mut want = Err(Errno::EAGAIN);
            for _ in 0..10 {
                want = sys::openat2(rootfd.as_fd(), &c(&joined), flags, 0, IN_ROOT);
                if want.as_ref().err() != Some(&Errno::EAGAIN) { break; }
            }
            match (&ours, &want) {
                (Ok(a), Ok(b)) => prop_assert_eq!(id(a), id(b), "{:?}", p),
                (Err(a), Err(b)) => prop_assert_eq!(a, b, "{:?}", p),
                _ => prop_assert!(false, "{p:?} (start {start:?}): ours {ours:?}, kernel {want:?}"),
            }
            // The component walk agrees too.
            let walked = r.lookup_walk(&At { dir: dirarg, caller: &Me }, &c(&p), follow);
            match (&walked, &want) {
                (Ok(a), Ok(b)) => prop_assert_eq!(id(a), id(b), "walk {:?}", p),
                (Err(a), Err(b)) => prop_assert_eq!(a, b, "walk {:?}", p),
                _ => prop_assert!(false, "walk {p:?} (start {start:?}): ours {walked:?}, kernel {want:?}"),
            }
            // probe() (read opens) agrees, and a path is remembered as
            // plain only when the kernel resolves it without symlinks to
            // an object that is not one.
            let at = At { dir: dirarg, caller: &Me };
            let probed = r.probe(&at, &c(&p), nofollow, r.known(p.as_bytes()));
            match (&probed, &want) {
                (Ok(a), Ok(b)) => prop_assert_eq!(id(&a.fd), id(b), "probe {:?}", p),
                (Err(a), Err(b)) => prop_assert_eq!(a, b, "probe {:?}", p),
                _ => prop_assert!(false, "probe {p:?}: ours {:?}, kernel {want:?}", probed.as_ref().map(|x| &x.fd)),
            }
            if let Ok(probe) = &probed {
                r.remember_plain(&c(&p), probe);
            }
            if r.known(p.as_bytes()) == crate::Known::Plain {
                let strict = sys::openat2(rootfd.as_fd(), &c(&joined), flags, 0, IN_ROOT | NO_SYMLINKS);
                let plain = strict.is_ok_and(|fd| {
                    let st = sys::fstat(fd.as_fd()).unwrap();
                    st.st_mode & libc::S_IFMT != libc::S_IFLNK && Some(id(&fd)) == want.as_ref().ok().map(id)
                });
                prop_assert!(plain, "{p:?} remembered as plain");
            }
            // parent(): the directory is always inside the root.
            if !p.is_empty() {
                let at = At { dir: dirarg, caller: &Me };
                if let Ok(par) = r.parent(&at, &c(&p)) {
                    let d = par.dir.as_fd().try_clone_to_owned().unwrap();
                    let pr = printed(&d);
                    prop_assert!(under(&pr, &root_printed), "parent of {p:?} escaped");
                }
            }
        }
    }
}

/// The size of the file `path` names, through its parent as `r` resolves it.
fn size_via_parent(r: &Resolver, at: &At<'_>, path: &CStr) -> i64 {
    let p = r.parent(at, path).unwrap();
    sys::fstatat(p.dir.as_fd(), p.name, libc::AT_SYMLINK_NOFOLLOW)
        .unwrap()
        .st_size
}

#[test]
fn parent_cache_and_changes() {
    let t = tempfile::tempdir().unwrap();
    fs::create_dir_all(t.path().join("a/b")).unwrap();
    fs::write(t.path().join("a/b/f"), b"1").unwrap();
    fs::create_dir_all(t.path().join("c/b")).unwrap();
    fs::write(t.path().join("c/b/f"), b"22").unwrap();
    let r = Resolver::with_cache(opath(t.path()), crate::CachePolicy::All);
    let at = At {
        dir: None,
        caller: &Me,
    };
    assert_eq!(size_via_parent(&r, &at, c"/a/b/f"), 1);
    // Swap the directories behind the cache's back, then tell it.
    fs::rename(t.path().join("a"), t.path().join("x")).unwrap();
    fs::rename(t.path().join("c"), t.path().join("a")).unwrap();
    assert_eq!(size_via_parent(&r, &at, c"/a/b/f"), 1, "stale until told");
    r.changed();
    assert_eq!(size_via_parent(&r, &at, c"/a/b/f"), 2);
    // Without a cache, never stale.
    let off = Resolver::with_cache(opath(t.path()), crate::CachePolicy::Off);
    assert_eq!(size_via_parent(&off, &at, c"/a/b/f"), 2);
    // Layers: a filesystem other than the root's is not cached.
    let other = Resolver::new(opath(Path::new("/proc/self")));
    assert!(other.parent(&at, c"/fd/0").is_ok());
}

#[test]
fn parent_cache_and_removals() {
    let t = tempfile::tempdir().unwrap();
    fs::create_dir_all(t.path().join("a/b")).unwrap();
    fs::write(t.path().join("a/b/f"), b"1").unwrap();
    symlink("b", t.path().join("a/l")).unwrap();
    let r = Resolver::with_cache(opath(t.path()), crate::CachePolicy::All);
    let at = At {
        dir: None,
        caller: &Me,
    };
    // The first parent lookup of a directory resolves and caches it; the
    // next one is served from the cache, and names the same directory.
    let first = r.parent(&at, c"/a/b/f").unwrap();
    let again = r.parent(&at, c"/a/b/f").unwrap();
    assert!(again.is_cached(), "{again:?}");
    assert_eq!(
        sys::fstat(first.dir.as_fd()).unwrap().st_ino,
        sys::fstat(again.dir.as_fd()).unwrap().st_ino
    );
    assert_eq!(again.name.to_bytes(), b"f");
    // Relative paths and the root are never cached.
    assert!(!r.parent(&at, c"/f").unwrap().is_cached());
    let a = opath(&t.path().join("a"));
    let rel = At {
        dir: Some(a.as_fd()),
        caller: &Me,
    };
    assert!(!r.parent(&rel, c"b/f").unwrap().is_cached());
    // Removing a plain file keeps the cache; a symlink or a directory not.
    let p = r.parent(&at, c"/a/x").unwrap();
    assert!(r.removing_keeps_dirs(p.dir.as_fd(), c"b/f"));
    assert!(!r.removing_keeps_dirs(p.dir.as_fd(), c"l"));
    assert!(!r.removing_keeps_dirs(p.dir.as_fd(), c"b"));
    assert!(!r.removing_keeps_dirs(p.dir.as_fd(), c"missing"));
    // Off: nothing is cached.
    let off = Resolver::with_cache(opath(t.path()), crate::CachePolicy::Off);
    off.parent(&at, c"/a/b/f").unwrap();
    assert!(!off.parent(&at, c"/a/b/f").unwrap().is_cached());
}
