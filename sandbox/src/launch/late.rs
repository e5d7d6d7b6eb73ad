//! A guest whose command comes late: the pool (`supervisor/src/pool/`) launches a
//! sandbox before anyone asks for it, so the main process's argv, its
//! environment and its stdin, stdout and stderr are only known at
//! [`super::Sandbox::start_late`].
//!
//! Owns the start channel of such a launch (a `SOCK_SEQPACKET` socketpair
//! in place of the start pipe) and its one message: three bytes, one per
//! descriptor 0, 1, 2 (0: keep what it inherited; 1: attached, by
//! SCM_RIGHTS, in that order; 2: the sandbox's pseudo-terminal), one byte
//! saying how the program starts (0: as the command names it; 1: through
//! the static loader, 2: through it with its call sites left as built,
//! the program's path beneath the view's root following as the first
//! string), argc (u32, little-endian), then every
//! argument and every `K=V` of the environment, each NUL-terminated. The
//! supervisor looked at the program before it sent (`fast_reads.rs`,
//! [`super::Sandbox::start_late`]). The guest's side ([`receive`]) puts
//! the descriptors in place and builds the [`ExecPlan`] (PATH search as
//! for any command); those it was not sent stay what it inherited (the
//! output capture's pipes). Does not own the exec itself (`exec.rs`,
//! which also takes the terminal) or where the request came from.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::unistd::dup2;

use super::exec::ExecPlan;
use super::LaunchError;
use crate::sys::fd::{recv_with_fds, send_with_fds};

/// Longest message the guest reads (its arguments and environment).
pub(super) const MAX_MESSAGE: usize = 256 * 1024;

/// What the guest's main process runs, chosen at start.
pub struct LateStart<'a> {
    pub command: &'a [OsString],
    /// The guest's complete environment.
    pub env: &'a [(OsString, OsString)],
    /// Its stdin, stdout, stderr; `None`: what it inherited.
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// Which of them are the sandbox's pseudo-terminal instead (launched
    /// with one: `LaunchConfig::pty`); a descriptor given there is not sent.
    pub terminal: [bool; 3],
}

/// The first three bytes' values.
const INHERITED: u8 = 0;
const ATTACHED: u8 = 1;
const TERMINAL: u8 = 2;
/// The fourth byte's: the program starts as named, or through the
/// static loader.
const AS_NAMED: u8 = 0;
const THROUGH_LOADER: u8 = 1;
const THROUGH_LOADER_NO_REWRITE: u8 = 2;
/// Where argc starts.
const HEADER: usize = 4;

/// The start channel: (the supervisor's end, the guest's end).
pub(super) fn channel() -> nix::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
}

/// Sends `start` on the supervisor's end, its program started through
/// the static loader from `through` when given (with the loader's
/// rewriting when its flag is set). EPIPE (the guest is
/// gone) is not an error here: the wait says why.
pub(super) fn send(
    sock: BorrowedFd<'_>,
    start: &LateStart<'_>,
    through: Option<(&Path, bool)>,
) -> Result<(), LaunchError> {
    let kinds = stdio_kinds(start);
    let fds: Vec<BorrowedFd<'_>> = (0..3)
        .filter(|&i| kinds[i] == ATTACHED)
        .filter_map(|i| start.stdio[i])
        .collect();
    let msg = encode(start, through);
    if msg.len() > MAX_MESSAGE {
        return Err(LaunchError::setup(
            "the command and environment are too long for the pool",
        ));
    }
    match send_with_fds(sock, &msg, &fds) {
        Ok(()) | Err(Errno::EPIPE) | Err(Errno::ECONNRESET) => Ok(()),
        Err(e) => Err(LaunchError::setup(format!(
            "starting the guest: {}",
            e.desc()
        ))),
    }
}

fn stdio_kinds(start: &LateStart<'_>) -> [u8; 3] {
    std::array::from_fn(|i| match (start.terminal[i], start.stdio[i]) {
        (true, _) => TERMINAL,
        (false, Some(_)) => ATTACHED,
        (false, None) => INHERITED,
    })
}

fn encode(start: &LateStart<'_>, through: Option<(&Path, bool)>) -> Vec<u8> {
    let mut msg = stdio_kinds(start).to_vec();
    match through {
        Some((program, rewrite)) => {
            msg.push(match rewrite {
                true => THROUGH_LOADER,
                false => THROUGH_LOADER_NO_REWRITE,
            });
            msg.extend_from_slice(&(start.command.len() as u32).to_le_bytes());
            msg.extend_from_slice(program.as_os_str().as_bytes());
            msg.push(0);
        }
        None => {
            msg.push(AS_NAMED);
            msg.extend_from_slice(&(start.command.len() as u32).to_le_bytes());
        }
    }
    for arg in start.command {
        msg.extend_from_slice(arg.as_bytes());
        msg.push(0);
    }
    for (k, v) in start.env {
        msg.extend_from_slice(k.as_bytes());
        msg.push(b'=');
        msg.extend_from_slice(v.as_bytes());
        msg.push(0);
    }
    msg
}

