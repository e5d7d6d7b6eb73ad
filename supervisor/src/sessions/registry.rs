//! The daemon's sessions: creating one (its sandbox a `session-sandbox`
//! child, `host.rs`), running commands and file requests in it, its
//! state, ending it (deleted, idle TTL, maximum lifetime, its sandbox
//! gone), and the reaper that ends them at their limits (and hibernates
//! those idle past `idle_hibernate_s`). A session's whole state is its
//! [`Session`]: the request, the child and its lifeline, the live
//! counters, and the record on disk (`record.rs`).
//!
//! Owns the table of sessions and their lifecycle; not HTTP (the API's
//! routes call these methods), not the protocol of one exec (`exec.rs`),
//! and not the steps of a hibernation or a wake (`hibernate/session.rs`).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::ending;
use super::exec::Outcome;
use super::hibernate;
use super::host::{EXEC_SOCKET, READY_FILE};
use super::metadata;
use super::process::{self, Process};
use super::record::{self, Ended, Record};
use super::spec::{self, SessionSpec};
use super::templates::{Templates, Warm};
use super::volume;

/// The reason of a session whose sandbox ended by itself (a limit killed it).
pub const SANDBOX_EXITED: &str = "sandbox_exited";

/// Bytes of each stream an exec result keeps.
pub const OUTPUT_CAP: usize = 1 << 20;

pub use super::error::SessionError;
pub use super::info::SessionInfo;

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
    pub(super) record: Mutex<Record>,
    pub(super) dir: PathBuf,
    pub(super) workdir: String,
    pub(super) idle_ttl: Duration,
    pub(super) max_lifetime: Duration,
    /// Idle time after which the session hibernates (`hibernate/`).
    pub(super) idle_hibernate: Option<Duration>,
    born: Instant,
    /// Init's host pid (0 while no sandbox runs: ended, hibernated).
    pub(super) init: AtomicI32,
    /// The `supervisor` binary and the data directory (a wake starts a sandbox).
    pub(super) exe: PathBuf,
    pub(super) data_dir: PathBuf,
    pub(super) live: Mutex<Live>,
}

