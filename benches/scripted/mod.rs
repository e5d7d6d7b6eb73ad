//! The fixtures of the counted benches (`benches/callgrind.rs`): a
//! scripted guest, its memory, a directory tree to resolve in, and the
//! handlers' `Context` over it.
//!
//! Owns: [`Scripted`], a [`Guest`] whose memory is this process's own,
//! read with the supervisor's real guest-memory code (`NotifGuest`'s
//! `process_vm_readv` on this thread), and whose cwd, umask and ids are
//! fixed answers (it has no descriptors); [`Memory`], page-aligned guest memory;
//! [`View`], a tree in a fresh temporary directory with a `Context` whose
//! view root it is. Does not own what is measured (the bench file).
//!
//! Everything here runs in a bench's setup, outside the counted function,
//! and gives the same counts run after run: no pids, times or addresses
//! reach the measured path (the guest's ids are constants; each string
//! starts at the same offset of a page, so a read splits the same way
//! wherever the allocator put it; temporary names have a fixed length).
//! `sys` stands in for `openat2` where valgrind does not know it.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use sandbox::trap::NotifGuest;
use sandbox_syscalls::{dispatch, Context, Guest, Reply, SyscallArgs};

mod sys;

const PAGE: usize = 4096;
/// Where in its page a string starts (a page's first bytes are not
/// special; an offset keeps the case general).
const PAGE_OFFSET: usize = 64;
/// The guest's umask.
const UMASK: u32 = 0o022;

/// Guest memory: strings and structs at page-aligned places of a buffer
/// this process owns (the guest and the supervisor are one process here).
pub struct Memory {
    buf: Vec<u8>,
    /// Index in `buf` of the first page boundary.
    first_page: usize,
    next_page: usize,
}

impl Memory {
    pub fn new(pages: usize) -> Memory {
        let buf = vec![0u8; (pages + 1) * PAGE];
        let first_page = (PAGE - buf.as_ptr() as usize % PAGE) % PAGE;
        Memory {
            buf,
            first_page,
            next_page: 0,
        }
    }

    /// Puts `bytes` at [`PAGE_OFFSET`] of the next free page; its address.
    pub fn put(&mut self, bytes: &[u8]) -> u64 {
        let at = self.first_page + self.next_page * PAGE + PAGE_OFFSET;
        assert!(at + bytes.len() <= self.buf.len(), "bench memory full");
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.next_page += bytes.len().div_ceil(PAGE).max(1);
        self.buf[at..].as_ptr() as u64
    }

    /// A NUL-terminated string; its address.
    pub fn cstr(&mut self, s: &str) -> u64 {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.put(&v)
    }
}

/// The trapped thread, scripted: memory through the supervisor's own
/// reader on this thread; fixed answers for the rest.
pub struct Scripted {
    tid: i32,
    /// Stands for the seccomp listener, which memory access never uses.
    listener: OwnedFd,
    cwd: OwnedFd,
}

impl Scripted {
    /// A guest whose working directory is `cwd`.
    pub fn new(cwd: &Path) -> Scripted {
        Scripted {
            tid: nix::unistd::gettid().as_raw(),
            listener: open(Path::new("/dev/null"), libc::O_RDONLY),
            cwd: open(cwd, libc::O_PATH | libc::O_DIRECTORY),
        }
    }

    /// The supervisor's view of this thread, for its memory.
    fn notif(&self) -> NotifGuest<'_> {
        NotifGuest {
            listener: self.listener.as_fd(),
            id: 0,
            tid: self.tid,
            on_block: &|| {},
        }
    }
}

impl Guest for Scripted {
    fn tid(&self) -> i32 {
        1
    }
    fn read_mem(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.notif().read_mem(addr, buf)
    }
    fn write_mem(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        self.notif().write_mem(addr, data)
    }
    fn read_path(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        self.notif().read_path(addr)
    }
    fn still_valid(&self) -> bool {
        true
    }
    /// The benches' calls name no descriptor of the guest's.
    fn fd_path(&self, _fd: i32) -> Result<OwnedFd, Errno> {
        Err(Errno::EBADF)
    }
    fn dup_fd(&self, _fd: i32) -> Result<OwnedFd, Errno> {
        Err(Errno::EBADF)
    }
    fn cwd(&self) -> Result<OwnedFd, Errno> {
        self.cwd.try_clone().map_err(|_| Errno::EMFILE)
    }
    fn umask(&self) -> Result<u32, Errno> {
        Ok(UMASK)
    }
    fn ns_ids(&self) -> Result<(i32, i32), Errno> {
        Ok((1, 1))
    }
    fn host_tgid(&self) -> Result<i32, Errno> {
        Ok(1)
    }
}

/// A tree to resolve in, the handlers' context whose view root it is,
/// and a guest whose cwd is that root.
pub struct View {
    /// Keeps the tree until the bench is over.
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ctx: Context,
    pub guest: Scripted,
    pub mem: Memory,
}

impl View {
    /// The tree: `file`, `link` -> `file`, `dir/sub/inner`, `dlink` ->
    /// `dir`, `a/b/c/d/e/deep`, `warm` (for a first call outside the
    /// count), `victim` (for rename) and the empty directory `gone` (for
    /// rmdir). Directories are cached as on the
    /// sandbox's own tmpfs, whatever file system holds the tree.
    pub fn new() -> View {
        let dir = tempfile::Builder::new()
            .prefix("sandbox-counted-")
            .tempdir()
            .expect("bench tempdir");
        let root = dir.path().join("root");
        for d in ["dir/sub", "a/b/c/d/e", "gone"] {
            fs::create_dir_all(root.join(d)).expect("bench tree");
        }
        for f in ["file", "dir/sub/inner", "a/b/c/d/e/deep", "warm", "victim"] {
            fs::write(root.join(f), b"bench").expect("bench tree");
        }
        symlink("file", root.join("link")).expect("bench tree");
        symlink("dir", root.join("dlink")).expect("bench tree");
        let (uid, gid) = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        let ctx = Context::with_cache_policy(
            open(&root, libc::O_PATH | libc::O_DIRECTORY),
            uid,
            gid,
            vfs::CachePolicy::All,
        );
        View {
            guest: Scripted::new(&root),
            _dir: dir,
            root,
            ctx,
            mem: Memory::new(16),
        }
    }

    /// Serves one call (the handlers' entry point).
    pub fn call(&self, nr: i64, args: [u64; 6]) -> Reply {
        dispatch(&self.ctx, &self.guest, &SyscallArgs { nr, args })
    }

    /// `openat(AT_FDCWD, path, flags, mode)` with `path` put in guest
    /// memory now; the call's registers.
    pub fn openat(&mut self, path: &str, flags: i32, mode: u32) -> [u64; 6] {
        let p = self.mem.cstr(path);
        [
            libc::AT_FDCWD as i64 as u64,
            p,
            flags as u64,
            mode as u64,
            0,
            0,
        ]
    }

    /// A first open and a first failed lookup, outside the count: what a
    /// process does once (lazy statics, the first allocations) is not
    /// what a call costs.
    pub fn warm_up(&mut self) {
        let a = self.openat("/warm", libc::O_RDONLY, 0);
        self.call(libc::SYS_openat, a);
        let a = self.openat("/dir/sub/warm-missing", libc::O_RDONLY, 0);
        self.call(libc::SYS_openat, a);
    }
}

/// Opens `path` with `flags` (and `O_CLOEXEC`), for fixtures.
pub fn open(path: &Path, flags: i32) -> OwnedFd {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .unwrap_or_else(|e| panic!("open {path:?}: {e}"));
    OwnedFd::from(file)
}
