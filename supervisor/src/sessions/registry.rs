//! The daemon's sessions: creating one (its sandbox a `session-sandbox`
//! child, `host.rs`), running commands and file requests in it, its
//! state, ending it (deleted, idle TTL, maximum lifetime, its sandbox
//! gone), and the reaper that ends them at their limits. A session's
//! whole state is its [`Session`]: the request, the child and its
//! lifeline, the live counters, and the record on disk (`record.rs`).
//!
//! Owns the table of sessions and their lifecycle; not HTTP (the API's
//! routes call these methods) and not the protocol of one exec (`exec.rs`).

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::exec::{self, Outcome, Stream};
use super::files;
use super::hibernate::{self, Saved};
use super::host::{EXEC_SOCKET, READY_FILE};
use super::procs;
use super::record::{self, Ended, Record};
use super::spec::{ExecSpec, SessionSpec};
use super::volume;

/// How long a new session's sandbox may take to be ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an ended session's sandbox may take to go before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of each stream an exec result keeps.
pub const OUTPUT_CAP: usize = 1 << 20;
/// The environment every command starts from (then the session's, then the exec's).
const BASE_ENV: [&str; 3] = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "HOME=/tmp",
];

/// What went wrong, by who is to blame (the API maps each to a status).
#[derive(Debug, PartialEq, Eq)]
pub enum SessionError {
    /// No session (or file) by that name: 404.
    NotFound(String),
    /// The request is wrong: 400.
    BadRequest(String),
    /// The session has ended: 409.
    Ended(String),
    /// The request was right but the sandbox would not start with it: 422.
    StartFailed(String),
    /// Not now: the session is busy (a command runs, a call is being served): 409.
    Busy(String),
    /// The session cannot do that (hibernate a socket, wake a damaged state): 422.
    Refused(String),
    /// The daemon's disk would not take it: 507.
    Storage(String),
    /// As many sessions run as the daemon allows: 429.
    Full(String),
    /// Ours: 500.
    Internal(String),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (SessionError::NotFound(m)
        | SessionError::BadRequest(m)
        | SessionError::Ended(m)
        | SessionError::StartFailed(m)
        | SessionError::Busy(m)
        | SessionError::Refused(m)
        | SessionError::Storage(m)
        | SessionError::Full(m)
        | SessionError::Internal(m)) = self;
        f.write_str(m)
    }
}

type Result<T> = std::result::Result<T, SessionError>;

/// All sessions of one daemon.
pub struct Sessions {
    data_dir: PathBuf,
    /// The `supervisor` binary (spawned as `session-sandbox`).
    exe: PathBuf,
    /// Sessions running at once, at most.
    max_running: usize,
    table: Mutex<HashMap<String, Arc<Session>>>,
}

/// One session.
pub struct Session {
    pub id: String,
    record: Mutex<Record>,
    dir: PathBuf,
    workdir: String,
    idle_ttl: Duration,
    max_lifetime: Duration,
    /// Idle time after which the session hibernates (`hibernate/`).
    idle_hibernate: Option<Duration>,
    born: Instant,
    /// Init's host pid (0 while no sandbox runs: ended, hibernated).
    init: AtomicI32,
    /// The `supervisor` binary and the data directory (a wake starts a sandbox).
    exe: PathBuf,
    data_dir: PathBuf,
    live: Mutex<Live>,
}

struct Live {
    child: Option<Child>,
    /// Closing it ends the sandbox (`host.rs`).
    lifeline: Option<OwnedFd>,
    last_active: Instant,
    running: u32,
    /// Why the last automatic hibernation failed (cleared by activity).
    hibernate_error: Option<String>,
}

/// What `GET /v1/sessions/{id}` says.
#[derive(Debug, Serialize)]
pub struct SessionInfo {
    pub id: String,
    /// `running`, `hibernated` or `ended`.
    pub state: &'static str,
    /// Why it ended: `deleted`, `idle_ttl`, `max_lifetime`, `sandbox_exited`, `daemon_stopped`, `daemon_restarted`.
    pub reason: Option<String>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
    /// Seconds since the last exec or file request ended (0 while one runs).
    pub idle_s: f64,
    pub idle_ttl_s: u64,
    pub max_lifetime_s: u64,
    /// Resident memory of the session's processes, bytes.
    pub memory_bytes: u64,
    /// The session's processes (besides its init and the process keeping it alive).
    pub processes: Vec<procs::Process>,
    pub workdir: String,
    pub volume: Option<super::spec::VolumeSpec>,
    pub publish: Vec<String>,
    pub idle_hibernate_s: Option<u64>,
    /// What the last hibernation saved, while the session sleeps.
    pub hibernated: Option<Saved>,
    /// Why the last automatic hibernation failed, if it did.
    pub hibernate_error: Option<String>,
}

