//! File descriptors: closing all but a few, opening confined to a root,
//! opening for reading with the fast-read mark, passing a descriptor over
//! a unix socket, and an exclusive lock.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use nix::sys::stat::Mode;

/// Closes every descriptor from 3 up, except those in `keep`.
pub fn close_all_except(keep: &[RawFd]) -> nix::Result<()> {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter_map(|&fd| u32::try_from(fd).ok())
        .collect();
    keep.sort_unstable();
    let mut first = 3u32;
    for fd in keep.into_iter().filter(|&fd| fd >= 3) {
        if fd > first {
            close_range(first, fd - 1)?;
        }
        first = fd + 1;
    }
    close_range(first, u32::MAX)
}

fn close_range(first: u32, last: u32) -> nix::Result<()> {
    // SAFETY: close_range takes plain integers and touches no memory of
    // ours; the caller decided these descriptors are no longer used.
    let ret = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    Errno::result(ret).map(drop)
}

/// `openat2(root, path, flags, RESOLVE_IN_ROOT)`: `path` is resolved as if
/// `root` were `/`, so `..` and absolute symlinks stay beneath it.
pub fn open_in_root(root: BorrowedFd<'_>, path: &Path, flags: OFlag) -> nix::Result<OwnedFd> {
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = nix::fcntl::openat2(root.as_raw_fd(), path, how)?;
    // SAFETY: openat2 just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(AT_FDCWD, path, flags)` with `mark` in the fifth register
/// (r8, which the kernel ignores for openat): a plain read made so passes
/// a fenced sandbox's filter as the guest's preload makes it
/// (`sandbox_syscalls::policy::FAST_READ_MARK`), where an unmarked one
/// would be a serviced call.
pub fn open_marked(path: &Path, flags: OFlag, mark: u64) -> nix::Result<OwnedFd> {
    let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| Errno::EINVAL)?;
    let flags = (flags | OFlag::O_CLOEXEC).bits();
    // SAFETY: `path` is a NUL-terminated string that outlives the call;
    // the other arguments are plain integers (the mode is unused without
    // O_CREAT, and the kernel ignores the fifth register for openat).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            0u32,
            mark,
        )
    };
    let fd = Errno::result(fd)?;
    let fd = RawFd::try_from(fd).map_err(|_| Errno::EBADF)?;
    // SAFETY: openat just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(dir, path, flags, mode)` returning an owned descriptor.
pub fn open_at(
    dir: Option<BorrowedFd<'_>>,
    path: &Path,
    flags: OFlag,
    mode: Mode,
) -> nix::Result<OwnedFd> {
    let fd = nix::fcntl::openat(
        dir.map(|d| d.as_raw_fd()),
        path,
        flags | OFlag::O_CLOEXEC,
        mode,
    )?;
    // SAFETY: openat just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends `data` on a unix socket, with `fd` attached (SCM_RIGHTS) if given.
pub fn send_with_fd(
    sock: BorrowedFd<'_>,
    data: &[u8],
    fd: Option<BorrowedFd<'_>>,
) -> nix::Result<()> {
    send_with_fds(sock, data, fd.as_slice())
}

/// Receives one message from a unix socket: its length (0 at end of
/// stream) and the first descriptor it carried, if any (close-on-exec;
/// any others are closed).
pub fn recv_with_fd(sock: BorrowedFd<'_>, buf: &mut [u8]) -> nix::Result<(usize, Option<OwnedFd>)> {
    recv_with_fds(sock, buf).map(|(n, fds)| (n, fds.into_iter().next()))
}

/// Sends `data` on a unix socket with every descriptor of `fds` attached
/// (one SCM_RIGHTS message).
pub fn send_with_fds(sock: BorrowedFd<'_>, data: &[u8], fds: &[BorrowedFd<'_>]) -> nix::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let cmsg: Vec<ControlMessage> = match raw.is_empty() {
        true => Vec::new(),
        false => vec![ControlMessage::ScmRights(&raw)],
    };
    let iov = [IoSlice::new(data)];
    loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsg, MsgFlags::MSG_NOSIGNAL, None) {
            Err(Errno::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// Sends `data` without descriptors by a plain send (sendto without an
/// address), which the guest's filter passes where it serves sendmsg:
/// init's and an exec helper's messages need no worker (`data` must not
/// be empty: an empty send is served).
pub fn send_plain(sock: BorrowedFd<'_>, data: &[u8]) -> nix::Result<()> {
    loop {
        match nix::sys::socket::send(sock.as_raw_fd(), data, MsgFlags::MSG_NOSIGNAL) {
            Err(Errno::EINTR) => continue,
            r => return r.map(drop),
        }
    }
}

/// Most descriptors [`recv_with_fds`] takes from one message.
pub const MAX_FDS: usize = 64;

/// Receives one message from a unix socket: its length (0 at end of
/// stream) and the descriptors it carried (close-on-exec, at most
/// [`MAX_FDS`]; a message with more is truncated by the kernel, which
/// closes the rest).
pub fn recv_with_fds(sock: BorrowedFd<'_>, buf: &mut [u8]) -> nix::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(Errno::EINTR) => continue,
            r => break r?,
        }
    };
    let mut received = Vec::new();
    for c in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            // SAFETY: the kernel just installed these descriptors in our
            // table for this message; we are their only owner.
            received.extend(
                fds.into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    Ok((msg.bytes, received))
}

/// Writes all of `data`, waiting if `fd` is non-blocking and full.
pub fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> nix::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    while !data.is_empty() {
        match nix::unistd::write(fd, data) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::from(100u8));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Accepts one connection on a listening socket (close-on-exec).
pub fn accept(listener: BorrowedFd<'_>) -> nix::Result<OwnedFd> {
    let fd = loop {
        match nix::sys::socket::accept4(
            listener.as_raw_fd(),
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        ) {
            Err(Errno::EINTR) => continue,
            r => break r?,
        }
    };
    // SAFETY: accept4 just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Takes an exclusive `flock` of `fd`'s file, waiting for it; it lasts
/// until the file's last descriptor is closed.
pub fn lock_exclusive(fd: BorrowedFd<'_>) -> nix::Result<()> {
    // SAFETY: an integer descriptor and an integer operation.
    let ret = unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX) };
    Errno::result(ret).map(drop)
}
