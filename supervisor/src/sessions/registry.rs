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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::exec::{self, Outcome, Stream};
use super::files;
use super::host::{EXEC_SOCKET, READY_FILE};
use super::process::{self, Process};
use super::procs;
use super::record::{self, Ended, Record};
use super::spec::{self, ExecSpec, SessionSpec};
use super::templates::{Templates, Warm};
use super::volume;

/// Bytes of each stream an exec result keeps.
pub const OUTPUT_CAP: usize = 1 << 20;

/// What went wrong, by who is to blame (the API maps each to a status).
#[derive(Debug, PartialEq, Eq)]
pub enum SessionError {
    /// No session (or file) by that name: 404.
    NotFound(String),
    /// The request is wrong: 400.
    BadRequest(String),
    /// The session has ended: 409.
    Ended(String),
    /// The name is taken (a template): 409.
    Conflict(String),
    /// The request was right but the sandbox would not start with it: 422.
    StartFailed(String),
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
        | SessionError::Conflict(m)
        | SessionError::StartFailed(m)
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
    /// The templates and their warm sessions.
    pub templates: Arc<Templates>,
}

/// One session.
pub struct Session {
    pub id: String,
    record: Mutex<Record>,
    dir: PathBuf,
    workdir: String,
    idle_ttl: Duration,
    max_lifetime: Duration,
    born: Instant,
    /// Init's host pid (0 for sessions recovered as ended).
    init: i32,
    live: Mutex<Live>,
}

struct Live {
    process: Process,
    last_active: Instant,
    running: u32,
}

/// What `GET /v1/sessions/{id}` says.
#[derive(Debug, Serialize)]
pub struct SessionInfo {
    pub id: String,
    /// `running` or `ended`.
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
    /// The template it was made from.
    pub template: Option<String>,
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
        max_warm: usize,
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
                record: Mutex::new(r),
                dir,
                idle_ttl,
                max_lifetime,
                born: Instant::now(),
                init: 0,
                live: Mutex::new(Live {
                    process: Process::none(),
                    last_active: Instant::now(),
                    running: 0,
                }),
            };
            table.insert(session.id.clone(), Arc::new(session));
        }
        Ok(Sessions {
            data_dir: data_dir.to_path_buf(),
            exe: exe.to_path_buf(),
            max_running,
            table: Mutex::new(table),
            templates: Arc::new(Templates::open(data_dir, exe, max_warm)?),
        })
    }

    /// Starts a session's sandbox as `spec` asks (or takes one of its
    /// template's warm sessions); the session once it is ready.
    pub fn create(&self, spec: SessionSpec) -> Result<Arc<Session>> {
        if spec.template.is_some() {
            return self.create_from_template(spec);
        }
        let (idle_ttl, max_lifetime) = spec.lifetimes().map_err(SessionError::BadRequest)?;
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
        self.check_room()?;
        let id = new_id().map_err(SessionError::Internal)?;
        let dir = record::sessions_dir(&self.data_dir).join(&id);
        mkdir_private(&dir).map_err(SessionError::Internal)?;
        let record = Record {
            id: id.clone(),
            spec: spec.clone(),
            created_at: record::now(),
            ended: None,
        };
        record.save(&dir).map_err(SessionError::Internal)?;
        let process = match process::start(&self.exe, &dir, &flags) {
            Ok(p) => p,
            Err(e) => {
                self.record_failed_start(&dir, record, &e);
                return Err(e);
            }
        };
        Ok(self.adopt(record, dir, process, (idle_ttl, max_lifetime)))
    }

    /// A new session from a template: one of its warm sessions, or, when
    /// none is ready, one started and set up now.
    fn create_from_template(&self, asked: SessionSpec) -> Result<Arc<Session>> {
        let name = asked.template.clone().unwrap_or_default();
        asked
            .check_template_request()
            .map_err(SessionError::BadRequest)?;
        let template = self.templates.get(&name)?;
        let mut spec = template.spec.session_spec();
        spec.template = Some(name.clone());
        spec.idle_ttl_s = asked.idle_ttl_s.or(spec.idle_ttl_s);
        spec.max_lifetime_s = asked.max_lifetime_s.or(spec.max_lifetime_s);
        let lifetimes = spec.lifetimes().map_err(SessionError::BadRequest)?;
        self.check_room()?;
        let Warm { id, dir, process } = match self.templates.take(&template) {
            Some(warm) => warm,
            None => self.templates.make_warm(&template)?,
        };
        let record = Record {
            id,
            spec,
            created_at: record::now(),
            ended: None,
        };
        if let Err(e) = record.save(&dir) {
            let mut process = process;
            process.stop();
            let _ = std::fs::remove_dir_all(&dir);
            return Err(SessionError::Internal(e));
        }
        super::templates::unmark(&dir);
        Ok(self.adopt(record, dir, process, lifetimes))
    }

    /// 429 when as many sessions run as the daemon allows.
    fn check_room(&self) -> Result<()> {
        let running = self.list().iter().filter(|s| s.is_running()).count();
        if running >= self.max_running {
            return Err(SessionError::Full(format!(
                "{running} sessions are running, the most this daemon allows (--max-sessions)"
            )));
        }
        Ok(())
    }

    /// Makes a ready sandbox the session `record` describes.
    fn adopt(
        &self,
        record: Record,
        dir: PathBuf,
        process: Process,
        (idle_ttl, max_lifetime): (Duration, Duration),
    ) -> Arc<Session> {
        let id = record.id.clone();
        let session = Arc::new(Session {
            id: id.clone(),
            workdir: record.spec.workdir(),
            record: Mutex::new(record),
            dir,
            idle_ttl,
            max_lifetime,
            born: Instant::now(),
            init: process.init,
            live: Mutex::new(Live {
                process,
                last_active: Instant::now(),
                running: 0,
            }),
        });
        lock(&self.table).insert(id, session.clone());
        session
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

    /// Ends every running session and every warm one (the daemon is stopping).
    pub fn shutdown(&self) {
        self.templates.shutdown();
        for s in self.list() {
            s.end(record::DAEMON_STOPPED);
        }
    }
}

