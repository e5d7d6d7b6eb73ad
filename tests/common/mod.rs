//! Shared helpers of the integration tests (each area's `tests/AREA/main.rs`
//! declares `mod common` from here; its modules `use crate::common`).
//!
//! What is here:
//! - [`bin`]: the `supervisor` binary cargo built for this test run.
//! - [`Run`]: one command, run natively or under `supervisor run` with the same
//!   argv, cwd, environment and stdin, with a timeout on every child (killed by
//!   its process group after [`Run::timeout`], and the test fails).
//! - [`c_prog`]: the C programs of `tests/c/*.c`, built once per test binary
//!   with `cc` into `$CARGO_TARGET_TMPDIR/cprogs` (visible in the sandbox
//!   through [`c_mounts`]).
//! - [`tiny_rootfs`]: a `--rootfs` tree holding one static program.
//! - [`c_static`]: `tests/c/static_reads.c` linked statically, what it
//!   reads and prints, for every way a command starts.
//! - [`Tree`]: temp trees, and [`snapshot`] of a tree for comparing results.
//! - [`normalize`]: the only differences between a native and a supervised
//!   output that a test may erase; each one is documented there.
//! - [`tester_bin`]: the user `tester` and a copy of the binary it can run.
//! - [`skip!`]: skipping with a printed reason when a tool is missing.
//! - [`kill_after`]: a bound on a child spawned and read by hand;
//!   [`driven::interactive`]: such a `supervisor run`.
//! - [`engine`], [`engine_cli`]: starting and cleaning up after a real
//!   container engine, and the cases Docker's and Podman's command lines
//!   share.
//! - [`pool::Pool`]: a `supervisor pool` daemon for the pool's tests.
//! - [`serve::Daemon`]: a `supervisor serve` daemon, and [`serve::Http`], a
//!   small HTTP/1.1 client over its socket.
//! - [`kernel_log::KernelLog`]: the seccomp records a run left in the host's
//!   kernel log.
//!
//! Not here: what any single test expects.
#![allow(dead_code)]

pub mod cgroups;
mod cprogs;
pub mod driven;
pub mod engine;
pub mod engine_cli;
pub mod kernel_log;
mod kill_after;
pub mod oci;
pub mod pool;
pub mod probes;
mod rootfs;
pub mod serve;
mod static_reads;
mod tester;
mod tree;

pub use cprogs::*;
#[allow(unused_imports)] // not every test binary drives a child by hand
pub use kill_after::*;
#[allow(unused_imports)] // not every test binary builds a rootfs
pub use rootfs::*;
#[allow(unused_imports)] // not every test binary runs the static program
pub use static_reads::*;
#[allow(unused_imports)] // not every test binary runs as tester
pub use tester::*;
pub use tree::*;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// Print why a test is skipped, then return from it. Never a silent pass.
#[macro_export]
macro_rules! skip {
    ($($arg:tt)*) => {{
        eprintln!("SKIPPED {}: {}", module_path!(), format!($($arg)*));
        return;
    }};
}

/// Path of the supervisor binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_supervisor"))
}

/// The PATH every test child gets, natively and (passed through) supervised.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Default per-child timeout.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Is `tool` an executable file (absolute) or found in [`PATH`]?
pub fn have(tool: &str) -> bool {
    let is_exe = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if tool.contains('/') {
        return is_exe(Path::new(tool));
    }
    PATH.split(':').any(|d| is_exe(&Path::new(d).join(tool)))
}

/// A TCP port of the host's loopback that was free a moment ago (bound
/// and let go: another process may take it before the test does).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    l.local_addr().expect("its address").port()
}

/// The result of one child.
#[derive(Debug, Clone)]
pub struct Out {
    /// Exit code, or `None` when killed by a signal.
    pub code: Option<i32>,
    /// Signal that killed it.
    pub signal: Option<i32>,
    pub stdout_bytes: Vec<u8>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// A short dump for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "code={:?} signal={:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }
    /// The number after `name: ` in stdout (a test program's summary
    /// line, e.g. `opened: 12 errors: 0`); panics with the dump if absent.
    pub fn field(&self, name: &str) -> i64 {
        let v = (self.stdout.split(&format!("{name}: ")).nth(1))
            .and_then(|r| r.split_whitespace().next());
        v.and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {}", self.dump()))
    }
    /// Assert exit code 0 (with the dump on failure).
    pub fn ok(self, what: &str) -> Self {
        assert_eq!(self.code, Some(0), "{what} failed:\n{}", self.dump());
        self
    }
    /// Assert that each of `lines` is a whole line of stdout (with the
    /// missing line and the dump on failure).
    pub fn assert_lines(&self, lines: &[&str]) {
        for line in lines {
            assert!(
                self.stdout.lines().any(|l| l == *line),
                "no {line:?}:\n{}",
                self.dump()
            );
        }
    }
}