/// An exec's end, or a file request's.
pub type ExecOutcome = Outcome;

impl Sessions {
    /// The sessions kept under `data_dir`: those running when a daemon
    /// last stopped are reported ended (`record.rs`).
    pub fn open(
        data_dir: &Path,
        exe: &Path,
        max_running: usize,
    ) -> std::result::Result<Sessions, String> {
        for dir in [
            record::sessions_dir(data_dir),
            volume::volumes_dir(data_dir),
        ] {
            mkdir_private(&dir)?;
        }
        let mut table = HashMap::new();
        for r in Record::recover(data_dir) {
            let dir = record::sessions_dir(data_dir).join(&r.id);
            let (idle_ttl, max_lifetime) = r.spec.lifetimes().unwrap_or_default();
            let session = Session {
                id: r.id.clone(),
                workdir: r.spec.workdir(),
                idle_hibernate: r.spec.idle_hibernate().ok().flatten(),
                record: Mutex::new(r),
                dir,
                idle_ttl,
                max_lifetime,
                born: Instant::now(),
                init: AtomicI32::new(0),
                exe: exe.to_path_buf(),
                data_dir: data_dir.to_path_buf(),
                live: Mutex::new(Live {
                    child: None,
                    lifeline: None,
                    last_active: Instant::now(),
                    running: 0,
                    hibernate_error: None,
                }),
            };
            table.insert(session.id.clone(), Arc::new(session));
        }
        Ok(Sessions {
            data_dir: data_dir.to_path_buf(),
            exe: exe.to_path_buf(),
            max_running,
            table: Mutex::new(table),
        })
    }

    /// Starts a session's sandbox as `spec` asks; its id once it is ready.
    pub fn create(&self, spec: SessionSpec) -> Result<Arc<Session>> {
        let (idle_ttl, max_lifetime) = spec.lifetimes().map_err(SessionError::BadRequest)?;
        let idle_hibernate = spec.idle_hibernate().map_err(SessionError::BadRequest)?;
        let volume = spec.volume_name().map_err(SessionError::BadRequest)?;
        let volume_dir = volume
            .as_ref()
            .map(|name| volume::dir(&self.data_dir, name));
        let flags = spec
            .run_flags(volume_dir.as_deref())
            .map_err(SessionError::BadRequest)?;
        // Checked before anything is made: a refused request leaves nothing.
        check_flags(&flags).map_err(SessionError::BadRequest)?;
        if let Some(dir) = &volume_dir {
            volume::ensure(dir).map_err(SessionError::Internal)?;
        }
        let running = self.list().iter().filter(|s| s.is_awake()).count();
        if running >= self.max_running {
            return Err(SessionError::Full(format!(
                "{running} sessions are running, the most this daemon allows (--max-sessions)"
            )));
        }
        let id = new_id().map_err(SessionError::Internal)?;
        let dir = record::sessions_dir(&self.data_dir).join(&id);
        mkdir_private(&dir).map_err(SessionError::Internal)?;
        let record = Record {
            id: id.clone(),
            spec: spec.clone(),
            created_at: record::now(),
            ended: None,
            hibernated: None,
        };
        record.save(&dir).map_err(SessionError::Internal)?;
        let (child, lifeline) = match spawn(&self.exe, &dir, &flags) {
            Ok(c) => c,
            Err(e) => {
                self.record_failed_start(&dir, record, &e);
                return Err(e);
            }
        };
        let mut live = Live {
            child: Some(child),
            lifeline: Some(lifeline),
            last_active: Instant::now(),
            running: 0,
            hibernate_error: None,
        };
        let init = match wait_ready(&dir, &mut live) {
            Ok(pid) => pid,
            Err(e) => {
                stop(&mut live);
                self.record_failed_start(&dir, record, &e);
                return Err(e);
            }
        };
        let session = Arc::new(Session {
            id: id.clone(),
            record: Mutex::new(record),
            dir,
            workdir: spec.workdir(),
            idle_ttl,
            max_lifetime,
            idle_hibernate,
            born: Instant::now(),
            init: AtomicI32::new(init),
            exe: self.exe.clone(),
            data_dir: self.data_dir.clone(),
            live: Mutex::new(live),
        });
        lock(&self.table).insert(id, session.clone());
        Ok(session)
    }