impl Session {
    /// Runs `spec` in the session; `sink` gets the output as it is written.
    pub fn exec(&self, spec: &ExecSpec, sink: &mut dyn FnMut(Stream, &[u8])) -> Result<Outcome> {
        let timeout = spec.check().map_err(SessionError::BadRequest)?;
        let env = self.env(&spec::env_strings(&spec.env));
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
            live.running += 1;
            live.last_active = Instant::now();
        }
        let result = exec::run(&self.dir.join(EXEC_SOCKET), self.init, cmd, sink);
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

    fn ended_error(&self) -> Option<SessionError> {
        lock(&self.record)
            .ended
            .as_ref()
            .map(|e| SessionError::Ended(format!("session {} has ended ({})", self.id, e.reason)))
    }

    /// The complete environment: the base, the session's, then `extra`;
    /// a later value of a name replaces an earlier one.
    fn env(&self, extra: &[String]) -> Vec<String> {
        spec::command_env(&lock(&self.record).spec.env, extra)
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
        if live.process.exited() {
            return Some("sandbox_exited");
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
        lock(&self.live).process.stop();
        for stale in [EXEC_SOCKET, READY_FILE] {
            let _ = std::fs::remove_file(self.dir.join(stale));
        }
    }

    /// The session's state now.
    pub fn info(&self) -> SessionInfo {
        let record = lock(&self.record).clone();
        let running = record.ended.is_none();
        let (idle, busy) = {
            let live = lock(&self.live);
            (live.last_active.elapsed(), live.running > 0)
        };
        let mut processes = match running {
            true => procs::processes(self.init),
            false => Vec::new(),
        };
        let memory_bytes = processes.iter().map(|p| p.rss).sum();
        let init_command = std::fs::read(format!("/proc/{}/cmdline", self.init))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let keeper = processes
            .iter()
            .find(|p| p.command == "sleep infinity")
            .map(|p| p.pid);
        processes.retain(|p| Some(p.pid) != keeper && p.command != init_command.trim_end());
        SessionInfo {
            id: self.id.clone(),
            state: if running { "running" } else { "ended" },
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
            template: record.spec.template.clone(),
        }
    }
}

/// `run`'s flags checked as the command line checks them.
pub(super) fn check_flags(flags: &[std::ffi::OsString]) -> std::result::Result<(), String> {
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
pub(super) fn one_line(text: &[u8], default: &str) -> String {
    String::from_utf8_lossy(text)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(default)
        .to_string()
}

/// 16 random hex digits.
pub(super) fn new_id() -> std::result::Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(super) fn mkdir_private(dir: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// A lock that a panicked holder did not poison for good.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
