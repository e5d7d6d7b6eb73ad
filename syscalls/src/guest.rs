//! The narrow interface between handlers and the trapped guest thread.
//!
//! A handler sees one syscall of one guest thread: its number and raw
//! arguments ([`SyscallArgs`]), and a [`Guest`] through which it may read
//! and write that thread's memory and borrow its file descriptors. It
//! answers with a [`Reply`]. Guest memory and arguments are hostile: every
//! accessor returns `Result`, never panics.

use std::os::fd::OwnedFd;

use nix::errno::Errno;

/// Longest path the guest may pass, including the terminating NUL (PATH_MAX).
pub const PATH_MAX: usize = 4096;

/// The raw registers of one trapped system call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallArgs {
    /// The x86_64 syscall number.
    pub nr: i64,
    /// The six argument registers, unfiltered.
    pub args: [u64; 6],
}

impl SyscallArgs {
    /// Argument `i` as the kernel's `int` (low 32 bits, sign-extended).
    pub fn int(&self, i: usize) -> i32 {
        self.args[i] as u32 as i32
    }
    /// Argument `i` as the kernel's `unsigned int` (low 32 bits).
    pub fn uint(&self, i: usize) -> u32 {
        self.args[i] as u32
    }
}

/// What the supervisor answers for one serviced call.
#[derive(Debug)]
pub enum Reply {
    /// The call returns this (non-negative) value.
    Value(i64),
    /// The call fails with this errno.
    Error(Errno),
    /// Install `fd` in the guest (lowest free number, atomically with the
    /// answer: `SECCOMP_ADDFD_FLAG_SEND`); the call returns its number.
    InstallFd { fd: OwnedFd, cloexec: bool },
    /// Let the kernel run the call as the guest made it. Only for calls
    /// whose effect is harmless whatever the guest's memory holds by then.
    Continue,
    /// The policy refuses the call: it fails with this errno and counts
    /// as denied in the report (a raw socket, say).
    Deny(Errno),
    /// The handler already answered (with [`Guest::install_fd`]): this is
    /// the value the call returned, for the trace.
    Answered(i64),
}

impl From<Result<i64, Errno>> for Reply {
    fn from(r: Result<i64, Errno>) -> Self {
        match r {
            Ok(v) => Reply::Value(v),
            Err(e) => Reply::Error(e),
        }
    }
}

/// The trapped guest thread, as handlers may touch it.
pub trait Guest {
    /// Host thread id of the caller.
    fn tid(&self) -> i32;

