//! Running a [`Plan`]: in a sandbox of its shape's pool when there is one
//! and the plan has no files (the pool's protocol, `pool/protocol.rs`:
//! the request with three pipes as stdin, stdout and stderr, then the
//! answer with the report), else as a plain `supervisor run` child
//! (files staged on the host, mounted read-only and copied into the
//! scratch directory before the command starts, so they count against
//! the writable layer's `--disk` like any write there).
//!
//! Output is read as written: each chunk is kept (up to the plan's cap)
//! and, when the caller streams, sent on as an [`Event`]. Dropping the
//! future ends the execution: the pool's connection closes (the sandbox
//! kills its guest) or the `run` child is killed (its init dies with it).
//!
//! Does not own admission or keeping results.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use serde_json::Value;
use tokio::io::Interest;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::request::{Plan, SCRATCH};
use super::result::{Capture, Ending, ExecutionResult};
use crate::pool::protocol::{self, Answer, Request};
use crate::pool::socket::connect;
use sandbox::sys::fd::recv_with_fds;

/// Output as it is written.
pub enum Event {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
}

/// Where the runner finds what it needs.
pub struct Runner {
    pub exe: PathBuf,
    /// Report files and staged files, one per execution, removed after.
    pub work: PathBuf,
}

/// Where a run went mid-way: a sandbox that never answered.
const GRACE: Duration = Duration::from_secs(30);

impl Runner {
    /// Runs `plan` in the pool at `socket` (if any, else plainly).
    pub async fn run(
        &self,
        id: &str,
        plan: &Plan,
        socket: Option<&Path>,
        events: Option<mpsc::Sender<Event>>,
    ) -> ExecutionResult {
        let start = Instant::now();
        if let (Some(socket), true) = (socket, plan.files.is_empty()) {
            // A pool that no longer answers: a plain run instead.
            if let Ok(conn) = connect(socket) {
                return self.pooled(id, plan, conn, events, start).await;
            }
        }
        self.plain(id, plan, events, start).await
    }

    async fn pooled(
        &self,
        id: &str,
        plan: &Plan,
        conn: OwnedFd,
        events: Option<mpsc::Sender<Event>>,
        start: Instant,
    ) -> ExecutionResult {
        let failed = |message: String| setup_failed(id, message, true);
        let pipes = (|| -> nix::Result<_> {
            let cloexec = OFlag::O_CLOEXEC;
            Ok((
                nix::unistd::pipe2(cloexec)?,
                nix::unistd::pipe2(cloexec)?,
                nix::unistd::pipe2(cloexec)?,
            ))
        })();
        let ((in_r, in_w), (out_r, out_w), (err_r, err_w)) = match pipes {
            Ok(p) => p,
            Err(e) => return failed(format!("pipes: {}", e.desc())),
        };
        let argv: Vec<OsString> = plan.argv.iter().map(OsString::from).collect();
        let env: Vec<(OsString, OsString)> = plan
            .env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        let request = Request::new(
            &argv,
            &env,
            true,
            false,
            Some(Duration::from_secs_f64(plan.timeout_s)),
        );
        let sent = protocol::send_request(
            conn.as_fd(),
            &request,
            &[in_r.as_fd(), out_w.as_fd(), err_w.as_fd()],
        );
        drop((in_r, out_w, err_w));
        if let Err(e) = sent {
            return failed(e);
        }
        let streams = (|| -> std::io::Result<_> {
            Ok((
                pipe::Sender::from_owned_fd(in_w)?,
                pipe::Receiver::from_owned_fd(out_r)?,
                pipe::Receiver::from_owned_fd(err_r)?,
                UnixStream::from_std(std::os::unix::net::UnixStream::from(conn))?,
            ))
        })();
        let (stdin, stdout, stderr, conn) = match streams {
            Ok(s) => s,
            Err(e) => return failed(format!("pipes: {e}")),
        };
        let answer = async {
            loop {
                if let Err(e) = conn.readable().await {
                    return Err(format!("the pool's connection: {e}"));
                }
                let mut buf = vec![0u8; protocol::MAX_MESSAGE];
                let got = conn.try_io(Interest::READABLE, || {
                    recv_with_fds(conn_fd(&conn), &mut buf).map_err(std::io::Error::from)
                });
                match got {
                    Ok((n, _)) => return protocol::decode_answer(buf.get(..n).unwrap_or_default()),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => {
                        return Err(format!("the pool's sandbox ended without an answer: {e}"))
                    }
                }
            }
        };
        let waited = tokio::time::timeout(Duration::from_secs_f64(plan.timeout_s) + GRACE, async {
            tokio::join!(
                feed(stdin, &plan.stdin),
                drain(stdout, plan.capture_bytes, events.clone(), Event::Stdout),
                drain(stderr, plan.capture_bytes, events.clone(), Event::Stderr),
                answer,
            )
        })
        .await;
        let wall = start.elapsed().as_secs_f64() * 1000.0;
        match waited {
            Ok((
                (),
                out,
                err,
                Ok(Answer {
                    code,
                    message,
                    report,
                }),
            )) => ExecutionResult::new(
                id,
                Ending {
                    report: report.as_ref(),
                    code,
                    message,
                    wall_ms: wall,
                },
                &out,
                &err,
                true,
            ),
            Ok(((), out, err, Err(message))) => ExecutionResult::new(
                id,
                Ending {
                    report: None,
                    code: 125,
                    message: Some(message),
                    wall_ms: wall,
                },
                &out,
                &err,
                true,
            ),
            Err(_) => failed("the pool's sandbox did not end after its timeout".into()),
        }
    }

