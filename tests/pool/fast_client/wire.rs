//! The two clients against one protocol definition: a stand-in for a
//! pool's sandbox (a socket of the test's own, no sandbox behind it)
//! takes each client's request as bytes and decodes it with the Rust
//! protocol's own parser (`supervisor::pool::protocol`), then answers with
//! the Rust protocol's encoder. The fast client's request must be the
//! bytes serde writes for what it decodes to, and the same request as the
//! Rust client's; each answer must come out of both clients alike (exit
//! code, stderr); the signals they pass on must be the same messages.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::socket::{
    bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
};
use nix::unistd::Pid;
use sandbox::sys::fd::{accept, recv_with_fds, send_with_fds};
use supervisor::pool::protocol::{self, Answer, FromClient, Request, MAX_MESSAGE};
use supervisor::pool::wire;

use super::SLOW;
use crate::common::{bin, kill_after, Tree, PATH, TIMEOUT};

/// A listening socket where a pool's would be.
struct StandIn {
    listener: OwnedFd,
    socket: PathBuf,
    _dir: Tree,
}

/// One client, connected: its process and its connection.
struct Client {
    child: Child,
    conn: OwnedFd,
}

/// What a client did with an answer: exit code, signal, stderr.
type Ending = (Option<i32>, Option<i32>, String);

impl StandIn {
    fn new() -> StandIn {
        let dir = Tree::new();
        let path = dir.join("pool.sock");
        let listener = socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .expect("socket");
        bind(
            std::os::fd::AsRawFd::as_raw_fd(&listener),
            &UnixAddr::new(&path).expect("address"),
        )
        .expect("bind");
        listen(&listener, Backlog::new(4).expect("backlog")).expect("listen");
        StandIn {
            listener,
            socket: path,
            _dir: dir,
        }
    }

    /// `run --pool SOCKET [flags] -- argv`, with `env` only; its connection.
    fn client(&self, flags: &[&str], argv: &[OsString], env: &[(&str, OsString)]) -> Client {
        let mut cmd = Command::new(bin());
        cmd.arg("run")
            .arg("--pool")
            .arg(&self.socket)
            .args(flags)
            .arg("--")
            .args(argv)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("client");
        let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
        let ms = TIMEOUT.as_millis() as u32;
        let ready = poll(&mut fds, PollTimeout::try_from(ms).expect("timeout")).expect("poll");
        assert_eq!(ready, 1, "the client did not connect");
        let conn = accept(self.listener.as_fd()).expect("accept");
        Client { child, conn }
    }
}

impl Client {
    /// The next message, as bytes, and how many descriptors came with it.
    fn message(&self) -> (Vec<u8>, usize) {
        let mut buf = vec![0u8; MAX_MESSAGE];
        let (n, fds) = recv_with_fds(self.conn.as_fd(), &mut buf).expect("receive");
        buf.truncate(n);
        (buf, fds.len())
    }

    /// The request, as bytes and as the Rust protocol decodes them.
    fn request(&self) -> (Vec<u8>, Request) {
        let (bytes, fds) = self.message();
        assert_eq!(fds, 3, "stdin, stdout and stderr go with the request");
        match protocol::decode_from_client(&bytes, Vec::new()) {
            Some(FromClient::Request(req, _)) => (bytes, req),
            _ => panic!("not a request: {:?}", String::from_utf8_lossy(&bytes)),
        }
    }

    /// The signal number a `signal` sent to the client arrives as.
    fn passes_on(&self, signal: Signal) -> i32 {
        kill(Pid::from_raw(self.child.id() as i32), signal).expect("kill");
        let (bytes, _) = self.message();
        assert_eq!(bytes.first(), Some(&wire::SIGNAL), "{bytes:?}");
        match protocol::decode_from_client(&bytes, Vec::new()) {
            Some(FromClient::Signal(n)) => n,
            _ => panic!("not a signal: {bytes:?}"),
        }
    }

    /// Sends `answer` (raw bytes; `None`: closes the connection), then
    /// waits for the client's end.
    fn ends(self, answer: Option<&[u8]>) -> Ending {
        let Client { child, conn } = self;
        if let Some(bytes) = answer {
            send_with_fds(conn.as_fd(), bytes, &[]).expect("answer");
        }
        drop(conn);
        let guard = kill_after(child.id(), TIMEOUT);
        let out = child.wait_with_output().expect("wait");
        drop(guard);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), out.status.signal(), stderr)
    }
}

/// The answer's message as the Rust protocol sends it.
fn encoded(answer: &Answer) -> Vec<u8> {
    let mut msg = vec![wire::ANSWER];
    msg.extend(serde_json::to_vec(answer).expect("answer's JSON"));
    msg
}