    /// Read `buf.len()` bytes of guest memory at `addr` (EFAULT when any
    /// byte is unmapped or unreadable).
    fn read_mem(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno>;

    /// Write `data` into guest memory at `addr`, honouring page
    /// protections (EFAULT on an unmapped or read-only page).
    fn write_mem(&self, addr: u64, data: &[u8]) -> Result<(), Errno>;

    /// Write each `(addr, data)` in turn, as [`Guest::write_mem`] would
    /// one after the other (EFAULT at the first that does not fit; those
    /// before it are written), in one host transfer where the guest's
    /// side allows it: an address and its length cost one call.
    fn write_mems(&self, parts: &[(u64, &[u8])]) -> Result<(), Errno> {
        parts
            .iter()
            .try_for_each(|(addr, data)| self.write_mem(*addr, data))
    }

    /// Read a NUL-terminated path at `addr`, without the NUL: EFAULT for a
    /// bad pointer, ENAMETOOLONG when no NUL comes within PATH_MAX bytes.
    fn read_path(&self, addr: u64) -> Result<Vec<u8>, Errno>;

    /// Whether the notification is still live: the thread is still
    /// blocked in this very call (`SECCOMP_IOCTL_NOTIF_ID_VALID`). Check it
    /// after reading guest memory and before acting on what was read.
    fn still_valid(&self) -> bool;

    /// An `O_PATH` descriptor for the guest's file descriptor `fd` (a new
    /// open of the same file, for use as a directory to resolve from).
    /// EBADF when the guest has no such fd.
    fn fd_path(&self, fd: i32) -> Result<OwnedFd, Errno>;

    /// What `/proc/<tid>/fd/<fd>` reads: the path of the guest's `fd`
    /// (`/memfd:NAME (deleted)` for a memfd, `pipe:[N]`, ...), without
    /// opening anything. EBADF when the guest has no such fd.
    fn fd_link(&self, fd: i32) -> Result<Vec<u8>, Errno> {
        let _ = fd;
        Err(Errno::ENOSYS)
    }

    /// The guest's own open file description behind `fd`
    /// (`pidfd_getfd`): shares offset and status flags with the guest.
    fn dup_fd(&self, fd: i32) -> Result<OwnedFd, Errno>;

    /// An `O_PATH` descriptor for the guest thread's working directory.
    fn cwd(&self) -> Result<OwnedFd, Errno>;

    /// The guest process's umask.
    fn umask(&self) -> Result<u32, Errno>;

    /// The caller's (tgid, tid) as the sandbox's pid namespace numbers them.
    fn ns_ids(&self) -> Result<(i32, i32), Errno>;

    /// Host id of the caller's process (its thread-group leader's tid).
    fn host_tgid(&self) -> Result<i32, Errno>;

    /// The handler is about to do something that may block indefinitely
    /// (open a FIFO with no other end yet): the supervisor makes sure
    /// another worker answers the other guest threads meanwhile.
    fn may_block(&self) {}

    /// Whether the thread has a signal it catches pending and unblocked:
    /// a handler waiting on its behalf should stop and answer EINTR, as
    /// the kernel's interruptible waits do.
    fn signal_pending(&self) -> bool {
        false
    }

    /// Raises SIGPIPE on the thread, as the kernel does where a send fails
    /// with EPIPE without MSG_NOSIGNAL. The filter's WAIT_KILLABLE_RECV
    /// keeps a caught one pending until the call has returned (its
    /// handler then runs, as after the kernel's send); the default action
    /// ends the process at once, as it would natively.
    fn raise_sigpipe(&self) {}

    /// Installs `fd` in the guest and answers the call with its number
    /// (`ADDFD` + `SEND`, atomically). On failure the file comes back, so
    /// that nothing it holds (an accepted connection) is lost.
    fn install_fd(&self, fd: OwnedFd, cloexec: bool) -> Result<i32, (Errno, OwnedFd)> {
        let _ = cloexec;
        Err((Errno::ENOSYS, fd))
    }

    /// Puts `fd` in the guest's table at number `target`, replacing what
    /// is there (as dup2 does, keeping the close-on-exec flag the old one
    /// had), without answering the call.
    fn replace_fd(&self, target: i32, fd: &OwnedFd) -> Result<(), Errno> {
        let _ = (target, fd);
        Err(Errno::ENOSYS)
    }

    /// Runs `act` with those of the capabilities in `wanted` (bit N:
    /// capability N) that the caller holds in its own user namespace made
    /// effective for the worker, and lowers them after; EPERM without
    /// running it when the caller holds none of them. The caller checks
    /// first that every inode `act` touches has a guest owner and group
    /// (`IdMap::holds_host`): the worker's capabilities are the host's,
    /// the caller's reach only the ids its namespace maps. The default:
    /// no caller holds any.
    fn with_caller_caps(
        &self,
        wanted: u64,
        act: &mut dyn FnMut() -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let _ = (wanted, act);
        Err(Errno::EPERM)
    }

    /// Runs `act` with the supervisor's own file-system ids (the
    /// invoker's, and the file capabilities they bring), then takes the
    /// caller's back: for the reopen of a file the guest was handed
    /// (`handlers/open/handed.rs`), which the invoker opened for it. The
    /// default: the worker's ids are its own already.
    fn with_own_ids(&self, act: &mut dyn FnMut() -> Result<(), Errno>) -> Result<(), Errno> {
        act()
    }
}

/// Capability bits for [`Guest::with_caller_caps`].
pub const CAP_CHOWN: u64 = 1 << 0;
pub const CAP_DAC_OVERRIDE: u64 = 1 << 1;
pub const CAP_DAC_READ_SEARCH: u64 = 1 << 2;
pub const CAP_FOWNER: u64 = 1 << 3;
pub const CAP_FSETID: u64 = 1 << 4;
pub const CAP_SETFCAP: u64 = 1 << 31;