/// A command, its environment and the program to start through the
/// static loader, if any (and whether the loader rewrites its sites).
type Decoded = (
    Vec<OsString>,
    Vec<(OsString, OsString)>,
    Option<(PathBuf, bool)>,
);

/// The command, environment and loader's program of a message (without
/// its descriptors).
fn decode(msg: &[u8]) -> Option<Decoded> {
    let how = *msg.get(HEADER - 1)?;
    let argc = u32::from_le_bytes(msg.get(HEADER..HEADER + 4)?.try_into().ok()?) as usize;
    let body = msg.get(HEADER + 4..)?;
    let body = body.strip_suffix(&[0]).unwrap_or(body);
    let mut items = body
        .split(|&b| b == 0)
        .map(|s| OsString::from_vec(s.to_vec()));
    let through = match how {
        AS_NAMED => None,
        THROUGH_LOADER | THROUGH_LOADER_NO_REWRITE => {
            let program = Some(PathBuf::from(items.next()?)).filter(|p| p.is_absolute())?;
            Some((program, how == THROUGH_LOADER))
        }
        _ => return None,
    };
    if body.is_empty() && argc == 0 {
        return Some((Vec::new(), Vec::new(), None));
    }
    let command: Vec<OsString> = items.by_ref().take(argc).collect();
    if command.len() != argc {
        return None;
    }
    let env = items
        .map(|kv| {
            let bytes = kv.as_bytes();
            let eq = bytes.iter().position(|&b| b == b'=')?;
            Some((
                OsStr::from_bytes(&bytes[..eq]).to_owned(),
                OsStr::from_bytes(&bytes[eq + 1..]).to_owned(),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((command, env, through))
}

/// In the guest's main process: waits for the message (into `buf`, at
/// least [`MAX_MESSAGE`] bytes), takes the descriptors it carries as
/// stdin, stdout, stderr, and returns the plan and which of them are to
/// be the sandbox's terminal. `None`: the supervisor went away, or sent
/// something malformed.
pub(super) fn receive(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Option<(ExecPlan, [bool; 3])> {
    let (n, fds) = recv_with_fds(sock, buf).ok()?;
    let msg = buf.get(..n)?;
    if n < HEADER + 4 || msg[..3].iter().any(|&k| k > TERMINAL) {
        return None;
    }
    let wanted: Vec<i32> = (0..3).filter(|&i| msg[i as usize] == ATTACHED).collect();
    if wanted.len() != fds.len() {
        return None;
    }
    for (target, fd) in wanted.iter().zip(&fds) {
        dup2(fd.as_fd().as_raw_fd(), *target).ok()?;
    }
    let terminal = std::array::from_fn(|i| msg[i] == TERMINAL);
    let (command, env, through) = decode(msg)?;
    let mut plan = ExecPlan::new(&command, &env).ok()?;
    if let Some((program, rewrite)) = through {
        super::static_loader::start_through(&mut plan, &program, rewrite);
    }
    Some((plan, terminal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_decodes_to_what_was_encoded() {
        let command = vec![OsString::from("sh"), "".into(), "-c".into()];
        let env = vec![("A".into(), "1=2".into()), ("EMPTY".into(), "".into())];
        let start = LateStart {
            command: &command,
            env: &env,
            stdio: [None, None, None],
            terminal: [false, true, false],
        };
        let msg = encode(&start, None);
        assert_eq!(&msg[..4], &[INHERITED, TERMINAL, INHERITED, AS_NAMED]);
        assert_eq!(decode(&msg), Some((command.clone(), env.clone(), None)));
        let program = Path::new("/bin/static prog");
        let msg = encode(&start, Some((program, true)));
        assert_eq!(msg[3], THROUGH_LOADER);
        assert_eq!(
            decode(&msg),
            Some((
                command.clone(),
                env.clone(),
                Some((program.to_path_buf(), true))
            ))
        );
        let msg = encode(&start, Some((program, false)));
        assert_eq!(msg[3], THROUGH_LOADER_NO_REWRITE);
        assert_eq!(
            decode(&msg),
            Some((command, env, Some((program.to_path_buf(), false))))
        );
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert_eq!(decode(&[0, 0]), None);
        // argc says 3, one argument follows.
        assert_eq!(decode(&[0, 0, 0, 0, 3, 0, 0, 0, b'x', 0]), None);
        // An environment entry without '='.
        assert_eq!(decode(&[0, 0, 0, 0, 1, 0, 0, 0, b'x', 0, b'y', 0]), None);
        // An unknown way to start; the loader's program missing or relative.
        assert_eq!(decode(&[0, 0, 0, 3, 1, 0, 0, 0, b'x', 0]), None);
        assert_eq!(decode(&[0, 0, 0, 2, 1, 0, 0, 0, b'x', 0]), None);
        assert_eq!(decode(&[0, 0, 0, 1, 0, 0, 0, 0]), None);
        assert_eq!(decode(&[0, 0, 0, 1, 1, 0, 0, 0, b'p', 0, b'x', 0]), None);
    }
}