/// One command to run natively or supervised.
#[derive(Debug, Clone)]
pub struct Run {
    pub argv: Vec<OsString>,
    /// Working directory of the child (natively) and of the supervisor (so also
    /// the guest's starting directory unless `--workdir` says otherwise).
    pub cwd: PathBuf,
    /// The child's whole environment (the host environment is cleared first).
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Run as this (uid, gid) instead of the test's own (needs root).
    pub user: Option<(u32, u32)>,
    /// Options of `supervisor run` placed before `--`.
    pub sup: Vec<OsString>,
    /// Which supervisor binary (default [`bin`]).
    pub bin: PathBuf,
    /// A host fd to hand to the child as its fd 3 (inherited, not CLOEXEC).
    pub pass_fd: Option<i32>,
    /// Run the child in a private mount namespace whose /tmp and /dev/shm are
    /// bind mounts of DIR/tmp and DIR/shm (needs root): whatever the child
    /// leaves in them can be inspected afterwards, undisturbed by other
    /// programs using the host's /tmp.
    pub private_tmp: Option<PathBuf>,
    /// A command the supervisor is started through (`sh -c 'join a cgroup; exec "$@"'`).
    pub wrap: Vec<OsString>,
}

impl Run {
    pub fn new<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> Run {
        Run {
            argv: argv.iter().map(|s| s.as_ref().to_owned()).collect(),
            cwd: PathBuf::from("/"),
            env: vec![("PATH".into(), PATH.into()), ("LANG".into(), "C".into())],
            stdin: Vec::new(),
            timeout: TIMEOUT,
            user: None,
            sup: Vec::new(),
            bin: bin(),
            pass_fd: None,
            private_tmp: None,
            wrap: Vec::new(),
        }
    }
    /// `sh -c SCRIPT sh ARGS...`
    pub fn sh(script: &str, args: &[&str]) -> Run {
        let mut v = vec!["/bin/sh", "-c", script, "sh"];
        v.extend_from_slice(args);
        Run::new(&v)
    }
    pub fn cwd(mut self, p: impl AsRef<Path>) -> Run {
        self.cwd = p.as_ref().to_owned();
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Run {
        self.env.retain(|(kk, _)| kk != k);
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn stdin(mut self, data: &[u8]) -> Run {
        self.stdin = data.to_vec();
        self
    }
    pub fn user(mut self, uid: u32, gid: u32) -> Run {
        self.user = Some((uid, gid));
        self
    }
    pub fn bin(mut self, p: impl AsRef<Path>) -> Run {
        self.bin = p.as_ref().to_owned();
        self
    }
    /// Add supervisor options (before `--`).
    pub fn sup<S: AsRef<std::ffi::OsStr>>(mut self, opts: &[S]) -> Run {
        self.sup.extend(opts.iter().map(|s| s.as_ref().to_owned()));
        self
    }
    /// `--rw P:P` (same path inside).
    pub fn rw(self, p: impl AsRef<Path>) -> Run {
        let p = p.as_ref().display().to_string();
        self.sup(&["--rw".to_string(), format!("{p}:{p}")])
    }
    /// `--ro P:P` (same path inside).
    pub fn ro(self, p: impl AsRef<Path>) -> Run {
        let p = p.as_ref().display().to_string();
        self.sup(&["--ro".to_string(), format!("{p}:{p}")])
    }

    /// Run argv directly.
    pub fn native(&self) -> Out {
        let mut c = Command::new(&self.argv[0]);
        c.args(&self.argv[1..]);
        self.spawn(c)
    }
    /// Run `supervisor run SUP... -- argv`.
    pub fn supervised(&self) -> Out {
        let mut c = match self.wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        c.arg("run").args(&self.sup).arg("--").args(&self.argv);
        self.spawn(c)
    }
    /// [`Run::supervised`] with `--report` to a temporary file, which
    /// must succeed: its output and its report.
    pub fn supervised_reported(&self) -> (Out, serde_json::Value) {
        let rep = tempfile::NamedTempFile::new().expect("report file");
        let rep_s = rep.path().display().to_string();
        let out = self
            .clone()
            .sup(&["--report", rep_s.as_str()])
            .supervised()
            .ok("supervised");
        (out, read_report(rep.path()))
    }
    /// Run `supervisor ARGS...` exactly (for the CLI tests); argv is ignored.
    pub fn supervisor_raw<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Out {
        let mut c = Command::new(&self.bin);
        c.args(args);
        self.spawn(c)
    }

    fn spawn(&self, mut c: Command) -> Out {
        c.env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(&self.cwd);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Own process group, so a timeout kills grandchildren too.
        c.process_group(0);
        if let Some((uid, gid)) = self.user {
            // std drops supplementary groups when root changes uid.
            c.uid(uid).gid(gid);
        }
        if let Some(fd) = self.pass_fd {
            // SAFETY: dup2 is async-signal-safe; runs in the child before exec.
            unsafe {
                c.pre_exec(move || {
                    // dup2(3, 3) would keep FD_CLOEXEC: clear it explicitly.
                    if libc::dup2(fd, 3) < 0 || libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        if let Some(dir) = &self.private_tmp {
            private_tmp(&mut c, dir);
        }
        let desc = format!("{:?}", c);
        let mut child = c.spawn().unwrap_or_else(|e| panic!("spawn {desc}: {e}"));
        let pid = child.id() as i32;
        let mut sin = child.stdin.take().unwrap();
        let data = self.stdin.clone();
        std::thread::spawn(move || {
            let _ = sin.write_all(&data);
        });
        let rx_out = reader(child.stdout.take().unwrap());
        let rx_err = reader(child.stderr.take().unwrap());
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() > deadline {
                // SAFETY: signalling our own child's process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.kill();
                let _ = child.wait();
                panic!("timeout after {:?}: {desc}", self.timeout);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(5);
        let get = |rx: mpsc::Receiver<Vec<u8>>, name: &str| {
            rx.recv_timeout(left).unwrap_or_else(|_| {
                // SAFETY: as above; something still holds the pipe open.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                panic!("{name} still open after exit (a process outlived the command): {desc}")
            })
        };
        let stdout_bytes = get(rx_out, "stdout");
        let stderr = get(rx_err, "stderr");
        Out {
            code: status.code(),
            signal: status.signal(),
            stdout: String::from_utf8_lossy(&stdout_bytes).into_owned(),
            stdout_bytes,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

fn private_tmp(c: &mut Command, dir: &Path) {
    use std::ffi::CString;
    let cs = |p: &Path| CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    let (tmp, shm) = (cs(&dir.join("tmp")), cs(&dir.join("shm")));
    let (root, host_tmp, host_shm) = (
        cs(Path::new("/")),
        cs(Path::new("/tmp")),
        cs(Path::new("/dev/shm")),
    );
    // SAFETY: unshare and mount are plain syscalls, async-signal-safe; the
    // strings were allocated before fork.
    unsafe {
        c.pre_exec(move || {
            let null = std::ptr::null();
            let bind = libc::MS_BIND;
            if libc::unshare(libc::CLONE_NEWNS) < 0
                || libc::mount(
                    null,
                    root.as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) < 0
                // /dev/shm first: DIR may itself live under /tmp (a
                // checkout in /tmp), which the /tmp bind then hides.
                || libc::mount(
                    shm.as_ptr(),
                    host_shm.as_ptr(),
                    null,
                    bind,
                    std::ptr::null(),
                ) < 0
                || libc::mount(
                    tmp.as_ptr(),
                    host_tmp.as_ptr(),
                    null,
                    bind,
                    std::ptr::null(),
                ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn reader(mut r: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

// ---- safety guard --------------------------------------------------------

/// A host file no sandbox may show (host /tmp is never in the view).
pub const HOST_MARKER: &str = "/tmp/.sbx-tests-host-marker";

/// Shell prefix for every guest script that would harm the host if it ran
/// unsandboxed (a broken or fake supervisor, a native run): it exits 99 at
/// once when the host marker is visible. Creates the marker.
/// Runs a test driver (a native program that starts its own servers and
/// the supervisor, typically under `unshare -n`): its stdout, after
/// asserting it succeeded (stdout and stderr in the message if not).
pub fn driver_stdout(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().expect("spawn the driver");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "driver {what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub fn guard() -> String {
    if !Path::new(HOST_MARKER).exists() {
        std::fs::write(HOST_MARKER, "host\n").expect("create host marker");
    }
    format!(
        "if [ -e {HOST_MARKER} ]; then echo 'NOT SANDBOXED: refusing to run' >&2; exit 99; fi; "
    )
}

// ---- reports and host state ----------------------------------------------

/// Parse a JSON report file.
pub fn read_report(p: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("report {} not written: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("report is not JSON ({e}):\n{s}"))
}

/// How many `call`s a run's report says the supervisor serviced.
pub fn serviced(report: &serde_json::Value, call: &str) -> u64 {
    report["syscalls"]["serviced"][call].as_u64().unwrap_or(0)
}

/// The invoker's uid and gid.
pub fn ids() -> (u32, u32) {
    // SAFETY: getuid/getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

pub fn is_root() -> bool {
    ids().0 == 0
}

/// The kernel's Landlock ABI version (-1 without Landlock): 1 and up
/// fence the guest's reads of procfs, 6 and up add the abstract-socket
/// scope (`sandbox/src/sys/landlock.rs`).
pub fn landlock_abi() -> i64 {
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call
    // reads no memory and returns the ABI version (or -1).
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    }
}

/// Names in a directory (sorted; empty when unreadable).
pub fn listing(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
