//! A `supervisor serve` daemon for the serve tests (`tests/serve/`):
//! started with its socket and data dir in a temp dir (optionally inside
//! a safety cgroup), stopped by its pid, or killed and started again on
//! the same data; and a small HTTP/1.1 client over the Unix socket or TCP
//! ([`Http`]): one request per connection, `Content-Length` and chunked
//! bodies, and a reader of a streamed body line by line. The session
//! tests' conveniences on top of it are `tests/serve/sessions_daemon.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cgroups::SafetyCgroup;
use super::{bin, terminate, Tree, PATH, TIMEOUT};

/// A running `supervisor serve`, stopped (SIGTERM, by pid) on drop.
pub struct Daemon {
    child: Option<Child>,
    pub socket: PathBuf,
    pub data: PathBuf,
    pub dir: Tree,
    pub log: PathBuf,
}

impl Daemon {
    pub fn start(flags: &[&str]) -> Daemon {
        Daemon::start_in(Tree::new(), flags, None)
    }

    /// The daemon with its data in `dir` (reused across a restart),
    /// started inside `cgroup` when given.
    pub fn start_in(dir: Tree, flags: &[&str], cgroup: Option<&SafetyCgroup>) -> Daemon {
        let socket = dir.join("serve.sock");
        let data = dir.join("data");
        let log = dir.join("serve.log");
        let mut c = match cgroup {
            Some(cg) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c").arg(cg.join_script()).arg("sh").arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        c.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .arg("--data-dir")
            .arg(&data)
            .args(flags)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .process_group(0);
        // A daemon killed before (`kill`) leaves its socket behind.
        let _ = std::fs::remove_file(&socket);
        let child = c.spawn().expect("start serve");
        let d = Daemon {
            child: Some(child),
            socket,
            data,
            dir,
            log,
        };
        let until = Instant::now() + TIMEOUT;
        while UnixStream::connect(&d.socket).is_err() {
            assert!(
                Instant::now() < until,
                "serve did not come up: {}",
                d.log_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn http(&self) -> Http {
        Http::Unix(self.socket.clone())
    }

    /// SIGTERM; the daemon's exit status. Returns its temp dir, for a
    /// restart on the same data.
    pub fn stop(mut self) -> (std::process::ExitStatus, Tree) {
        let status = self.stop_child();
        let dir = std::mem::replace(&mut self.dir, Tree::new());
        (status, dir)
    }

    /// SIGKILL (by pid) and reap: the daemon dies without cleaning up.
    /// Returns its temp dir, for a restart on the same data.
    pub fn kill(mut self) -> Tree {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        std::mem::replace(&mut self.dir, Tree::new())
    }

    fn stop_child(&mut self) -> std::process::ExitStatus {
        terminate(self.child.take().expect("running"), TIMEOUT)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop_child();
        }
    }
}

/// Where requests go.
#[derive(Clone)]
pub enum Http {
    Unix(PathBuf),
    Tcp(String),
}

/// One answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body's one-line `error` (panics if it is not one).
    pub fn error(&self) -> String {
        let e = self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error in {:?}", String::from_utf8_lossy(&self.body)))
            .to_string();
        assert!(!e.is_empty() && !e.contains('\n'), "not one line: {e:?}");
        e
    }
}

pub trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

impl Http {
    pub fn connect(&self) -> Box<dyn Stream> {
        let s: Box<dyn Stream> = match self {
            Http::Unix(p) => Box::new(UnixStream::connect(p).expect("connect to serve")),
            Http::Tcp(a) => Box::new(TcpStream::connect(a).expect("connect to serve")),
        };
        s
    }

    /// Sends a request on a fresh connection; the connection, ready for
    /// the answer.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> BufReader<Box<dyn Stream>> {
        let mut s = self.connect();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: serve\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).expect("send");
        s.write_all(body).expect("send");
        BufReader::new(s)
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut conn = self.send(method, path, headers, body);
        let (status, headers) = read_head(&mut conn);
        let chunked = headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
        let length = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok());
        let mut body = vec![];
        if chunked {
            while let Some(chunk) = read_chunk(&mut conn) {
                body.extend(chunk);
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            conn.read_exact(&mut body).expect("the body");
        } else {
            conn.read_to_end(&mut body).expect("the body");
        }
        Response {
            status,
            headers,
            body,
        }
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> Response {
        let bytes = serde_json::to_vec(body).expect("json");
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            &bytes,
        )
    }
}

/// The status line and headers.
pub fn read_head(conn: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    conn.read_line(&mut line).expect("the status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"));
    let mut headers = vec![];
    loop {
        let mut h = String::new();
        conn.read_line(&mut h).expect("a header");
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    (status, headers)
}

/// The next chunk of a chunked body; `None` at its end.
pub fn read_chunk(conn: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut size = String::new();
    conn.read_line(&mut size).ok()?;
    let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
    let mut chunk = vec![0u8; n + 2];
    conn.read_exact(&mut chunk).ok()?;
    chunk.truncate(n);
    (n > 0).then_some(chunk)
}

/// Reads a chunked NDJSON body's next whole line (chunks may split or
/// join lines: `pending` keeps what is left).
pub fn next_line(conn: &mut impl BufRead, pending: &mut Vec<u8>) -> Option<serde_json::Value> {
    loop {
        if let Some(i) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=i).collect();
            return Some(serde_json::from_slice(&line).expect("an NDJSON line"));
        }
        pending.extend(read_chunk(conn)?);
    }
}

/// Processes whose command line holds `marker` (sandboxed ones too: the
/// host's /proc shows them).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = vec![];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(marker) {
                found.push(pid);
            }
        }
    }
    found
}

/// Descriptors `pid` has open.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}