pub(super) struct Live {
    pub(super) process: Process,
    pub(super) last_active: Instant,
    pub(super) running: u32,
    /// Why the last automatic hibernation failed (cleared by activity).
    pub(super) hibernate_error: Option<String>,
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
                idle_hibernate: r.spec.idle_hibernate().ok().flatten(),
                record: Mutex::new(r),
                dir,
                idle_ttl,
                max_lifetime,
                born: Instant::now(),
                init: AtomicI32::new(0),
                exe: exe.to_path_buf(),
                data_dir: data_dir.to_path_buf(),
                live: Mutex::new(Live::new(Process::none())),
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
        let lifetimes = spec.lifetimes().map_err(SessionError::BadRequest)?;
        spec.idle_hibernate().map_err(SessionError::BadRequest)?;
        metadata::check(&spec.metadata).map_err(SessionError::BadRequest)?;
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
            hibernated: None,
        };
        record.save(&dir).map_err(SessionError::Internal)?;
        let process = match process::start(&self.exe, &dir, &flags) {
            Ok(p) => p,
            Err(e) => {
                self.record_failed_start(&dir, record, &e);
                return Err(e);
            }
        };
        Ok(self.adopt(record, dir, process, lifetimes))
    }

    /// A new session from a template: one of its warm sessions, or, when
    /// none is ready, one started and set up now.
    fn create_from_template(&self, asked: SessionSpec) -> Result<Arc<Session>> {
        let name = asked.template.clone().unwrap_or_default();
        asked
            .check_template_request()
            .map_err(SessionError::BadRequest)?;
        metadata::check(&asked.metadata).map_err(SessionError::BadRequest)?;
        let template = self.templates.get(&name)?;
        let mut spec = template.spec.session_spec();
        spec.template = Some(name.clone());
        spec.idle_ttl_s = asked.idle_ttl_s.or(spec.idle_ttl_s);
        spec.max_lifetime_s = asked.max_lifetime_s.or(spec.max_lifetime_s);
        spec.idle_hibernate_s = asked.idle_hibernate_s.or(spec.idle_hibernate_s);
        spec.metadata = asked.metadata;
        let lifetimes = spec.lifetimes().map_err(SessionError::BadRequest)?;
        spec.idle_hibernate().map_err(SessionError::BadRequest)?;
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
            hibernated: None,
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

    /// 429 when as many sessions run as the daemon allows (hibernated
    /// ones hold no sandbox and do not count).
    fn check_room(&self) -> Result<()> {
        let running = self.all().iter().filter(|s| s.is_awake()).count();
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
            idle_hibernate: record.spec.idle_hibernate().ok().flatten(),
            record: Mutex::new(record),
            dir,
            idle_ttl,
            max_lifetime,
            born: Instant::now(),
            init: AtomicI32::new(process.init),
            exe: self.exe.clone(),
            data_dir: self.data_dir.clone(),
            live: Mutex::new(Live::new(process)),
        });
        lock(&self.table).insert(id, session.clone());
        session
    }

    fn record_failed_start(&self, dir: &Path, mut record: Record, e: &SessionError) {
        record.ended = Some(Ended {
            reason: format!("start_failed: {e}"),
            at: record::now(),
            message: None,
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
        let mut all = self.all();
        all.sort_by_cached_key(|s| (lock(&s.record).created_at, s.id.clone()));
        all
    }

    /// Every session, in no order.
    fn all(&self) -> Vec<Arc<Session>> {
        lock(&self.table).values().cloned().collect()
    }

    /// Ends the session `id` (reason `deleted`).
    pub fn delete(&self, id: &str) -> Result<()> {
        self.get(id)?.end("deleted");
        Ok(())
    }

    /// Ends every session past its idle TTL or maximum lifetime, or whose
    /// sandbox has gone; called by the reaper at its interval. In no
    /// order: it needs none, and sorting every session at each pass (a lock
    /// and an id's copy per comparison) is an idle daemon's CPU spent for
    /// nothing when thousands are hibernated.
    pub fn reap(&self) {
        for s in self.all() {
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

    /// Ends every running session and every warm one (the daemon is
    /// stopping); hibernated ones stay so, for the next daemon to wake.
    pub fn shutdown(&self) {
        self.templates.shutdown();
        for s in self.all().iter().filter(|s| !s.is_hibernated()) {
            s.end(record::DAEMON_STOPPED);
        }
    }
}

impl Session {
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

    pub(super) fn init(&self) -> i32 {
        self.init.load(Ordering::Relaxed)
    }

    pub(super) fn ended_error(&self) -> Option<SessionError> {
        lock(&self.record).ended.as_ref().map(|e| {
            let why = match &e.message {
                Some(m) => format!("{}: {m}", e.reason),
                None => e.reason.clone(),
            };
            SessionError::Ended(format!("session {} has ended ({why})", self.id))
        })
    }

    /// Whether the session's sandbox process exits (or the session
    /// ends otherwise: deleted) within `grace`.
    pub(super) fn sandbox_exits_within(&self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        loop {
            if lock(&self.record).ended.is_some() || lock(&self.live).process.exited() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The complete environment: the base, the session's, then `extra`;
    /// a later value of a name replaces an earlier one.
    pub(super) fn env(&self, extra: &[String]) -> Vec<String> {
        spec::command_env(&lock(&self.record).spec.env, extra)
    }

    /// Why the session should end now, if it should.
    pub(super) fn due(&self) -> Option<&'static str> {
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
        if live.process.exited() {
            return Some(SANDBOX_EXITED);
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
            // Its report says which limit, when the sandbox ended by itself.
            let message = (reason == SANDBOX_EXITED)
                .then(|| ending::read(&self.dir).and_then(|e| e.message))
                .flatten();
            record.ended = Some(Ended {
                reason: reason.into(),
                at: record::now(),
                message,
            });
            if let Err(e) = record.save(&self.dir) {
                eprintln!("supervisor: sessions: {e}");
            }
        }
        lock(&self.live).process.stop();
        self.init.store(0, Ordering::Relaxed);
        for stale in [EXEC_SOCKET, READY_FILE] {
            let _ = std::fs::remove_file(self.dir.join(stale));
        }
        hibernate::forget(&self.dir);
    }
}

impl Live {
    fn new(process: Process) -> Live {
        Live {
            process,
            last_active: Instant::now(),
            running: 0,
            hibernate_error: None,
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
