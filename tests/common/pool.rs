//! A `supervisor pool` daemon for the pool's tests (`tests/pool*.rs`):
//! started with its socket in a temp dir, stopped by its pid.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use super::{bin, terminate, Tree, PATH, TIMEOUT};

/// A running `supervisor pool`, stopped (SIGTERM, by pid) on drop.
pub struct Pool {
    child: Option<Child>,
    pub socket: PathBuf,
    _dir: Tree,
}

impl Pool {
    pub fn start(flags: &[&str]) -> Pool {
        Pool::start_as(flags, None, &bin())
    }

    /// The daemon as `user` (uid, gid), with `bin`; its cwd the temp dir.
    pub fn start_as(flags: &[&str], user: Option<(u32, u32)>, bin: &Path) -> Pool {
        Pool::launch(Command::new(bin), flags, user)
    }

    /// The daemon run by `wrapper` (`nice -n 5`, say), as root.
    pub fn start_under(wrapper: &[&str], flags: &[&str]) -> Pool {
        let mut c = Command::new(wrapper[0]);
        c.args(&wrapper[1..]).arg(bin());
        Pool::launch(c, flags, None)
    }

    fn launch(mut c: Command, flags: &[&str], user: Option<(u32, u32)>) -> Pool {
        let dir = Tree::new();
        if let Some((uid, gid)) = user {
            dir.give_to(uid, gid);
        }
        let socket = dir.join("pool.sock");
        c.arg("pool")
            .arg("--socket")
            .arg(&socket)
            .args(flags)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0);
        if let Some((uid, gid)) = user {
            c.uid(uid).gid(gid);
        }
        let child = c.spawn().expect("start the pool");
        let pool = Pool {
            child: Some(child),
            socket,
            _dir: dir,
        };
        pool.wait_for_socket();
        pool
    }

    pub fn wait_for_socket(&self) {
        let until = Instant::now() + TIMEOUT;
        while !self.socket.exists() {
            assert!(Instant::now() < until, "the pool made no socket");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// `--pool SOCKET`, for [`Run::sup`].
    pub fn flag(&self) -> Vec<String> {
        vec!["--pool".into(), self.socket.display().to_string()]
    }

    /// A client `supervisor run --pool SOCKET FLAGS -- /bin/sh -c SCRIPT`,
    /// stdin /dev/null, stderr piped, returned once SCRIPT has printed
    /// `up` (its first line) on the stdout also returned.
    pub fn client_running(
        &self,
        flags: &[&str],
        script: &str,
    ) -> (Child, BufReader<std::process::ChildStdout>) {
        let mut child = Command::new(bin())
            .arg("run")
            .args(self.flag())
            .args(flags)
            .args(["--", "/bin/sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("client");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("read");
        assert_eq!(line, "up\n", "the guest did not start");
        (child, out)
    }

    /// SIGTERM; the daemon's exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        terminate(self.child.take().expect("running"), TIMEOUT)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
    }
}
