//! Terminals: opening a pseudo-terminal pair, making a terminal the
//! controlling one, and reading or setting a window size.
//!
//! Owns the raw `ioctl`s nix does not wrap safely. Does not own what a run
//! does with its terminal (`crate::tty`, `launch/`).

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
use nix::sys::stat::Mode;

use super::fd::open_at;

/// A window size (`struct winsize`).
pub type WinSize = libc::winsize;

/// A new pseudo-terminal of the devpts that `/dev/ptmx` leads to:
/// (master, slave), both close-on-exec, neither becoming our controlling
/// terminal.
pub fn open_pty() -> nix::Result<(OwnedFd, OwnedFd)> {
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname_r(&master)?;
    let slave = open_at(
        None,
        Path::new(&name),
        OFlag::O_RDWR | OFlag::O_NOCTTY,
        Mode::empty(),
    )?;
    // SAFETY: into_raw_fd hands over the only owner of a descriptor that
    // posix_openpt just opened; wrapping it again keeps exactly one owner.
    let master = unsafe { OwnedFd::from_raw_fd(master.into_raw_fd()) };
    Ok((master, slave))
}

/// A new pseudo-terminal of the devpts whose `ptmx` is at `ptmx` (say,
/// a sandbox's, through `/proc/<pid>/root`): (master, slave, the slave's
/// number), both close-on-exec, neither our controlling terminal. The
/// slave is opened from the master (TIOCGPTPEER), never by path.
pub fn open_pty_at(ptmx: &Path) -> nix::Result<(OwnedFd, OwnedFd, u32)> {
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    let master = open_at(None, ptmx, flags, Mode::empty())?;
    let unlock: libc::c_int = 0;
    // SAFETY: TIOCSPTLCK reads one int from `unlock`, valid for the call.
    let ret = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSPTLCK, &unlock) };
    Errno::result(ret)?;
    let mut number: libc::c_uint = 0;
    // SAFETY: TIOCGPTN writes one unsigned int to `number`, valid for the call.
    let ret = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCGPTN, &mut number) };
    Errno::result(ret)?;
    // SAFETY: TIOCGPTPEER takes open flags by value and touches no memory of ours.
    let fd = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCGPTPEER, flags.bits()) };
    let fd = Errno::result(fd)?;
    // SAFETY: TIOCGPTPEER just returned this new descriptor; nothing else owns it.
    let slave = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok((master, slave, number))
}

/// `ioctl(fd, TIOCSCTTY, 0)`: makes the terminal `fd` the controlling
/// terminal of this process's session (the caller must lead the session).
pub fn set_controlling_terminal(fd: BorrowedFd<'_>) -> nix::Result<()> {
    // SAFETY: TIOCSCTTY takes an integer argument and touches no memory of ours.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSCTTY, 0 as libc::c_int) };
    Errno::result(ret).map(drop)
}

/// `ioctl(fd, TIOCGWINSZ)`: the terminal's window size.
pub fn window_size(fd: BorrowedFd<'_>) -> nix::Result<WinSize> {
    let mut ws = WinSize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: `ws` is a valid, writable struct winsize for the whole call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
    Errno::result(ret).map(|_| ws)
}

/// `ioctl(fd, TIOCSWINSZ)`: sets the window size (on a pty master: of its
/// slave, whose foreground process group then gets SIGWINCH).
pub fn set_window_size(fd: BorrowedFd<'_>, ws: &WinSize) -> nix::Result<()> {
    // SAFETY: `ws` is a valid struct winsize the kernel only reads.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, ws as *const WinSize) };
    Errno::result(ret).map(drop)
}
