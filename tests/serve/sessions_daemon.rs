//! The session tests' `supervisor serve` (`tests/serve/sessions/`,
//! `templates.rs`): the serve tests' daemon and HTTP client
//! (`common::serve`) inside a safety cgroup that must be empty once it
//! stops, killed and started again on the same data, with the session
//! API's conveniences (create a session, exec in it, JSON answers) and
//! `supervisor sessions` against its socket.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::bin;
use crate::common::cgroups::SafetyCgroup;
use crate::common::serve::{self, Http, Response};
use crate::common::Tree;

/// A running daemon; stopped (by pid) on drop, after which its cgroup
/// must empty.
pub struct Daemon {
    daemon: Option<serve::Daemon>,
    /// Its temp dir while it is down (between `kill` and `launch`).
    dir: Option<Tree>,
    pub socket: PathBuf,
    pub data_dir: PathBuf,
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
        let mut d = Daemon {
            daemon: None,
            socket: dir.join("serve.sock"),
            data_dir: dir.join("data"),
            dir: Some(dir),
            cgroup: SafetyCgroup::new("sessions", 4 << 30, 2048),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        };
        d.launch();
        d
    }

    /// Starts the daemon (again) on the same socket and data directory.
    pub fn launch(&mut self) {
        let dir = self.dir.take().expect("the daemon is down");
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        self.daemon = Some(serve::Daemon::start_in(dir, &flags, self.cgroup.as_ref()));
    }

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

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.daemon.as_ref().expect("running").pid()
    }

    /// How many descriptors the daemon holds.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("the daemon's fds")
            .count()
    }

    /// Stops the daemon as an operator would (SIGTERM): it ends its pools
    /// and sessions before it exits.
    pub fn stop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            self.dir = Some(daemon.stop().1);
        }
    }

    /// SIGKILL (by pid) and reap: the daemon dies without cleaning up.
    pub fn kill(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            self.dir = Some(daemon.kill());
        }
    }

    /// Waits (bounded) until nothing is left in the daemon's safety
    /// cgroup; what is left otherwise.
    pub fn emptied(&self, within: Duration) -> Result<(), String> {
        let cg = self
            .cgroup
            .as_ref()
            .ok_or("this machine gives the test no cgroup to make (root needed)")?;
        match cg.wait_empty(within) {
            true => Ok(()),
            false => Err(cg.describe()),
        }
    }

    /// Whether the daemon runs in a cgroup of the test's (hostile guests
    /// may run only then).
    pub fn confined(&self) -> bool {
        self.cgroup.is_some()
    }

    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> Response {
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
        // Its temp dir goes last, once the cgroup is empty.
        if let Some(daemon) = self.daemon.take() {
            self.dir = Some(daemon.stop().1);
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

/// One request to the daemon at `socket`, its body JSON unless `headers`
/// say otherwise.
pub fn request(
    socket: &Path,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut all = headers.to_vec();
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        all.push(("Content-Type", "application/json"));
    }
    Http::Unix(socket.to_path_buf()).request(method, path, &all, body)
}