fn odd_argv() -> Vec<OsString> {
    vec![
        "/bin/echo".into(),
        "".into(),
        "two words".into(),
        "quote \" backslash \\ tab \t newline \n".into(),
        "é ✓ \u{1} \u{7f}".into(),
        OsString::from_vec(vec![0xff, 0xfe, b'a', 0x80]),
        "--pool".into(),
        "-n".into(),
    ]
}

fn odd_env() -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", PATH.into()),
        ("HOME", "/home/x y".into()),
        ("LANG", OsString::from_vec(vec![b'C', 0xff, b'"'])),
        ("NOT_PASSED", "x".into()),
    ]
}

#[test]
fn both_clients_send_the_request_serde_writes() {
    let pool = StandIn::new();
    let (argv, env) = (odd_argv(), odd_env());
    let fast = pool.client(&[], &argv, &env);
    let (fast_bytes, fast_req) = fast.request();
    let slow = pool.client(&SLOW, &argv, &env);
    let (_, mut slow_req) = slow.request();
    let mut canonical = vec![wire::REQUEST];
    canonical.extend(serde_json::to_vec(&fast_req).expect("JSON"));
    assert_eq!(
        String::from_utf8_lossy(&fast_bytes),
        String::from_utf8_lossy(&canonical),
        "the fast client's request is not serde's bytes for what it means"
    );
    assert_eq!(fast_bytes, canonical);
    // The Rust client's differs in the timeout its flag asks for only.
    assert_eq!(slow_req.timeout_s.take(), Some(3600.0));
    assert_eq!(fast_req, slow_req);
    assert_eq!(fast_req.command(), argv);
    let empty = Answer {
        code: 0,
        message: None,
        report: None,
    };
    assert_eq!(
        fast.ends(Some(&encoded(&empty))),
        (Some(0), None, "".into())
    );
    assert_eq!(
        slow.ends(Some(&encoded(&empty))),
        (Some(0), None, "".into())
    );
}

#[test]
fn both_clients_read_every_answer_alike() {
    let pool = StandIn::new();
    let argv: Vec<OsString> = vec!["/bin/true".into()];
    let env = [("PATH", OsString::from(PATH))];
    let answer = |code: i32, message: Option<&str>| {
        Some(encoded(&Answer {
            code,
            message: message.map(str::to_string),
            report: None,
        }))
    };
    let odd = "no such \"command\" \\ \t \u{1} \u{1f} é ✓ \u{7f} {\"code\":7}";
    let cases: Vec<(&str, Option<Vec<u8>>)> = vec![
        ("exit 0", answer(0, None)),
        ("exit 3", answer(3, None)),
        ("exit 255", answer(255, None)),
        ("a signal's code", answer(143, None)),
        ("an error's line", answer(125, Some("the command failed"))),
        ("a line with escapes", answer(127, Some(odd))),
        ("an empty line", answer(1, Some(""))),
        ("no answer", None),
        ("not an answer", Some(b"Q{}".to_vec())),
    ];
    for (what, bytes) in &cases {
        let fast = pool.client(&[], &argv, &env);
        fast.request();
        let fast = fast.ends(bytes.as_deref());
        let slow = pool.client(&SLOW, &argv, &env);
        slow.request();
        let slow = slow.ends(bytes.as_deref());
        assert_eq!(fast, slow, "{what}");
    }
    // A malformed answer: the same line, the Rust client adds serde's why.
    for bytes in [&b"X{}"[..], b"X{\"code\":\"3\"}", b"Xnot json"] {
        let fast = pool.client(&[], &argv, &env);
        fast.request();
        let (code, signal, line) = fast.ends(Some(bytes));
        assert_eq!(
            (code, signal, line.as_str()),
            (
                Some(125),
                None,
                "supervisor: a malformed answer from the pool\n"
            ),
            "{bytes:?}"
        );
        let slow = pool.client(&SLOW, &argv, &env);
        slow.request();
        let (code, _, line) = slow.ends(Some(bytes));
        assert_eq!(code, Some(125), "{bytes:?}");
        assert!(
            line.starts_with("supervisor: a malformed answer from the pool: "),
            "{line}"
        );
    }
}

#[test]
fn both_clients_pass_signals_on_as_the_same_messages() {
    let pool = StandIn::new();
    let argv: Vec<OsString> = vec!["/bin/true".into()];
    let env = [("PATH", OsString::from(PATH))];
    let signals = [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGTERM,
        Signal::SIGWINCH,
    ];
    for flags in [&[][..], &SLOW[..]] {
        let client = pool.client(flags, &argv, &env);
        client.request();
        for s in signals {
            assert_eq!(client.passes_on(s), s as i32, "{s:?}, flags {flags:?}");
        }
        let done = encoded(&Answer {
            code: 0,
            message: None,
            report: None,
        });
        assert_eq!(client.ends(Some(&done)), (Some(0), None, "".into()));
    }
}
