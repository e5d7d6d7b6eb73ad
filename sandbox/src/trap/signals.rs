//! What `/proc/<tid>` says of a guest thread that a waiting handler must
//! know: whether a signal it catches is pending (so a blocking accept or
//! recv answers EINTR, as the kernel's interruptible waits do), and
//! whether a descriptor is close-on-exec.
//!
//! Owns: parsing `status` (SigPnd, ShdPnd, SigBlk, SigCgt) and `fdinfo`.
//! Does not own: the waiting (the handlers' `wait` module).

use std::fs;

use nix::errno::Errno;

/// Whether `tid` has a pending signal that it neither blocks nor leaves
/// to its default action. (A fatal one kills the thread, which the
/// waiter sees as the notification going invalid; ignored ones are
/// never queued.)
pub fn catchable_pending(tid: i32) -> bool {
    let Ok(text) = fs::read_to_string(format!("/proc/{tid}/status")) else {
        return false;
    };
    let mask = |field: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let pending = mask("SigPnd:") | mask("ShdPnd:");
    pending & !mask("SigBlk:") & mask("SigCgt:") != 0
}

/// Whether the guest's descriptor `fd` is close-on-exec (EBADF if none).
///
/// One `read` of the `fdinfo` text's start (procfs renders the whole text
/// at the first read; `flags:` is its second line, after `pos:`), where
/// `fs::read_to_string` asks the file's size (a `statx`) and reads in
/// pieces of 32 bytes to the end: three calls fewer on every rewind of a
/// served /proc file, which puts a fresh text in at the same number.
pub fn fd_cloexec(tid: i32, fd: i32) -> Result<bool, Errno> {
    let text = fdinfo_start(&tid.to_string(), fd)?;
    let flags = text
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .ok_or(Errno::EIO)?;
    Ok(flags & libc::O_CLOEXEC as u32 != 0)
}

/// The first [`FDINFO_START`] bytes of `/proc/<task>/fdinfo/<fd>`
/// (`task`: a tid, or `self`), in one read (EBADF when there is no such
/// descriptor): also what `guest.rs` reads of a pidfd's.
pub(super) fn fdinfo_start(task: &str, fd: i32) -> Result<String, Errno> {
    use std::io::Read;
    let mut f = fs::File::open(format!("/proc/{task}/fdinfo/{fd}")).map_err(|_| Errno::EBADF)?;
    let mut buf = [0u8; FDINFO_START];
    let n = loop {
        match f.read(&mut buf) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Errno::EBADF),
        }
    };
    Ok(String::from_utf8_lossy(buf.get(..n).unwrap_or_default()).into_owned())
}

/// Room for `fdinfo`'s first lines (`pos:`, `flags:`, `mnt_id:`, `ino:`:
/// about 60 bytes; the lists some files add come after them) and for a
/// pidfd's whole text (those, `Pid:` and `NSpid:` with one number per
/// nested namespace: about 100 bytes).
const FDINFO_START: usize = 512;

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn reads_close_on_exec_from_the_first_lines() {
        let me = nix::unistd::gettid().as_raw();
        let file = fs::File::open("/proc/self/stat").unwrap();
        assert!(fd_cloexec(me, file.as_raw_fd()).unwrap());
        let kept = nix::unistd::dup(file.as_raw_fd()).unwrap();
        assert!(!fd_cloexec(me, kept).unwrap());
        nix::unistd::close(kept).unwrap();
        assert_eq!(fd_cloexec(me, kept), Err(Errno::EBADF));
        // An epoll descriptor's fdinfo lists its watches after the flags.
        let ep = nix::sys::epoll::Epoll::new(nix::sys::epoll::EpollCreateFlags::empty()).unwrap();
        assert!(!fd_cloexec(me, ep.0.as_raw_fd()).unwrap());
    }
}
