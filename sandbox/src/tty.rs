//! The guest's terminal: when our stdin is a terminal, the guest gets a
//! pseudo-terminal of the sandbox's own devpts (so `tty` can name it), and
//! this module relays between it and the host terminal, as `docker run -t`
//! does.
//!
//! Owns: deciding whether to relay ([`host_terminal`]), copying the host
//! terminal's modes and window size to the guest's pty, the host terminal's
//! raw mode for the run and its restoration (at the end, on error paths,
//! and on a panic), the two copying threads, window-size changes
//! ([`Resizer`]), draining the guest's last output, and handing the
//! pty's master to a console socket instead ([`send_master`]). Does not own the
//! pty itself (opened by init inside the view, `launch/`), nor signals
//! (`run/signals.rs` calls [`Resizer::resize`] on SIGWINCH).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex, Once};
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};
use nix::unistd::{getpgrp, isatty, pipe2, read, tcgetpgrp};

use crate::output::Meter;
use crate::sys::fd::{send_with_fd, write_all};
use crate::sys::term::{set_window_size, window_size};

/// How long the guest's last output may take to reach the host terminal
/// once the sandbox is gone.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The host terminal's modes before the run, while it is in raw mode.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Which of stdin, stdout, stderr the guest gets its pty as: `None` (our
/// stdio is passed as it is) unless stdin is a terminal of which we are
/// not a background job; stdout and stderr then only if they are terminals.
pub fn host_terminal() -> Option<[bool; 3]> {
    let tty = |fd| isatty(fd).unwrap_or(false);
    if !tty(0) {
        return None;
    }
    // A background job would be stopped (SIGTTOU) when setting raw mode.
    if matches!(tcgetpgrp(io::stdin()), Ok(fg) if fg != getpgrp()) {
        return None;
    }
    Some([true, tty(1), tty(2)])
}

/// The host terminal's modes, restored when this is dropped: the pool's
/// client keeps them while its sandbox relays (and sets raw mode) on the
/// same terminal, so they come back even if that sandbox is killed.
pub struct SavedModes(Option<Termios>);

impl SavedModes {
    pub fn of_stdin() -> SavedModes {
        SavedModes(tcgetattr(io::stdin()).ok())
    }
}

impl Drop for SavedModes {
    fn drop(&mut self) {
        if let Some(modes) = &self.0 {
            let _ = tcsetattr(io::stdin(), SetArg::TCSADRAIN, modes);
        }
    }
}

/// The relay between the host terminal and the guest's pty master. While
/// it exists the host terminal is in raw mode; dropping it restores the
/// terminal.
pub struct Relay {
    master: Arc<OwnedFd>,
    /// Closing it stops the input thread.
    stop: Option<OwnedFd>,
    output_done: mpsc::Receiver<()>,
}

/// Applies the host terminal's window size to the guest's pty.
#[derive(Clone)]
pub struct Resizer(Arc<OwnedFd>);

impl Resizer {
    /// Copies the host window size to the pty; the kernel then sends
    /// SIGWINCH to the guest's foreground process group.
    pub fn resize(&self) {
        if let Ok(ws) = window_size(io::stdin().as_fd()) {
            let _ = set_window_size(self.0.as_fd(), &ws);
        }
    }
}

