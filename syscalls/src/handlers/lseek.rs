//! Rewinding readers of the /proc files the sandbox serves: a reader that
//! keeps `/proc/stat` (or meminfo, vmstat, uptime, loadavg, file-nr, or a
//! process's served `status`, `mountinfo`, `mounts`, `autogroup`) open
//! and `lseek`s back to 0 before each read — procps's `vmstat 1` and
//! `top -d`, Python's `f.seek(0)` — gets fresh figures, as from the
//! kernel's procfs. A per-process file's memfd is named for its process
//! (`status:2`), and re-read from the view's `/proc/2/status`; when that
//! process has ended the reader keeps the text it has (the kernel's read
//! would fail with ESRCH), and a pid reused meanwhile within the sandbox
//! would show the new process's file. A guest memfd named so gets only
//! what it may open itself: those files are world-readable.
//!
//! Not trapped: `pread(fd, buf, n, 0)` of a served file reads the text
//! of its open (or last rewind), where the kernel's would be fresh.
//! Trapping `pread64` at offset 0 would cost every such call of every
//! file (databases re-read page 0, loaders read ELF headers) a round trip
//! to the supervisor: a trapped `lseek(fd, 0, SEEK_SET)` of a plain file
//! measured 11 µs against 0.3 µs natively, `pread(fd, 16, 0)` is 1 µs
//! untrapped (Python loop, 20000 calls). Readers of /proc rewind with
//! `lseek` (procps, Python, glibc's `rewind`), so `pread` is left alone.
//!
//! How: the served files are sealed memfds made at open time
//! (`procfs::substitute`), whose text cannot change. The filter traps
//! only `lseek(fd, 0, SEEK_SET)` (a BPF test of two registers; every other
//! seek passes). One readlink of `/proc/<tid>/fd/<fd>` sends plain files
//! back to the kernel, or nothing at all while the sandbox has served no
//! file yet (`Synthetic::served_any`: no descriptor can be one). When the
//! guest's `fd` is one of those memfds, a fresh one
//! is made and put at the same number (`SECCOMP_ADDFD_FLAG_SETFD`, as
//! dup2, keeping close-on-exec and `O_NONBLOCK`), and the call answers 0:
//! the next read starts at the new text's beginning. Any other descriptor
//! is left to the kernel (CONTINUE). Where the sandbox's memfd of
//! `/proc/stat` is one the guest can never write
//! (`procfs`'s `in_place.rs`: a root supervisor, its id unmapped in the
//! guest), the fresh text is written into the guest's very file and the
//! call CONTINUEd: the kernel seeks, and a `dup` or a forked child's copy
//! reads the fresh text too, as on procfs.
//!
//! Owns: recognising a served memfd behind a guest descriptor and the
//! swap. Does not own: the texts or which files change (`procfs/served.rs`).
//!
//! A served memfd is recognised by what the guest cannot fake into
//! anything it could not have anyway: its memfd name (`/memfd:stat`), its
//! seals and its mode. A guest memfd made to look the same gets a fresh
//! copy of the sandbox's own file, which it may open at will.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::fcntl::{fcntl, FcntlArg, OFlag, SealFlag};

use super::{live, value, Context, Res};
use crate::guest::{Guest, Reply};
use procfs::{changes, fd_name, refreshed, rewritten};

/// `lseek(fd, offset, whence)`, trapped only as a rewind.
pub(crate) fn lseek(ctx: &Context, g: &dyn Guest, fd: i32, offset: u64, whence: u32) -> Res {
    if offset != 0 || whence != libc::SEEK_SET as u32 {
        return Ok(Reply::Continue);
    }
    // Most rewinds are of plain files. In a sandbox that was never served
    // a file, every descriptor is; else one readlink tells them apart. A
    // bad descriptor is the kernel's to answer (EBADF, ESPIPE).
    if !ctx.synthetic.served_any() {
        return Ok(Reply::Continue);
    }
    let Ok(link) = g.fd_link(fd) else {
        return Ok(Reply::Continue);
    };
    let Some(name) = std::str::from_utf8(&link).ok().and_then(memfd_name) else {
        return Ok(Reply::Continue);
    };
    if !changes(&ctx.proc(), name) {
        return Ok(Reply::Continue);
    }
    let Ok(file) = g.dup_fd(fd) else {
        return Ok(Reply::Continue);
    };
    if let Some(done) = rewritten(&ctx.proc(), name, &file) {
        // The fresh text is in that very file: the kernel seeks.
        done?;
        return Ok(Reply::Continue);
    }
    if served_name(&file).as_deref() != Some(name) {
        return Ok(Reply::Continue);
    }
    let nonblock =
        fcntl(file.as_raw_fd(), FcntlArg::F_GETFL).map_or(0, |fl| fl & OFlag::O_NONBLOCK.bits());
    drop(file);
    let Some(fresh) = refreshed(&ctx.proc(), name, nonblock) else {
        return Ok(Reply::Continue);
    };
    let fresh = fresh?;
    live(g)?;
    g.replace_fd(fd, &fresh)?;
    value(0)
}

/// The memfd name of `file` when it is a file the sandbox serves: a
/// memfd sealed as `sealed.rs` seals, or made unsealable as
/// `procfs`'s `in_place.rs` makes one, mode 0444.
fn served_name(file: &OwnedFd) -> Option<String> {
    let path = fd_name(file)?;
    let name = memfd_name(&path)?;
    let seals = fcntl(file.as_raw_fd(), FcntlArg::F_GET_SEALS).ok()?;
    let sealed = SealFlag::F_SEAL_SEAL
        | SealFlag::F_SEAL_SHRINK
        | SealFlag::F_SEAL_GROW
        | SealFlag::F_SEAL_WRITE;
    if seals != sealed.bits() && seals != SealFlag::F_SEAL_SEAL.bits() {
        return None;
    }
    let st = nix::sys::stat::fstat(file.as_raw_fd()).ok()?;
    (st.st_mode & 0o7777 == 0o444).then(|| name.to_owned())
}

/// The name a memfd was created with, from the path the kernel gives it
/// (`/memfd:NAME (deleted)`).
fn memfd_name(path: &str) -> Option<&str> {
    path.strip_prefix("/memfd:")?.strip_suffix(" (deleted)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memfd_names() {
        assert_eq!(memfd_name("/memfd:stat (deleted)"), Some("stat"));
        assert_eq!(memfd_name("/memfd:a b (deleted)"), Some("a b"));
        assert_eq!(memfd_name("/proc/stat"), None);
        assert_eq!(memfd_name("/memfd:stat"), None);
    }

    #[test]
    fn served_files_are_recognised_and_others_not() {
        let served = procfs::sealed_file(c"stat", b"cpu 1\n", 0).unwrap();
        assert_eq!(served_name(&served).as_deref(), Some("stat"));
        let flags = nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC;
        let plain = nix::sys::memfd::memfd_create(c"stat", flags).unwrap();
        assert_eq!(served_name(&plain), None);
        // Unsealable, as `in_place.rs` makes them, once mode 0444.
        let mode = nix::sys::stat::Mode::from_bits_truncate(0o444);
        nix::sys::stat::fchmod(plain.as_raw_fd(), mode).unwrap();
        assert_eq!(served_name(&plain).as_deref(), Some("stat"));
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert_eq!(served_name(&OwnedFd::from(file)), None);
    }
}
