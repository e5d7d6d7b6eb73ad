//! A `supervisor serve` daemon for the session tests, and a raw HTTP/1.1
//! client of its Unix socket (one request per connection, `Connection:
//! close`, chunked bodies decoded), so the tests see exactly the bytes
//! the daemon sends.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::cgroups::SafetyCgroup;
use crate::common::engine::{poll_until, stop_daemon};
use crate::common::{bin, Tree, PATH};

/// A running daemon; stopped (by pid) on drop.
pub struct Daemon {
    child: Option<Child>,
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    dir: Tree,
    cgroup: Option<SafetyCgroup>,
    flags: Vec<String>,
}

impl Daemon {
    pub fn start() -> Daemon {
        Daemon::start_with(&[])
    }

    /// With these flags of `serve`'s besides --socket and --data-dir.
    pub fn start_with(flags: &[&str]) -> Daemon {
        let dir = Tree::new();
        let cgroup = SafetyCgroup::new("sessions", 4 << 30, 2048);
        let mut d = Daemon {
            child: None,
            socket: dir.join("serve.sock"),
            data_dir: dir.join("data"),
            dir,
            cgroup,
            flags: flags.iter().map(|f| f.to_string()).collect(),
        };
        d.launch();
        d
    }

    /// Starts the daemon (again) on the same socket and data directory.
    pub fn launch(&mut self) {
        let mut c = Command::new(bin());
        c.arg("serve")
            .arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(&self.flags)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0);
        if let Some(cg) = &self.cgroup {
            let script = cg.join_script();
            let mut wrapped = Command::new("/bin/sh");
            wrapped
                .args(["-c", &script, "sh"])
                .arg(c.get_program())
                .args(c.get_args());
            wrapped
                .current_dir(self.dir.path())
                .env_clear()
                .env("PATH", PATH)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .process_group(0);
            c = wrapped;
        }
        let _ = std::fs::remove_file(&self.socket);
        self.child = Some(c.spawn().expect("start supervisor serve"));
        let socket = self.socket.clone();
        assert!(
            poll_until(Duration::from_secs(60), || UnixStream::connect(&socket)
                .is_ok()),
            "supervisor serve did not come up"
        );
    }

    /// The daemon's pid.
    /// `supervisor sessions ARGS...` against this daemon's socket.
    pub fn sessions_cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(bin())
            .arg("sessions")
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run supervisor sessions")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// How many descriptors the daemon holds.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("the daemon's fds")
            .count()
    }

    /// SIGKILL (by pid) and reap: the daemon dies without cleaning up.
    /// Stops the daemon as an operator would (SIGTERM): it ends its pools
    /// and sessions before it exits.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_daemon(&mut child);
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> Answer {
        request(&self.socket, method, path, &[], body)
    }

    pub fn json(&self, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
        let a = self.request(method, path, body.as_bytes());
        let v = serde_json::from_slice(&a.body).unwrap_or(serde_json::Value::Null);
        (a.status, v)
    }

    /// Creates a session from `spec`; its id.
    pub fn create(&self, spec: &str) -> String {
        let (status, v) = self.json("POST", "/v1/sessions", spec);
        assert_eq!(status, 201, "create {spec}: {v}");
        v["id"].as_str().expect("an id").to_string()
    }

    /// Runs `command` in session `id`; the result.
    pub fn exec(&self, id: &str, command: &[&str]) -> serde_json::Value {
        let body = serde_json::json!({ "command": command }).to_string();
        let (status, v) = self.json("POST", &format!("/v1/sessions/{id}/exec"), &body);
        assert_eq!(status, 200, "exec {command:?}: {v}");
        v
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_daemon(&mut child);
        }
        if let Some(cg) = &self.cgroup {
            let emptied = cg.wait_empty(Duration::from_secs(20));
            if !emptied && !std::thread::panicking() {
                panic!(
                    "processes were left in the daemon's cgroup:\n{}",
                    cg.describe()
                );
            }
        }
    }
}

pub struct Answer {
    pub status: u16,
    pub headers: String,
    pub body: Vec<u8>,
}

/// One request to the daemon at `socket`.
pub fn request(
    socket: &Path,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut s = UnixStream::connect(socket).expect("connect to the daemon");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let headers = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = headers
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut body = raw[split + 4..].to_vec();
    if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16)
            .expect("a chunk size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
}
