//! The pool's messages, on `SOCK_SEQPACKET` unix sockets (one message
//! per event, so no framing).
//!
//! Client → sandbox, on the client's connection (the daemon passes the
//! connection on unread):
//! - `Q` + JSON [`Request`], with the client's stdin, stdout and stderr
//!   attached (SCM_RIGHTS, in that order; a fourth: the `--trace=FILE`
//!   file), first and once;
//! - `S` + a signal number (i32, little-endian): a signal the client was
//!   sent, for the guest.
//!
//! Sandbox → client: `X` + JSON [`Answer`], once, when the run has ended.
//!
//! Daemon ↔ sandbox, on the socketpair that is the sandbox's stdin:
//! `r` (sandbox: ready, waiting for a command), then from the daemon
//! either `C` with a client's connection attached (a client the daemon
//! accepted while no sandbox was ready), or `L` with the listening socket
//! attached: the sandbox accepts its one client itself, closes the
//! listening socket and says `t` (taken). The daemon closing its end
//! before either (or, after `L`, before a client came) means: tear down,
//! unused.
//!
//! Owns the encoding and decoding; nothing here trusts the peer: every
//! decode returns `None` or a one-line error on anything malformed. The
//! prefixes, field names and sizes the fast client (`src/fast_client.c`)
//! writes too are `wire.rs`'s.

use std::ffi::OsString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::wire::{ANSWER, REQUEST, SIGNAL};
use sandbox::sys::fd::{recv_with_fds, send_with_fds};

pub use super::wire::MAX_MESSAGE;

/// What the client asks a sandbox to run. The fields and their order
/// are `wire::REQUEST_FIELDS` (a test checks).
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Request {
    /// argv, as bytes (arguments need not be UTF-8).
    pub command: Vec<Vec<u8>>,
    /// The guest's whole environment, as `run` would build it.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// The client wants the run's report (`--report`).
    pub report: bool,
    /// The client wants the trace (`--trace`): to a fourth descriptor
    /// attached (`--trace=FILE`, opened by the client), else to its stderr.
    #[serde(default)]
    pub trace: bool,
    /// The client's `--timeout`, in seconds (the pool's own, if shorter,
    /// holds).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Which of the client's stdin, stdout, stderr are its terminal
    /// (`tty::host_terminal`, judged by the client, whose process group
    /// it is): the guest then gets the sandbox's pseudo-terminal there,
    /// relayed to the client's terminal, as `run` gives it.
    #[serde(default)]
    pub terminal: Option<[bool; 3]>,
}

impl Request {
    pub fn new(
        command: &[OsString],
        env: &[(OsString, OsString)],
        report: bool,
        trace: bool,
        timeout: Option<Duration>,
    ) -> Request {
        Request {
            command: command.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect(),
            report,
            trace,
            timeout_s: timeout.map(|d| d.as_secs_f64()),
            terminal: None,
        }
    }

    /// The client's `--timeout`; `None` too for a value no duration has
    /// (negative, not finite, too large).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_s
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    }

    pub fn command(&self) -> Vec<OsString> {
        self.command
            .iter()
            .map(|a| OsString::from_vec(a.clone()))
            .collect()
    }

    pub fn env(&self) -> Vec<(OsString, OsString)> {
        self.env
            .iter()
            .map(|(k, v)| (OsString::from_vec(k.clone()), OsString::from_vec(v.clone())))
            .collect()
    }
}

/// How the run ended, as `supervisor run` would have exited. The fields
/// and their order are `wire::ANSWER_FIELDS` (a test checks).
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Answer {
    pub code: i32,
    /// The one line `run` would have printed for an error of its own.
    pub message: Option<String>,
    /// The report (REPORT.md), when the request asked for it.
    pub report: Option<serde_json::Value>,
}

/// A message from the client.
pub enum FromClient {
    Request(Request, Vec<OwnedFd>),
    Signal(i32),
}