    fn record_failed_start(&self, dir: &Path, mut record: Record, e: &SessionError) {
        record.ended = Some(Ended {
            reason: format!("start_failed: {e}"),
            at: record::now(),
        });
        let _ = record.save(dir);
    }

    /// The session `id`.
    pub fn get(&self, id: &str) -> Result<Arc<Session>> {
        lock(&self.table)
            .get(id)
            .cloned()
            .ok_or_else(|| SessionError::NotFound(format!("no session {id:?}")))
    }

    /// Every session, oldest first.
    pub fn list(&self) -> Vec<Arc<Session>> {
        let mut all: Vec<_> = lock(&self.table).values().cloned().collect();
        all.sort_by_key(|s| (lock(&s.record).created_at, s.id.clone()));
        all
    }

    /// Ends the session `id` (reason `deleted`).
    pub fn delete(&self, id: &str) -> Result<()> {
        self.get(id)?.end("deleted");
        Ok(())
    }

    /// Ends every session past its idle TTL or maximum lifetime, or whose
    /// sandbox has gone; called about every second by the reaper.
    pub fn reap(&self) {
        for s in self.list() {
            if let Some(reason) = s.due() {
                s.end(reason);
            } else if s.hibernate_due() {
                if let Err(e) = s.hibernate() {
                    lock(&s.live).hibernate_error = Some(e.to_string());
                }
            }
        }
    }

    /// Starts the reaper thread.
    pub fn start_reaper(self: &Arc<Self>, every: Duration) -> std::io::Result<()> {
        let me = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("session-reaper".into())
            .spawn(move || {
                while let Some(sessions) = me.upgrade() {
                    sessions.reap();
                    drop(sessions);
                    std::thread::sleep(every);
                }
            })
            .map(|_| ())
    }

    /// Ends every running session (the daemon is stopping); hibernated
    /// ones stay so, for the next daemon to wake.
    pub fn shutdown(&self) {
        for s in self.list().iter().filter(|s| !s.is_hibernated()) {
            s.end(record::DAEMON_STOPPED);
        }
    }
}

impl Session {
    /// Runs `spec` in the session; `sink` gets the output as it is written.
    pub fn exec(&self, spec: &ExecSpec, sink: &mut dyn FnMut(Stream, &[u8])) -> Result<Outcome> {
        let timeout = spec.check().map_err(SessionError::BadRequest)?;
        let env = self.env(&super::spec::env_strings(&spec.env));
        let cmd = exec::Command {
            args: spec.command.clone(),
            env,
            cwd: spec.cwd.clone().unwrap_or_else(|| self.workdir.clone()),
            stdin: spec.stdin.clone().unwrap_or_default().into_bytes(),
            timeout,
            cap: OUTPUT_CAP,
        };
        self.run(&cmd, sink)
    }

    /// Writes `data` to `path` (relative to the working directory).
    pub fn put_file(&self, path: &str, data: Vec<u8>) -> Result<()> {
        files::check_path(path).map_err(SessionError::BadRequest)?;
        if data.len() > files::MAX_FILE {
            return Err(SessionError::BadRequest(format!(
                "file larger than {} bytes",
                files::MAX_FILE
            )));
        }
        let cmd = files::put(&self.workdir, path, data, self.env(&[]));
        let out = self.run(&cmd, &mut |_, _| {})?;
        match out.exit_code {
            Some(0) => Ok(()),
            _ => Err(SessionError::BadRequest(format!(
                "{path}: {}",
                one_line(&out.stderr.bytes, "cannot be written")
            ))),
        }
    }

    /// The contents of `path` (relative to the working directory).
    pub fn get_file(&self, path: &str) -> Result<Vec<u8>> {
        files::check_path(path).map_err(SessionError::BadRequest)?;
        let cmd = files::get(&self.workdir, path, self.env(&[]));
        let out = self.run(&cmd, &mut |_, _| {})?;
        match out.exit_code {
            Some(0) if !out.stdout.truncated => Ok(out.stdout.bytes),
            Some(0) => Err(SessionError::BadRequest(format!(
                "{path}: larger than {} bytes",
                files::MAX_FILE
            ))),
            Some(files::NOT_A_FILE) => Err(SessionError::NotFound(format!(
                "{path}: no such file in the session"
            ))),
            _ => Err(SessionError::BadRequest(format!(
                "{path}: {}",
                one_line(&out.stderr.bytes, "cannot be read")
            ))),
        }
    }

