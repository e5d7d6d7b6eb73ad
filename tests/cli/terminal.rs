//! stdio on a terminal: with a pty as stdin/stdout/stderr, the guest sees a
//! terminal as it would natively (isatty, the window size, ttyname — the
//! `tty` command), and TIOCSTI stays denied. Same script natively and
//! supervised; outputs compared.

use crate::common;
use common::*;
use std::io::Read;
use std::os::unix::io::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const SCRIPT: &str =
    "test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; test -t 2 && echo stderr-tty; \
                      stty size; echo done";

/// `tty` (ttyname) names the terminal, and /dev/tty is that terminal.
const TTYNAME: &str = "tty >/dev/null && echo ttyname-ok; echo via-dev-tty >/dev/tty; echo done";

/// Run `argv` with a fresh pty as its stdio; returns (exit code, output).
fn on_pty(argv: &[&str]) -> (Option<i32>, String) {
    let (mut master, mut slave) = (0, 0);
    let ws = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds; the name buffer and termios are null.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: the fds were just created and are owned here.
    let (m, s) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let mut cmd = Command::new(argv[0]);
    // SAFETY: setsid and ioctl are async-signal-safe; they make the pty the
    // child's controlling terminal, as a terminal emulator does.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut child = cmd
        .args(&argv[1..])
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/")
        .stdin(Stdio::from(s.try_clone().unwrap()))
        .stdout(Stdio::from(s.try_clone().unwrap()))
        .stderr(Stdio::from(s))
        .spawn()
        .expect("spawn");
    let (tx, rx) = mpsc::channel();
    let mut m2 = m.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the last slave fd is closed.
        while let Ok(n) = m2.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            if out.ends_with(b"done\r\n") {
                break;
            }
        }
        let _ = tx.send(out);
    });
    let out = rx.recv_timeout(Duration::from_secs(60));
    if out.is_err() {
        let _ = child.kill();
    }
    let st = child.wait().unwrap();
    drop(m);
    let out = out.expect("no output from the pty within 60 s");
    (
        st.code(),
        String::from_utf8_lossy(&out).replace("\r\n", "\n"),
    )
}

#[test]
fn terminal_stdio_behaves_as_natively() {
    let native = on_pty(&["/bin/sh", "-c", SCRIPT]);
    assert_eq!(
        native.1, "stdin-tty\nstdout-tty\nstderr-tty\n24 80\ndone\n",
        "fixture"
    );
    let bin = bin().display().to_string();
    let sup = on_pty(&[&bin, "run", "--", "/bin/sh", "-c", SCRIPT]);
    assert_same("terminal", &native.1, &sup.1);
    assert_eq!(sup.0, Some(0));
}

/// The guest's terminal is a pty of the sandbox's own devpts, relayed to
/// the host's (as `docker run -t` does), so ttyname() finds its name.
#[test]
fn terminal_has_a_name_inside() {
    let native = on_pty(&["/bin/sh", "-c", TTYNAME]);
    assert_eq!(native.1, "ttyname-ok\nvia-dev-tty\ndone\n", "fixture");
    let bin = bin().display().to_string();
    let sup = on_pty(&[&bin, "run", "--", "/bin/sh", "-c", TTYNAME]);
    assert_same("ttyname", &native.1, &sup.1);
}

/// TIOCSTI on a real terminal (the injection it exists to stop) is EPERM.
#[test]
fn tiocsti_on_a_terminal_is_denied() {
    if !have("/usr/bin/python3") {
        skip!("/usr/bin/python3 not installed");
    }
    let code = "import fcntl, termios\n\
                try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('injected')\n\
                except OSError as e:\n    print('errno', e.errno)\n\
                print('done')";
    let bin = bin().display().to_string();
    let (status, out) = on_pty(&[&bin, "run", "--", "/usr/bin/python3", "-c", code]);
    assert_eq!(out, "errno 1\ndone\n", "exit {status:?}");
}
