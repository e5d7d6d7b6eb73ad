//! Tests of the file handlers against the host kernel.
//!
//! A [`FakeGuest`] holds its "memory" in a Vec at a fixed base address,
//! and its cwd and descriptors are real host descriptors of a tempdir
//! tree. Each case runs twice through the [`Side`] interface: once
//! natively (raw `syscall(2)` with real pointers) and once through
//! [`dispatch`] with the fake guest, on the same tree or on an identical
//! twin; results, errnos, written buffers and the trees afterwards must
//! agree. The context's root is the host's "/", so an absolute path means
//! the same file on both sides.

mod cases_attr;
mod cases_lookup;
mod cases_model;
mod cases_namei;
mod cases_open;
mod cases_sysinfo;
mod confinement;
mod harness;

pub use harness::*;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fs;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use super::{dispatch, Context};
use crate::guest::{Guest, Reply, SyscallArgs, PATH_MAX};

/// Where the fake guest's memory starts.
const BASE: u64 = 0x1000_0000;
const MEM_SIZE: usize = 1 << 20;

pub struct FakeGuest {
    mem: RefCell<Vec<u8>>,
    next: Cell<usize>,
    cwd: OwnedFd,
    fds: RefCell<HashMap<i32, OwnedFd>>,
    umask: u32,
    pub valid: Cell<bool>,
}

impl FakeGuest {
    pub fn new(cwd: &Path) -> FakeGuest {
        FakeGuest {
            mem: RefCell::new(vec![0; MEM_SIZE]),
            next: Cell::new(64),
            cwd: open_path(cwd, libc::O_PATH | libc::O_DIRECTORY),
            fds: RefCell::new(HashMap::new()),
            umask: process_umask(),
            valid: Cell::new(true),
        }
    }

    /// Copy `b` into guest memory; its address.
    pub fn put(&self, b: &[u8]) -> u64 {
        let at = self.next.get();
        self.mem.borrow_mut()[at..at + b.len()].copy_from_slice(b);
        self.next.set((at + b.len() + 15) & !7);
        BASE + at as u64
    }

    /// Give the guest descriptor `n` for `fd`.
    pub fn give_fd(&self, n: i32, fd: OwnedFd) {
        self.fds.borrow_mut().insert(n, fd);
    }

    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, Errno> {
        let off = addr.checked_sub(BASE).ok_or(Errno::EFAULT)? as usize;
        let end = off.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > MEM_SIZE {
            return Err(Errno::EFAULT);
        }
        Ok(off..end)
    }
}

impl Guest for FakeGuest {
    fn tid(&self) -> i32 {
        nix::unistd::gettid().as_raw()
    }
    fn read_mem(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.mem.borrow()[r]);
        Ok(())
    }
    fn write_mem(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let r = self.range(addr, data.len())?;
        self.mem.borrow_mut()[r].copy_from_slice(data);
        Ok(())
    }
    fn read_path(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        let start = self.range(addr, 0)?.start;
        let mem = self.mem.borrow();
        let avail = &mem[start..];
        match avail.iter().take(PATH_MAX).position(|&b| b == 0) {
            Some(n) => Ok(avail[..n].to_vec()),
            None if avail.len() >= PATH_MAX => Err(Errno::ENAMETOOLONG),
            None => Err(Errno::EFAULT),
        }
    }
    fn still_valid(&self) -> bool {
        self.valid.get()
    }
    fn fd_path(&self, fd: i32) -> Result<OwnedFd, Errno> {
        let fds = self.fds.borrow();
        let real = fds.get(&fd).ok_or(Errno::EBADF)?;
        let p = format!("/proc/self/fd/{}", real.as_raw_fd());
        Ok(open_path(Path::new(&p), libc::O_PATH))
    }
    fn dup_fd(&self, fd: i32) -> Result<OwnedFd, Errno> {
        let fds = self.fds.borrow();
        let real = fds.get(&fd).ok_or(Errno::EBADF)?;
        real.try_clone().map_err(|_| Errno::EMFILE)
    }
    fn cwd(&self) -> Result<OwnedFd, Errno> {
        self.cwd.try_clone().map_err(|_| Errno::EMFILE)
    }
    fn umask(&self) -> Result<u32, Errno> {
        Ok(self.umask)
    }
    fn ns_ids(&self) -> Result<(i32, i32), Errno> {
        Ok((std::process::id() as i32, nix::unistd::gettid().as_raw()))
    }
    fn host_tgid(&self) -> Result<i32, Errno> {
        Ok(std::process::id() as i32)
    }
}

pub fn open_path(p: &Path, flags: i32) -> OwnedFd {
    let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: (test only) NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open {p:?}: {}", Errno::last());
    // SAFETY: (test only) a fresh descriptor we own.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The guest's umask in these tests.
const GUEST_UMASK: u32 = 0o022;

/// The process umask is 0, as in the supervisor (so a handler that forgot
/// the guest's umask shows); the native side applies [`GUEST_UMASK`] to
/// creation modes itself, which is all the kernel does with a umask.
fn process_umask() -> u32 {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    });
    GUEST_UMASK
}

/// Apply [`GUEST_UMASK`] to the mode argument of a native creating call.
fn native_umask(nr: i64, a: &mut [u64; 6]) {
    let creates = |flags: u64| flags & (libc::O_CREAT | libc::O_TMPFILE) as u64 != 0;
    let um = !(GUEST_UMASK as u64);
    match nr {
        libc::SYS_open if creates(a[1]) => a[2] &= um,
        libc::SYS_openat if creates(a[2]) => a[3] &= um,
        libc::SYS_openat2 if a[2] > 4096 && a[3] >= 16 => {
            // SAFETY: (test only) a[2] points to an open_how of ours
            // (at least 16 bytes: flags, mode).
            unsafe {
                let how = a[2] as *mut u64;
                if creates(how.read_unaligned()) {
                    let m = how.add(1);
                    m.write_unaligned(m.read_unaligned() & um);
                }
            }
        }
        _ => {}
    }
}

/// A context whose view is `root`, caching directories on any
/// filesystem (the tests' trees are on the host's disk).
pub fn ctx_root(root: &Path) -> Context {
    let (uid, gid) = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    let mut ctx = Context::with_cache_policy(
        open_path(root, libc::O_PATH),
        uid,
        gid,
        vfs::CachePolicy::All,
    );
    // These tests check what the VFS itself opens.
    ctx.install_every_open();
    ctx
}