impl Relay {
    /// Gives the guest's pty the host terminal's modes and size, starts
    /// the copying threads, and puts the host terminal in raw mode (so
    /// that the guest's line discipline, not the host's, interprets
    /// Ctrl-C, line editing and echo). `stdio` is [`host_terminal`]'s answer.
    /// With a `meter` (`--output-limit`), the guest's output is counted
    /// and cut there.
    pub fn start(
        master: OwnedFd,
        stdio: [bool; 3],
        meter: Option<Arc<Meter>>,
    ) -> Result<Relay, String> {
        let err = |what: &str, e: Errno| format!("{what}: {}", e.desc());
        let host = tcgetattr(io::stdin()).map_err(|e| err("reading the terminal's modes", e))?;
        // On a master, the termios and window-size ioctls act on the slave.
        tcsetattr(&master, SetArg::TCSANOW, &host)
            .map_err(|e| err("setting the guest terminal's modes", e))?;
        let master = Arc::new(master);
        Resizer(master.clone()).resize();
        let (stop_rx, stop_tx) = pipe2(OFlag::O_CLOEXEC).map_err(|e| err("creating a pipe", e))?;
        let (done_tx, output_done) = mpsc::channel();
        let out = master.clone();
        thread::Builder::new()
            .name("tty-out".into())
            .spawn(move || {
                copy_out(&out, stdio, meter.as_deref());
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("starting the terminal relay: {e}"))?;
        let input = master.clone();
        thread::Builder::new()
            .name("tty-in".into())
            .spawn(move || copy_in(&input, &stop_rx))
            .map_err(|e| format!("starting the terminal relay: {e}"))?;
        let relay = Relay {
            master,
            stop: Some(stop_tx),
            output_done,
        };
        enter_raw_mode(host).map_err(|e| err("setting the terminal to raw mode", e))?;
        Ok(relay)
    }

    /// What the signal thread needs to pass on window-size changes.
    pub fn resizer(&self) -> Resizer {
        Resizer(self.master.clone())
    }

    /// After the sandbox is gone: stops reading the host terminal, copies
    /// what the guest wrote last (until the pty reports that no slave is
    /// open), and restores the host terminal.
    pub fn finish(mut self) {
        self.stop = None;
        let _ = self.output_done.recv_timeout(DRAIN_TIMEOUT);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop = None;
        restore_host();
    }
}

/// Saves the host terminal's modes and switches it to raw mode.
fn enter_raw_mode(host: Termios) -> nix::Result<()> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // panic = "abort": no destructor runs, so the hook restores.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_host();
            previous(info);
        }));
    });
    let mut raw = host.clone();
    cfmakeraw(&mut raw);
    *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(host.into());
    tcsetattr(io::stdin(), SetArg::TCSADRAIN, &raw)
}

/// Puts the host terminal back as it was before the run (once).
fn restore_host() {
    let saved = match SAVED.try_lock() {
        Ok(mut saved) => saved.take(),
        Err(_) => return,
    };
    if let Some(termios) = saved {
        let _ = tcsetattr(io::stdin(), SetArg::TCSADRAIN, &Termios::from(termios));
    }
}

/// Host stdin → master, until `stop` is closed or stdin ends.
fn copy_in(master: &OwnedFd, stop: &OwnedFd) {
    let stdin = io::stdin();
    let mut buf = [0u8; 4096];
    loop {
        let mut fds = [
            PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
        let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
        if ready(&fds[1]) {
            return;
        }
        if !ready(&fds[0]) {
            continue;
        }
        match read(stdin.as_raw_fd(), &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if write_all(master.as_fd(), &buf[..n]).is_err() {
                    return;
                }
            }
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(_) => return,
        }
    }
}

/// Master → the host terminal (stdout if it is one, else stderr, else
/// stdin's), until no slave is open any more (EIO).
fn copy_out(master: &OwnedFd, stdio: [bool; 3], meter: Option<&Meter>) {
    let (stdin, stdout, stderr) = (io::stdin(), io::stdout(), io::stderr());
    let host = match stdio {
        [_, true, _] => stdout.as_fd(),
        [_, _, true] => stderr.as_fd(),
        _ => stdin.as_fd(),
    };
    let mut host_ok = true;
    let mut buf = [0u8; 8192];
    loop {
        match read(master.as_raw_fd(), &mut buf) {
            Ok(0) => return,
            // Keep reading when the host terminal is gone: the guest must not block.
            Ok(n) => {
                let pass = meter.map_or(n, |m| m.admit(n));
                host_ok = host_ok && write_all(host, &buf[..pass]).is_ok();
            }
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(_) => return,
        }
    }
}

/// Sends `master` (whose slave is `name`) to the console socket at `path`
/// (an OCI runtime's `--console-socket`).
pub fn send_master(path: &Path, name: &[u8], master: BorrowedFd<'_>) -> Result<(), String> {
    let sock = UnixStream::connect(path)
        .map_err(|e| format!("--console-socket {}: {e}", path.display()))?;
    send_with_fd(sock.as_fd(), name, Some(master))
        .map_err(|e| format!("--console-socket {}: {}", path.display(), e.desc()))
}