    /// Runs one command, keeping the session busy (not idle) meanwhile.
    fn run(&self, cmd: &exec::Command, sink: &mut dyn FnMut(Stream, &[u8])) -> Result<Outcome> {
        {
            let mut live = lock(&self.live);
            if let Some(e) = self.ended_error() {
                return Err(e);
            }
            if self.is_hibernated() {
                self.wake_locked(&mut live)?;
            }
            live.hibernate_error = None;
            live.running += 1;
            live.last_active = Instant::now();
        }
        let result = exec::run(&self.dir.join(EXEC_SOCKET), self.init(), cmd, sink);
        {
            let mut live = lock(&self.live);
            live.running -= 1;
            live.last_active = Instant::now();
        }
        result.map_err(|e| {
            // A sandbox that went away mid-request ends the session.
            if let Some(reason) = self.due() {
                self.end(reason);
            }
            self.ended_error().unwrap_or(SessionError::Internal(e))
        })
    }

    /// Not ended yet.
    pub fn is_running(&self) -> bool {
        lock(&self.record).ended.is_none()
    }

    /// Hibernated (and not ended).
    pub fn is_hibernated(&self) -> bool {
        let r = lock(&self.record);
        r.ended.is_none() && r.hibernated.is_some()
    }

    /// Running with a sandbox: neither ended nor hibernated.
    pub fn is_awake(&self) -> bool {
        self.is_running() && !self.is_hibernated()
    }

    fn init(&self) -> i32 {
        self.init.load(Ordering::Relaxed)
    }

    fn ended_error(&self) -> Option<SessionError> {
        lock(&self.record)
            .ended
            .as_ref()
            .map(|e| SessionError::Ended(format!("session {} has ended ({})", self.id, e.reason)))
    }

    /// The complete environment: the base, the session's, then `extra`;
    /// a later value of a name replaces an earlier one.
    fn env(&self, extra: &[String]) -> Vec<String> {
        let session_env = super::spec::env_strings(&lock(&self.record).spec.env);
        let mut env: Vec<String> = Vec::new();
        for e in BASE_ENV
            .iter()
            .map(|s| s.to_string())
            .chain(session_env)
            .chain(extra.iter().cloned())
        {
            let name = e.split_once('=').map_or(e.as_str(), |(k, _)| k).to_string();
            env.retain(|old| old.split_once('=').map_or(old.as_str(), |(k, _)| k) != name);
            env.push(e);
        }
        env
    }

