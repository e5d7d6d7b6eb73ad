//! The comparison harness: the two [`Side`]s (native and through the
//! handlers), the runners that compare them, tree snapshots, and the
//! argument builders the cases share.

use super::*;

// ---- The two sides. --------------------------------------------------------

/// The outcome of one call, in a comparable form.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Val(i64),
    Err(Errno),
    /// An installed or returned descriptor: status flags, close-on-exec,
    /// and the file's type+mode and size.
    Fd {
        flags: i32,
        cloexec: bool,
        mode: u32,
        size: i64,
        id: (u64, u64),
    },
}

pub trait Side {
    /// A NUL-terminated string in this side's memory.
    fn cstr(&mut self, s: &[u8]) -> u64;
    /// Raw bytes in this side's memory.
    fn bytes(&mut self, b: &[u8]) -> u64;
    /// Read back `len` bytes.
    fn read(&self, addr: u64, len: usize) -> Vec<u8>;
    /// A descriptor of `root/rel` opened O_RDONLY (a directory or a file).
    fn fd_of(&mut self, rel: &str) -> i32;
    /// The descriptor relative paths of the *at calls start from for
    /// "the cwd" (the guest: AT_FDCWD with its cwd at the root; natively:
    /// a descriptor of the root, since the test's cwd is elsewhere).
    fn cwd(&self) -> i32;
    fn root(&self) -> &Path;
    fn call(&mut self, nr: i64, a: [u64; 6]) -> Outcome;
    /// Hand `fd` to this side (natively: keep it; the guest: as one of
    /// its descriptors); the number to pass.
    fn adopt(&mut self, fd: OwnedFd) -> i32;

    /// The absolute host path of `root/rel`.
    fn path(&mut self, rel: &str) -> u64 {
        let p = if rel.is_empty() {
            self.root().to_path_buf()
        } else {
            self.root().join(rel)
        };
        let mut b = p.into_os_string().into_encoded_bytes();
        if rel.ends_with('/') {
            b.push(b'/');
        }
        self.cstr(&b)
    }
    fn s(&mut self, s: &str) -> u64 {
        self.cstr(s.as_bytes())
    }
    fn buf(&mut self, len: usize) -> u64 {
        self.bytes(&vec![0u8; len])
    }
}

pub fn fd_outcome(fd: OwnedFd, cloexec: bool) -> Outcome {
    // SAFETY: (test only) fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    let st = vfs::sys::fstat(fd.as_fd()).unwrap();
    Outcome::Fd {
        flags,
        cloexec,
        mode: st.st_mode,
        size: st.st_size,
        id: (st.st_dev, st.st_ino),
    }
}

/// Syscalls that return a new descriptor.
pub fn returns_fd(nr: i64) -> bool {
    matches!(nr, libc::SYS_open | libc::SYS_openat | libc::SYS_openat2)
}

pub struct Native {
    root: PathBuf,
    mem: Vec<Box<[u8]>>,
    fds: Vec<OwnedFd>,
    cwd: RawFd,
}

impl Native {
    pub fn new(root: &Path) -> Native {
        process_umask();
        let cwd = open_path(root, libc::O_RDONLY | libc::O_DIRECTORY);
        let raw = cwd.as_raw_fd();
        Native {
            root: root.to_path_buf(),
            mem: Vec::new(),
            fds: vec![cwd],
            cwd: raw,
        }
    }
}

impl Side for Native {
    fn cstr(&mut self, s: &[u8]) -> u64 {
        let mut v = s.to_vec();
        v.push(0);
        self.bytes(&v)
    }
    fn bytes(&mut self, b: &[u8]) -> u64 {
        let bx: Box<[u8]> = b.to_vec().into_boxed_slice();
        let p = bx.as_ptr() as u64;
        self.mem.push(bx);
        p
    }
    fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let m = self
            .mem
            .iter()
            .find(|m| m.as_ptr() as u64 == addr)
            .expect("a buffer of ours");
        m[..len].to_vec()
    }
    fn fd_of(&mut self, rel: &str) -> i32 {
        let fd = open_path(&self.root.join(rel), libc::O_RDONLY);
        let raw = fd.as_raw_fd();
        self.fds.push(fd);
        raw
    }
    fn cwd(&self) -> i32 {
        self.cwd
    }
    fn adopt(&mut self, fd: OwnedFd) -> i32 {
        let raw = fd.as_raw_fd();
        self.fds.push(fd);
        raw
    }
    fn root(&self) -> &Path {
        &self.root
    }
    fn call(&mut self, nr: i64, mut a: [u64; 6]) -> Outcome {
        native_umask(nr, &mut a);
        // SAFETY: (test only) the kernel validates every argument; the
        // pointers are ours or deliberately bad.
        let r = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
        if r < 0 {
            return Outcome::Err(Errno::last());
        }
        if returns_fd(nr) {
            // SAFETY: (test only) the kernel just returned this descriptor.
            let fd = unsafe { OwnedFd::from_raw_fd(r as RawFd) };
            // SAFETY: (test only) fcntl on a descriptor we own.
            let fdflags = unsafe { libc::fcntl(r as RawFd, libc::F_GETFD) };
            return fd_outcome(fd, fdflags & libc::FD_CLOEXEC != 0);
        }
        Outcome::Val(r)
    }
}

