//! The guest's main process: waits for the supervisor's go-ahead, then
//! executes the command; and the supervisor's reading of how that went.
//!
//! Owns: the PATH search (done here, with plain execve, so the guest
//! makes only passed calls between the filter and exec), the exec-error
//! pipe (close-on-exec: end of stream = exec succeeded, four bytes = the
//! errno it failed with), and turning that errno into exit code and
//! message (127 not found, 126 cannot execute). Everything the child
//! needs is prepared before it exists (init's child shares init's
//! memory until it executes); it allocates nothing it could avoid.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::unistd::{close, dup2, execve, read, setsid, write};

use super::LaunchError;
use crate::sys::process::{exit_now, reset_signal_dispositions, unblock_signals};
use crate::sys::term::set_controlling_terminal;

/// PATH when the guest's environment has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The command, ready to execute.
#[derive(Clone, Debug)]
pub struct ExecPlan {
    /// argv[0] as the user wrote it, for messages.
    pub name: String,
    pub has_slash: bool,
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// An executable tried first, with its own argv (the static loader:
    /// [`ExecPlan::run_through`]); where its exec fails, the candidates
    /// are tried as always.
    through: Option<(CString, Vec<CString>)>,
}

impl ExecPlan {
    pub fn new(
        command: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<ExecPlan, LaunchError> {
        let bad = |what: String| LaunchError {
            exit_code: 125,
            message: what,
        };
        let first = command
            .first()
            .ok_or_else(|| bad("no command given".into()))?;
        let cstring = |s: &OsStr| {
            CString::new(s.as_bytes()).map_err(|_| bad(format!("{s:?} contains a NUL byte")))
        };
        let argv = command
            .iter()
            .map(|a| cstring(a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut envp = Vec::with_capacity(env.len());
        for (k, v) in env {
            if k.is_empty() || k.as_bytes().contains(&b'=') {
                return Err(bad(format!("invalid environment variable name {k:?}")));
            }
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            envp.push(cstring(&kv)?);
        }
        let path = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str());
        let candidates = candidates(first, path)
            .iter()
            .map(|p| cstring(p.as_os_str()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExecPlan {
            name: first.to_string_lossy().into_owned(),
            has_slash: first.as_bytes().contains(&b'/'),
            candidates,
            argv,
            envp,
            through: None,
        })
    }

    /// The paths execve will try, in order.
    pub fn candidate_paths(&self) -> impl Iterator<Item = &Path> {
        self.candidates
            .iter()
            .map(|c| Path::new(OsStr::from_bytes(c.as_bytes())))
    }

    /// Starts `program` (found beneath the root for this plan) through
    /// the executable `through`, as `through`'s argv `[name, program,
    /// argv...]` (the static loader, `static_loader.rs`). Where `through`
    /// cannot be executed (a mask or a mount over the view's /etc hides
    /// it), the command starts as it would without.
    pub fn run_through(&mut self, through: &str, name: &str, program: &Path) {
        let (Ok(through), Ok(name), Ok(program)) = (
            CString::new(through),
            CString::new(name),
            CString::new(program.as_os_str().as_bytes()),
        ) else {
            return;
        };
        let mut argv = vec![name, program];
        argv.extend(self.argv.iter().cloned());
        self.through = Some((through, argv));
    }

    /// The executable the command starts through, if any.
    #[cfg(test)]
    pub fn started_through(&self) -> Option<&Path> {
        self.through
            .as_ref()
            .map(|(path, _)| Path::new(OsStr::from_bytes(path.as_bytes())))
    }

    /// Adds `name=value` to the environment unless it has `name` already
    /// (`name` and `value` hold no NUL or `=`: the caller's constants).
    pub fn set_env_default(&mut self, name: &str, value: &str) {
        let prefix = format!("{name}=");
        if self
            .envp
            .iter()
            .any(|e| e.as_bytes().starts_with(prefix.as_bytes()))
        {
            return;
        }
        if let Ok(entry) = CString::new(format!("{prefix}{value}")) {
            self.envp.push(entry);
        }
    }
}

/// The paths to try, in order, as execvp would: the command itself if
/// it has a slash, else each PATH entry (empty = current directory).
pub fn candidates(cmd: &OsStr, path: Option<&OsStr>) -> Vec<PathBuf> {
    if cmd.as_bytes().contains(&b'/') {
        return vec![PathBuf::from(cmd)];
    }
    if cmd.is_empty() {
        return Vec::new();
    }
    let path = path.unwrap_or(OsStr::new(DEFAULT_PATH));
    path.as_bytes()
        .split(|&b| b == b':')
        .map(|dir| {
            if dir.is_empty() {
                Path::new(".")
            } else {
                Path::new(OsStr::from_bytes(dir))
            }
        })
        .map(|dir| dir.join(cmd))
        .collect()
}

/// Runs in the guest's main process (a child of init sharing its memory
/// until it executes, `sys::process::spawn_sharing_memory`; filter
/// installed): takes its user and drops every capability, takes the
/// terminal if given one, waits for one byte on `start` (with no `plan`:
/// for the command and stdio, `late.rs`), then executes the command. On
/// failure the errno goes to `report` and the process exits 126 or 127.
/// `start` and `report` close on exec. Drops nothing init owns.
pub(super) fn run_guest(
    plan: Option<&ExecPlan>,
    (start, report): (BorrowedFd<'_>, BorrowedFd<'_>),
    terminal: Option<(BorrowedFd<'_>, [bool; 3])>,
    user: Option<&super::users::GuestUser>,
) -> ! {
    // First of all, before any call of ours is serviced (the trap reads
    // a process's ids once).
    if let Err(e) = super::users::become_user(user) {
        let _ = write(report, &(e as i32).to_le_bytes());
        exit_now(126);
    }
    // Default dispositions before the wait (the mask, which keeps the
    // forwarded signals pending, after it): fewer calls between the
    // start and the exec.
    reset_signal_dispositions();
    let late;
    // A late command's message buffer: made before the wait and not
    // freed (the exec leaves it to init's memory, shared until then), so
    // nothing is unmapped while the command waits to start.
    let mut buf = match plan {
        Some(_) => Vec::new(),
        None => vec![0u8; super::late::MAX_MESSAGE],
    };
    let plan = match plan {
        Some(plan) => {
            if let Some((slave, stdio)) = terminal {
                take_terminal(slave, stdio);
            }
            wait_for_start(start);
            plan
        }
        // A late command says itself which descriptors are the terminal.
        None => match super::late::receive(start, &mut buf) {
            Some((p, on_tty)) => {
                if let Some((slave, _)) = terminal.filter(|_| on_tty.contains(&true)) {
                    take_terminal(slave, on_tty);
                }
                late = p;
                &late
            }
            None => exit_now(125),
        },
    };
    unblock_signals();
    let err = exec_first(plan);
    let _ = write(report, &(err as i32).to_le_bytes());
    exit_now(exit_code_for(err))
}

/// Reads the one byte of the start pipe; exits if the supervisor went
/// away (or dropped the sandbox) before start.
fn wait_for_start(start: BorrowedFd<'_>) {
    let mut byte = [0u8; 1];
    let got = loop {
        match read(start.as_raw_fd(), &mut byte) {
            Err(Errno::EINTR) => continue,
            r => break r,
        }
    };
    if got != Ok(1) {
        exit_now(125);
    }
}

/// A new session whose controlling terminal is the pty `slave`, which
/// becomes stdin, stdout, stderr where `stdio` says so (as the job control
/// of a shell expects: Ctrl-C then signals the guest's foreground group).
/// setsid, ioctl and dup2 all pass the filter. A failure leaves the guest
/// without job control, not without its command. Called in a child about
/// to execute: closes the child's copy of `slave` unless it is one of 0–2
/// (the child's descriptor table is its own; its owner's copy, in the
/// parent, stays open).
pub(super) fn take_terminal(slave: BorrowedFd<'_>, stdio: [bool; 3]) {
    let _ = setsid();
    let _ = set_controlling_terminal(slave);
    for (fd, _) in stdio.iter().enumerate().filter(|(_, &tty)| tty) {
        let _ = dup2(slave.as_raw_fd(), fd as i32);
    }
    if slave.as_raw_fd() > 2 {
        let _ = close(slave.as_raw_fd());
    }
}

/// Tries the executable the plan starts through, then each candidate;
/// returns the errno to report, execvp-style: EACCES from any candidate
/// wins over "not found" (a failed start through says nothing: the
/// command itself is tried).
pub(super) fn exec_first(plan: &ExecPlan) -> Errno {
    if let Some((through, argv)) = &plan.through {
        let _ = execve(through, argv, &plan.envp);
    }
    let mut result = Errno::ENOENT;
    let mut denied = false;
    for path in &plan.candidates {
        match execve(path, &plan.argv, &plan.envp) {
            Err(Errno::EACCES) => denied = true,
            Err(
                e @ (Errno::ENOENT
                | Errno::ENOTDIR
                | Errno::ESTALE
                | Errno::ENODEV
                | Errno::ETIMEDOUT),
            ) => result = e,
            Err(e) => return e,
            Ok(never) => match never {},
        }
    }
    if denied {
        Errno::EACCES
    } else {
        result
    }
}

/// The exit status of a guest whose exec failed with `e`.
pub fn exit_code_for(e: Errno) -> i32 {
    if e == Errno::ENOENT {
        127
    } else {
        126
    }
}

/// The error the supervisor reports for an exec that failed with `e`.
pub fn exec_error(plan_name: &str, has_slash: bool, e: Errno) -> LaunchError {
    let message = if e == Errno::ENOENT && !has_slash {
        format!("{plan_name}: command not found")
    } else {
        format!("{plan_name}: {}", e.desc())
    };
    LaunchError {
        exit_code: exit_code_for(e),
        message,
    }
}

/// Reads the exec-error pipe: `None` if exec succeeded (or the guest died
/// before trying), else the errno.
pub fn read_exec_error(pipe: &OwnedFd) -> Option<Errno> {
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < buf.len() {
        match read(pipe.as_raw_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    (got == 4).then(|| Errno::from_raw(i32::from_le_bytes(buf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_search() {
        let c = candidates(OsStr::new("ls"), Some(OsStr::new("/a::/b")));
        assert_eq!(c, [PathBuf::from("/a/ls"), "./ls".into(), "/b/ls".into()]);
        assert_eq!(
            candidates(OsStr::new("./x"), Some(OsStr::new("/a"))),
            [PathBuf::from("./x")]
        );
        assert_eq!(candidates(OsStr::new("ls"), None).len(), 3);
        assert!(candidates(OsStr::new(""), None).is_empty());
    }

    #[test]
    fn messages() {
        let e = exec_error("nope", false, Errno::ENOENT);
        assert_eq!(
            (e.exit_code, e.message.as_str()),
            (127, "nope: command not found")
        );
        let e = exec_error("./nope", true, Errno::ENOENT);
        assert_eq!(
            (e.exit_code, e.message.as_str()),
            (127, "./nope: No such file or directory")
        );
        let e = exec_error("/etc/passwd", true, Errno::EACCES);
        assert_eq!(
            (e.exit_code, e.message.as_str()),
            (126, "/etc/passwd: Permission denied")
        );
        assert_eq!(exec_error("x", true, Errno::ENOEXEC).exit_code, 126);
    }

    #[test]
    fn plan_checks() {
        assert_eq!(ExecPlan::new(&[], &[]).unwrap_err().exit_code, 125);
        let env = [("A=B".into(), "c".into())];
        assert!(ExecPlan::new(&["x".into()], &env).is_err());
        let env = [("PATH".into(), "/p".into()), ("A".into(), "1".into())];
        let p = ExecPlan::new(&["x".into(), "y".into()], &env).unwrap();
        assert_eq!(p.candidates, [CString::new("/p/x").unwrap()]);
        assert_eq!(p.envp[1], CString::new("A=1").unwrap());
        let mut p = p;
        p.set_env_default("A", "2");
        p.set_env_default("B", "3");
        assert_eq!(p.envp.len(), 3);
        assert_eq!(p.envp[2], CString::new("B=3").unwrap());
        assert_eq!(p.candidate_paths().next(), Some(Path::new("/p/x")));
        assert!(!p.has_slash);
        p.run_through("/etc/l", "l", Path::new("/p/x"));
        assert_eq!(p.started_through(), Some(Path::new("/etc/l")));
        let (_, argv) = p.through.as_ref().unwrap();
        assert_eq!(
            argv,
            &["l", "/p/x", "x", "y"].map(|a| CString::new(a).unwrap())
        );
        assert_eq!(p.argv.len(), 2);
        assert_eq!(p.candidate_paths().next(), Some(Path::new("/p/x")));
    }

    /// A loader that cannot be executed leaves the command to start as
    /// it is: the errno reported is the command's own.
    #[test]
    fn a_missing_loader_falls_back_to_the_command() {
        let mut p = ExecPlan::new(&["/nonexistent/x".into()], &[]).unwrap();
        p.run_through("/nonexistent/loader", "l", Path::new("/nonexistent/x"));
        assert_eq!(exec_first(&p), Errno::ENOENT);
    }
}