    /// Why the session should end now, if it should.
    fn due(&self) -> Option<&'static str> {
        if lock(&self.record).ended.is_some() {
            return None;
        }
        if self.born.elapsed() >= self.max_lifetime {
            return Some("max_lifetime");
        }
        let mut live = lock(&self.live);
        if lock(&self.record).hibernated.is_some() {
            return (live.running == 0 && live.last_active.elapsed() >= self.idle_ttl)
                .then_some("idle_ttl");
        }
        if let Some(child) = live.child.as_mut() {
            if !matches!(child.try_wait(), Ok(None)) {
                return Some("sandbox_exited");
            }
        }
        if live.running == 0 && live.last_active.elapsed() >= self.idle_ttl {
            return Some("idle_ttl");
        }
        None
    }

    /// Ends the session (once): its sandbox stops, its record says why.
    pub fn end(&self, reason: &str) {
        {
            let mut record = lock(&self.record);
            if record.ended.is_some() {
                return;
            }
            record.ended = Some(Ended {
                reason: reason.into(),
                at: record::now(),
            });
            if let Err(e) = record.save(&self.dir) {
                eprintln!("supervisor: sessions: {e}");
            }
        }
        let mut live = lock(&self.live);
        stop(&mut live);
        for stale in [EXEC_SOCKET, READY_FILE] {
            let _ = std::fs::remove_file(self.dir.join(stale));
        }
        hibernate::forget(&self.dir);
    }

    /// The session's state now.
    pub fn info(&self) -> SessionInfo {
        let record = lock(&self.record).clone();
        let running = record.ended.is_none();
        let (idle, busy, hibernate_error) = {
            let live = lock(&self.live);
            (
                live.last_active.elapsed(),
                live.running > 0,
                live.hibernate_error.clone(),
            )
        };
        let init = self.init();
        let mut processes = match running && init != 0 {
            true => procs::processes(init),
            false => Vec::new(),
        };
        let memory_bytes = processes.iter().map(|p| p.rss).sum();
        let init_command = std::fs::read(format!("/proc/{init}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let keeper = processes
            .iter()
            .find(|p| p.command == "sleep infinity")
            .map(|p| p.pid);
        processes.retain(|p| Some(p.pid) != keeper && p.command != init_command.trim_end());
        SessionInfo {
            id: self.id.clone(),
            state: match (running, record.hibernated.is_some()) {
                (false, _) => "ended",
                (true, true) => "hibernated",
                (true, false) => "running",
            },
            reason: record.ended.as_ref().map(|e| e.reason.clone()),
            created_at: record.created_at,
            ended_at: record.ended.as_ref().map(|e| e.at),
            idle_s: if busy || !running {
                0.0
            } else {
                idle.as_secs_f64()
            },
            idle_ttl_s: self.idle_ttl.as_secs(),
            max_lifetime_s: self.max_lifetime.as_secs(),
            memory_bytes,
            processes,
            workdir: self.workdir.clone(),
            volume: record.spec.volume.clone(),
            publish: record.spec.publish.clone(),
            idle_hibernate_s: self.idle_hibernate.map(|d| d.as_secs()),
            hibernated: record.hibernated.clone().filter(|_| running),
            hibernate_error,
        }
    }
}

/// Hibernation and wake (`hibernate/` saves and restores the processes).
impl Session {
    /// Saves the session's processes and ends its sandbox; the session
    /// stays, `hibernated`, until its next request or [`wake`](Self::wake).
    pub fn hibernate(&self) -> Result<Saved> {
        let mut live = lock(&self.live);
        if let Some(e) = self.ended_error() {
            return Err(e);
        }
        if let Some(saved) = lock(&self.record).hibernated.clone() {
            return Ok(saved);
        }
        if live.running > 0 {
            return Err(SessionError::Busy(
                "a command or file request is running in the session: hibernate after it ends"
                    .into(),
            ));
        }
        let pids = self.guest_pids();
        let saved = hibernate::save(&self.exe, &self.dir, &pids)?;
        {
            let mut record = lock(&self.record);
            record.hibernated = Some(saved.clone());
            record.save(&self.dir).map_err(SessionError::Internal)?;
        }
        stop(&mut live);
        self.init.store(0, Ordering::Relaxed);
        for stale in [EXEC_SOCKET, READY_FILE] {
            let _ = std::fs::remove_file(self.dir.join(stale));
        }
        live.hibernate_error = None;
        Ok(saved)
    }

    /// Wakes the hibernated session (nothing to do for an awake one).
    pub fn wake(&self) -> Result<()> {
        let mut live = lock(&self.live);
        if let Some(e) = self.ended_error() {
            return Err(e);
        }
        if self.is_hibernated() {
            self.wake_locked(&mut live)?;
        }
        Ok(())
    }

    /// A new sandbox of the session's request, its processes restored in
    /// it. On an error the new sandbox goes and the session stays
    /// hibernated, its state as it was.
    fn wake_locked(&self, live: &mut Live) -> Result<()> {
        let spec = lock(&self.record).spec.clone();
        let volume_dir = spec
            .volume_name()
            .map_err(SessionError::Internal)?
            .map(|name| volume::dir(&self.data_dir, &name));
        if let Some(dir) = &volume_dir {
            volume::ensure(dir).map_err(SessionError::Internal)?;
        }
        let flags = spec
            .run_flags(volume_dir.as_deref())
            .map_err(SessionError::Internal)?;
        let (child, lifeline) = spawn(&self.exe, &self.dir, &flags)?;
        live.child = Some(child);
        live.lifeline = Some(lifeline);
        // The images are checked while the sandbox starts.
        let result = hibernate::check(&self.dir).and_then(|count| {
            let init = wait_ready(&self.dir, live)?;
            let socket = self.dir.join(EXEC_SOCKET);
            hibernate::restore(&self.exe, &self.dir, &socket, init, self.env(&[]), count)?;
            Ok(init)
        });
        let init = match result {
            Ok(init) => init,
            Err(e) => {
                stop(live);
                for stale in [EXEC_SOCKET, READY_FILE] {
                    let _ = std::fs::remove_file(self.dir.join(stale));
                }
                return Err(e);
            }
        };
        self.init.store(init, Ordering::Relaxed);
        {
            let mut record = lock(&self.record);
            record.hibernated = None;
            if let Err(e) = record.save(&self.dir) {
                eprintln!("supervisor: sessions: {e}");
            }
        }
        hibernate::forget(&self.dir);
        live.last_active = Instant::now();
        Ok(())
    }

    /// Whether the session has been idle past its `idle_hibernate_s`
    /// (and the last attempt did not fail).
    fn hibernate_due(&self) -> bool {
        let Some(after) = self.idle_hibernate else {
            return false;
        };
        if !self.is_awake() {
            return false;
        }
        let live = lock(&self.live);
        live.running == 0 && live.hibernate_error.is_none() && live.last_active.elapsed() >= after
    }

    /// The host pids of the session's processes but its init and the
    /// process keeping the sandbox alive (the first `sleep infinity`).
    fn guest_pids(&self) -> Vec<i32> {
        let all = procs::processes(self.init());
        let keeper = all
            .iter()
            .find(|p| p.command == "sleep infinity")
            .map(|p| p.pid);
        let init_command = std::fs::read(format!("/proc/{}/cmdline", self.init()))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        all.into_iter()
            .filter(|p| Some(p.pid) != keeper && p.command != init_command.trim_end())
            .map(|p| p.host_pid)
            .collect()
    }
}

/// Closes the lifeline (the sandbox kills itself) and reaps the child,
/// SIGKILLing it if it lingers.
fn stop(live: &mut Live) {
    live.lifeline = None;
    let Some(mut child) = live.child.take() else {
        return;
    };
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Spawns a session's sandbox; the child and the lifeline's write end.
fn spawn(exe: &Path, dir: &Path, flags: &[std::ffi::OsString]) -> Result<(Child, OwnedFd)> {
    let internal = |e: String| SessionError::Internal(e);
    let (life_r, life_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| internal(format!("pipe: {}", e.desc())))?;
    let log = File::create(dir.join("sandbox.log"))
        .map_err(|e| internal(format!("{}: {e}", dir.display())))?;
    // `run` binds its current directory into the view: the session
    // sandbox starts in an empty one, so the daemon's never shows.
    let empty = dir.join("empty");
    mkdir_private(&empty).map_err(internal)?;
    let child = std::process::Command::new(exe)
        .current_dir(&empty)
        .arg("session-sandbox")
        .arg("--session-dir")
        .arg(dir)
        .args(flags)
        .args(["--", "sleep", "infinity"])
        .stdin(Stdio::from(life_r))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .map_err(|e| internal(format!("starting {}: {e}", exe.display())))?;
    Ok((child, life_w))
}

/// Waits for the sandbox's `ready` file: init's host pid.
fn wait_ready(dir: &Path, live: &mut Live) -> Result<i32> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join(READY_FILE)) {
            if let Ok(pid) = text.trim().parse() {
                return Ok(pid);
            }
        }
        let exited = !matches!(live.child.as_mut().map(Child::try_wait), Some(Ok(None)));
        if exited {
            let log = std::fs::read(dir.join("sandbox.log")).unwrap_or_default();
            return Err(SessionError::StartFailed(format!(
                "the session's sandbox did not start: {}",
                one_line(&log, "no message")
            )));
        }
        if Instant::now() >= deadline {
            return Err(SessionError::Internal(
                "the session's sandbox was not ready in time".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `run`'s flags checked as the command line checks them.
fn check_flags(flags: &[std::ffi::OsString]) -> std::result::Result<(), String> {
    use clap::Parser;
    let argv = ["supervisor", "run"]
        .into_iter()
        .map(Into::into)
        .chain(flags.iter().cloned())
        .chain(["--", "sleep", "infinity"].into_iter().map(Into::into));
    let cli =
        crate::cli::Cli::try_parse_from(argv).map_err(|e| crate::cli::one_line(&e.to_string()))?;
    match cli.command {
        crate::cli::Command::Run(args) => {
            sandbox::config::SandboxConfig::try_from(*args).map(|_| ())
        }
        _ => Err("not a run".into()),
    }
}

/// The last non-empty line of `text`, or `default`.
fn one_line(text: &[u8], default: &str) -> String {
    String::from_utf8_lossy(text)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(default)
        .to_string()
}

/// 16 random hex digits.
fn new_id() -> std::result::Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn mkdir_private(dir: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// A lock that a panicked holder did not poison for good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