pub struct Fake {
    root: PathBuf,
    pub g: FakeGuest,
    pub ctx: Context,
    next_fd: i32,
}

impl Fake {
    pub fn new(root: &Path) -> Fake {
        Fake {
            root: root.to_path_buf(),
            g: FakeGuest::new(root),
            ctx: ctx_root(Path::new("/")),
            next_fd: 100,
        }
    }
}

impl Side for Fake {
    fn cstr(&mut self, s: &[u8]) -> u64 {
        let mut v = s.to_vec();
        v.push(0);
        self.g.put(&v)
    }
    fn bytes(&mut self, b: &[u8]) -> u64 {
        self.g.put(b)
    }
    fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.g.read_mem(addr, &mut v).unwrap();
        v
    }
    fn fd_of(&mut self, rel: &str) -> i32 {
        let n = self.next_fd;
        self.next_fd += 1;
        self.g
            .give_fd(n, open_path(&self.root.join(rel), libc::O_RDONLY));
        n
    }
    fn cwd(&self) -> i32 {
        libc::AT_FDCWD
    }
    fn adopt(&mut self, fd: OwnedFd) -> i32 {
        let n = self.next_fd;
        self.next_fd += 1;
        self.g.give_fd(n, fd);
        n
    }
    fn root(&self) -> &Path {
        &self.root
    }
    fn call(&mut self, nr: i64, args: [u64; 6]) -> Outcome {
        match dispatch(&self.ctx, &self.g, &SyscallArgs { nr, args }) {
            Reply::Value(v) => Outcome::Val(v),
            Reply::Error(e) => Outcome::Err(e),
            Reply::InstallFd { fd, cloexec } => fd_outcome(fd, cloexec),
            Reply::Continue => panic!("a file handler answered Continue"),
            Reply::Deny(e) => Outcome::Err(e),
            Reply::Answered(v) => Outcome::Val(v),
        }
    }
}

// ---- Runners. ---------------------------------------------------------------

/// One case: build the call on a side; name the output buffers to compare.
pub type Case<'a> = &'a dyn Fn(&mut dyn Side) -> (i64, [u64; 6], Vec<(u64, usize)>);

/// Run `case` natively and through the handlers on the same tree (calls
/// that change nothing); results and output buffers must be equal.
pub fn same(root: &Path, what: &str, case: Case<'_>) {
    process_umask();
    let mut n = Native::new(root);
    let mut f = Fake::new(root);
    let (nr, a, outs) = case(&mut n);
    let rn = n.call(nr, a);
    let bn: Vec<_> = outs.iter().map(|&(p, l)| n.read(p, l)).collect();
    let (nr, a, outs) = case(&mut f);
    let rf = f.call(nr, a);
    let bf: Vec<_> = outs.iter().map(|&(p, l)| f.read(p, l)).collect();
    assert_eq!(rn, rf, "{what}: native vs handler");
    assert_eq!(bn, bf, "{what}: output buffers");
}

/// Run `case` natively on one tree and through the handlers on an
/// identical twin; results and the trees afterwards must agree.
pub fn twin(setup: &dyn Fn(&Path), what: &str, case: Case<'_>) {
    // Each tree one level down, so that `..` stays on its own side.
    process_umask();
    let t = tempfile::tempdir().unwrap();
    let (nt, gt) = (t.path().join("n"), t.path().join("g"));
    let (np, gp) = (nt.join("root"), gt.join("root"));
    for p in [&np, &gp] {
        fs::create_dir_all(p).unwrap();
        setup(p);
    }
    let mut n = Native::new(&np);
    let mut f = Fake::new(&gp);
    let (nr, a, _) = case(&mut n);
    let rn = n.call(nr, a);
    let (nr, a, _) = case(&mut f);
    let rf = f.call(nr, a);
    assert_eq!(loose(rn), loose(rf), "{what}: native vs handler");
    assert_eq!(snapshot(&nt), snapshot(&gt), "{what}: trees afterwards");
}