pub fn send_request(
    conn: BorrowedFd<'_>,
    req: &Request,
    stdio: &[BorrowedFd<'_>],
) -> Result<(), String> {
    let mut msg = vec![REQUEST];
    msg.extend(serde_json::to_vec(req).map_err(|e| e.to_string())?);
    if msg.len() > MAX_MESSAGE {
        return Err("the command and environment are too long for the pool".into());
    }
    send_with_fds(conn, &msg, stdio).map_err(|e| format!("sending the command: {}", e.desc()))
}

pub fn send_signal(conn: BorrowedFd<'_>, signo: i32) -> nix::Result<()> {
    let mut msg = vec![SIGNAL];
    msg.extend_from_slice(&signo.to_le_bytes());
    send_with_fds(conn, &msg, &[])
}

/// The next message from the client; `None` at its end (or on anything
/// malformed).
pub fn recv_from_client(conn: BorrowedFd<'_>) -> Option<FromClient> {
    recv_from_client_into(conn, &mut vec![0u8; MAX_MESSAGE])
}

/// [`recv_from_client`] into `buf` (at least [`MAX_MESSAGE`] bytes), for
/// a reader that takes many messages: one buffer, made (and its pages
/// touched) before the first.
pub fn recv_from_client_into(conn: BorrowedFd<'_>, buf: &mut [u8]) -> Option<FromClient> {
    let (n, fds) = recv_with_fds(conn, buf).ok()?;
    decode_from_client(buf.get(..n)?, fds)
}

/// A message from the client, received with `fds`; `None` if malformed.
pub fn decode_from_client(msg: &[u8], fds: Vec<OwnedFd>) -> Option<FromClient> {
    match *msg.first()? {
        REQUEST => {
            let req = serde_json::from_slice(&msg[1..]).ok()?;
            Some(FromClient::Request(req, fds))
        }
        SIGNAL => {
            let signo = i32::from_le_bytes(msg.get(1..5)?.try_into().ok()?);
            Some(FromClient::Signal(signo))
        }
        _ => None,
    }
}

pub fn send_answer(conn: BorrowedFd<'_>, answer: &Answer) -> nix::Result<()> {
    let mut msg = vec![ANSWER];
    msg.extend(serde_json::to_vec(answer).unwrap_or_default());
    send_with_fds(conn, &msg, &[])
}

/// The answer; `Err` with one line if the sandbox ended without one.
pub fn recv_answer(conn: BorrowedFd<'_>) -> Result<Answer, String> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let none = "the pool's sandbox ended without an answer";
    let (n, _) = recv_with_fds(conn, &mut buf).map_err(|e| format!("{none}: {}", e.desc()))?;
    decode_answer(buf.get(..n).unwrap_or_default())
}

/// The answer in `msg` (a message received from the sandbox; empty: its
/// end); `Err` with one line if it is none.
pub fn decode_answer(msg: &[u8]) -> Result<Answer, String> {
    match msg {
        [ANSWER, json @ ..] => serde_json::from_slice(json)
            .map_err(|e| format!("a malformed answer from the pool: {e}")),
        _ => Err("the pool's sandbox ended without an answer".into()),
    }
}

/// The sandbox's `r`: ready for a command.
pub const READY: &[u8] = b"r";
/// The daemon's `C`, with a client's connection attached.
pub const CONNECTION: &[u8] = b"C";

/// The daemon's `L`, with the listening socket attached: accept your
/// client yourself.
pub const LISTEN: &[u8] = b"L";
/// The sandbox's `t`: it accepted its client (and closed the listening
/// socket).
pub const TAKEN: &[u8] = b"t";

/// What the daemon hands a ready sandbox.
pub enum Handout {
    /// `C`: a client's connection.
    Connection(OwnedFd),
    /// `L`: the listening socket, to accept one client from.
    Listener(OwnedFd),
}

/// In the sandbox: waits for the daemon's `C` or `L`; `None` if the
/// daemon closed its end (tear down, unused), or on anything else.
pub fn recv_handout(daemon: BorrowedFd<'_>) -> Option<Handout> {
    let mut buf = [0u8; 8];
    let (n, fds) = recv_with_fds(daemon, &mut buf).ok()?;
    let fd = fds.into_iter().next()?;
    let message = buf.get(..n)?;
    if message == CONNECTION {
        Some(Handout::Connection(fd))
    } else if message == LISTEN {
        Some(Handout::Listener(fd))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire;
    use super::*;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsFd;

    fn pair() -> (OwnedFd, OwnedFd) {
        socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap()
    }

    #[test]
    fn a_request_arrives_whole_with_its_descriptors() {
        let (a, b) = pair();
        let command = vec![OsString::from("sh"), OsString::from_vec(vec![0xff, b'x'])];
        let env = vec![(OsString::from("K"), OsString::from("V=W"))];
        let req = Request::new(
            &command,
            &env,
            true,
            false,
            Some(Duration::from_millis(1500)),
        );
        send_request(a.as_fd(), &req, &[a.as_fd(), b.as_fd()]).unwrap();
        let Some(FromClient::Request(got, fds)) = recv_from_client(b.as_fd()) else {
            panic!("no request")
        };
        assert_eq!((got.command(), got.env(), got.report), (command, env, true));
        assert_eq!(got.timeout(), Some(Duration::from_millis(1500)));
        assert_eq!(fds.len(), 2);
        send_signal(a.as_fd(), 2).unwrap();
        assert!(matches!(
            recv_from_client(b.as_fd()),
            Some(FromClient::Signal(2))
        ));
    }

    #[test]
    fn garbage_and_the_end_are_not_messages() {
        let (a, b) = pair();
        send_with_fds(a.as_fd(), b"Q{not json", &[]).unwrap();
        assert!(recv_from_client(b.as_fd()).is_none());
        send_with_fds(a.as_fd(), b"S\x01", &[]).unwrap();
        assert!(recv_from_client(b.as_fd()).is_none());
        send_with_fds(a.as_fd(), b"X{}", &[]).unwrap();
        assert!(recv_answer(b.as_fd()).is_err());
        drop(a);
        assert!(recv_from_client(b.as_fd()).is_none());
        assert_eq!(
            recv_answer(b.as_fd()).unwrap_err(),
            "the pool's sandbox ended without an answer"
        );
    }

    /// The JSON serde writes, with every field given: `wire.rs`'s names,
    /// in its order (what the fast client writes and reads).
    #[test]
    fn the_fields_are_wire_s() {
        let req = Request::new(&[], &[], false, false, None);
        let [command, env, report, trace, timeout, terminal] = wire::REQUEST_FIELDS;
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&req).unwrap()).unwrap(),
            format!(
                r#"{{"{command}":[],"{env}":[],"{report}":false,"{trace}":false,"{timeout}":null,"{terminal}":null}}"#
            )
        );
        let answer = Answer {
            code: 0,
            message: None,
            report: None,
        };
        let [code, message, report] = wire::ANSWER_FIELDS;
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&answer).unwrap()).unwrap(),
            format!(r#"{{"{code}":0,"{message}":null,"{report}":null}}"#)
        );
    }

    #[test]
    fn an_answer_round_trips() {
        let (a, b) = pair();
        let answer = Answer {
            code: 130,
            message: Some("x".into()),
            report: Some(serde_json::json!({"reason": "exited"})),
        };
        send_answer(a.as_fd(), &answer).unwrap();
        assert_eq!(recv_answer(b.as_fd()).unwrap(), answer);
    }
}