    async fn plain(
        &self,
        id: &str,
        plan: &Plan,
        events: Option<mpsc::Sender<Event>>,
        start: Instant,
    ) -> ExecutionResult {
        let report = self.work.join(format!("{id}.report.json"));
        let staged = self.work.join(format!("{id}.files"));
        let result = self
            .plain_in(id, plan, events, start, &report, &staged)
            .await;
        let _ = tokio::fs::remove_file(&report).await;
        let _ = tokio::fs::remove_dir_all(&staged).await;
        result
    }

    async fn plain_in(
        &self,
        id: &str,
        plan: &Plan,
        events: Option<mpsc::Sender<Event>>,
        start: Instant,
        report: &Path,
        staged: &Path,
    ) -> ExecutionResult {
        let failed = |message: String| setup_failed(id, message, false);
        let mut args: Vec<OsString> = vec!["run".into()];
        args.extend(plan.shape.flags().into_iter().map(OsString::from));
        args.push(format!("--workdir={SCRATCH}").into());
        args.push(format!("--timeout={}", plan.timeout_s).into());
        args.push("--report".into());
        args.push(report.into());
        for (k, v) in &plan.env {
            args.push(format!("--env={k}={v}").into());
        }
        if !plan.files.is_empty() {
            if let Err(e) = stage(staged, &plan.files).await {
                return failed(format!("staging the files: {e}"));
            }
            // The stage mounted read-only, copied into the scratch
            // directory by the guest's own sh and cp, then the command.
            let mut mount = OsString::from("--ro=");
            mount.push(staged);
            mount.push(":/.serve-files");
            args.push(mount);
            args.push("--".into());
            let copy = format!("cp -R /.serve-files/. {SCRATCH}/ && exec \"$@\"");
            args.extend(["/bin/sh", "-c", &copy, "sh"].map(OsString::from));
        } else {
            args.push("--".into());
        }
        args.extend(plan.argv.iter().map(OsString::from));
        let mut command = tokio::process::Command::new(&self.exe);
        command.args(args);
        command
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return failed(format!("starting {}: {e}", self.exe.display())),
        };
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return failed("the run's stdio".into());
        };
        let waited = tokio::time::timeout(Duration::from_secs_f64(plan.timeout_s) + GRACE, async {
            tokio::join!(
                feed(stdin, &plan.stdin),
                drain(stdout, plan.capture_bytes, events.clone(), Event::Stdout),
                drain(stderr, plan.capture_bytes, events.clone(), Event::Stderr),
                child.wait(),
            )
        })
        .await;
        let wall = start.elapsed().as_secs_f64() * 1000.0;
        let ((), out, err, status) = match waited {
            Ok(w) => w,
            Err(_) => return failed("the sandbox did not end after its timeout".into()),
        };
        let code = status.ok().and_then(|s| s.code()).unwrap_or(125);
        let report: Option<Value> = tokio::fs::read(report)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        // Without a report the run failed before it: its one line is the
        // last of its stderr.
        let message = match &report {
            Some(_) => None,
            None => Some(
                String::from_utf8_lossy(&err.bytes)
                    .lines()
                    .last()
                    .unwrap_or("the run ended without a report")
                    .trim_start_matches("supervisor: ")
                    .to_string(),
            ),
        };
        ExecutionResult::new(
            id,
            Ending {
                report: report.as_ref(),
                code,
                message,
                wall_ms: wall,
            },
            &out,
            &err,
            false,
        )
    }
}

/// Writes the files under `dir` (their paths are checked relative ones).
async fn stage(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    for (path, content) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::write(&target, content).await?;
    }
    Ok(())
}

/// Writes `bytes` to the guest's stdin, then closes it; a guest that
/// stops reading ends this quietly.
async fn feed(mut to: impl AsyncWrite + Unpin, bytes: &[u8]) {
    let _ = to.write_all(bytes).await;
    let _ = to.shutdown().await;
}

/// Reads a stream to its end: kept up to `cap`, each chunk sent on.
async fn drain(
    mut from: impl AsyncRead + Unpin,
    cap: usize,
    events: Option<mpsc::Sender<Event>>,
    event: fn(Vec<u8>) -> Event,
) -> Capture {
    let mut capture = Capture::new(cap);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return capture,
            Ok(n) => {
                let before = capture.bytes.len();
                capture.push(&buf[..n]);
                if let Some(tx) = &events {
                    let kept = capture.bytes[before..].to_vec();
                    if !kept.is_empty() {
                        let _ = tx.send(event(kept)).await;
                    }
                }
            }
        }
    }
}

/// The result of an execution whose sandbox could not be set up or
/// waited for (`pooled`: whether a pool was to run it): exit code 125,
/// `message` saying why, no output.
fn setup_failed(id: &str, message: String, pooled: bool) -> ExecutionResult {
    let none = Capture::new(0);
    let ending = Ending {
        report: None,
        code: 125,
        message: Some(message),
        wall_ms: 0.0,
    };
    ExecutionResult::new(id, ending, &none, &none, pooled)
}

/// The pool connection's descriptor (a `SOCK_SEQPACKET` socket the
/// tokio stream only watches for readiness).
fn conn_fd(conn: &UnixStream) -> std::os::fd::BorrowedFd<'_> {
    conn.as_fd()
}