/// An outcome without the file's identity (twins differ in inodes).
pub fn loose(o: Outcome) -> Outcome {
    match o {
        Outcome::Fd {
            flags,
            cloexec,
            mode,
            size,
            ..
        } => Outcome::Fd {
            flags,
            cloexec,
            mode,
            size,
            id: (0, 0),
        },
        o => o,
    }
}

/// Every entry under `root`: type, permissions, size, link target, links.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let Ok(m) = fs::symlink_metadata(&p) else {
                out.insert(rel, "unreadable".into());
                continue;
            };
            let ft = m.file_type();
            let desc = if ft.is_symlink() {
                format!("link -> {}", fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p.clone());
                format!("dir {:o}", m.permissions().mode() & 0o7777)
            } else {
                format!(
                    "{:o} {:o} size {} nlink {}",
                    m.mode() & libc::S_IFMT,
                    m.mode() & 0o7777,
                    m.len(),
                    m.nlink()
                )
            };
            out.insert(rel, desc);
        }
    }
    out
}

/// The tree most cases start from.
pub fn std_tree(root: &Path) {
    use std::os::unix::fs::symlink;
    fs::create_dir_all(root.join("dir/sub")).unwrap();
    fs::create_dir(root.join("empty")).unwrap();
    fs::write(root.join("file"), b"hello").unwrap();
    fs::write(root.join("dir/inner"), b"inner").unwrap();
    fs::set_permissions(root.join("file"), fs::Permissions::from_mode(0o640)).unwrap();
    symlink("file", root.join("link")).unwrap();
    symlink("dir", root.join("dlink")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    symlink("../file", root.join("dir/up")).unwrap();
}

/// A [`std_tree`] one level down in a tempdir (so `..` is ours, not /tmp).
pub struct Tree(#[allow(dead_code)] tempfile::TempDir, PathBuf);

impl Tree {
    pub fn path(&self) -> &Path {
        &self.1
    }
}

/// A fresh [`Tree`], for cases that change nothing (see [`same`]).
pub fn tree() -> Tree {
    process_umask();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    std_tree(&root);
    Tree(t, root)
}

/// A path of `n` bytes ("a/a/a..."), for ENAMETOOLONG.
pub fn long_path(n: usize) -> String {
    let mut s = "a/".repeat(n / 2);
    s.truncate(n);
    s
}

/// A path argument, built on either side.
#[derive(Clone, Copy, Debug)]
pub enum P {
    /// `root/rel` as an absolute host path.
    Abs(&'static str),
    /// `rel` as given (relative to the dirfd).
    Rel(&'static str),
    /// An absolute path that is the same on both sides.
    Raw(&'static str),
    /// An unmapped address.
    Bad,
    Null,
    /// A relative path of this many bytes.
    Long(usize),
    /// An absolute path of this many bytes, under the root.
    LongAbs(usize),
}

pub fn pa(s: &mut dyn Side, p: P) -> u64 {
    match p {
        P::Abs(r) => s.path(r),
        P::Rel(r) | P::Raw(r) => s.s(r),
        P::Bad => 1,
        P::Null => 0,
        P::Long(n) => s.s(&long_path(n)),
        P::LongAbs(n) => {
            let mut p = s.root().to_string_lossy().into_owned() + "/";
            p += &long_path(n.saturating_sub(p.len()));
            s.s(&p)
        }
    }
}

/// A dirfd argument.
#[derive(Clone, Copy, Debug)]
pub enum D {
    /// "The cwd" (see [`Side::cwd`]).
    Cwd,
    /// A descriptor of `root/rel`.
    Fd(&'static str),
    /// A descriptor number nobody holds.
    Bad,
    /// A negative number other than AT_FDCWD.
    Neg,
}

pub fn da(s: &mut dyn Side, d: D) -> u64 {
    let fd = match d {
        D::Cwd => s.cwd(),
        D::Fd(r) => s.fd_of(r),
        D::Bad => 9999,
        D::Neg => -5,
    };
    fd as i64 as u64
}

/// Paths most cases try, relative to the tree's root.
pub const PATHS: &[&str] = &[
    "file",
    "link",
    "dir",
    "dlink",
    "dlink/",
    "dlink/inner",
    "dangling",
    "loop1",
    "missing",
    "file/",
    "file/x",
    "dir/sub/",
    "dir/up",
    "dir/../file",
    "dir/sub/../../link",
    ".",
    "..",
    "dir/.",
    "empty",
];
