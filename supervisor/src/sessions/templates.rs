//! The daemon's templates and their warm sessions. A warm session is a
//! session sandbox started exactly as `POST /v1/sessions` starts one, in
//! its own session directory, with the template's setup already run in
//! it; `POST /v1/sessions {"template"}` is handed one ([`Templates::take`])
//! and a filler thread starts and sets up its replacement in the
//! background. Each template keeps up to its `warm` count ready, all
//! templates together at most `--max-warm`; the filler works on one at a
//! time (setups are CPU-bound imports; two at once would only share the
//! CPUs). A setup that fails while refilling is kept as the template's
//! `last_error` and retried after a back-off.
//!
//! A warm session's directory is `<data-dir>/sessions/<id>/` with a
//! `warm` file naming its template and no record: a daemon that starts
//! removes such directories (their sandboxes died with the last daemon),
//! and warms its templates up again.
//!
//! Owns the templates' table, the warm sessions and the filler; not a
//! session once it is handed out (`registry.rs`), nor the template's
//! type and setup (`template.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::process::{self, Process};
use super::record;
use super::registry::{lock, mkdir_private, new_id, SessionError};
use super::template::{self, TemplateSpec};

/// The file marking a session directory as a warm session's.
pub const WARM_FILE: &str = "warm";
/// The first back-off after a failed refill; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(2);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How often the filler looks for work when nothing wakes it.
const FILLER_TICK: Duration = Duration::from_millis(500);

type Result<T> = std::result::Result<T, SessionError>;

/// A session sandbox set up from a template, not yet handed out.
pub struct Warm {
    pub id: String,
    /// `<data-dir>/sessions/<id>/`.
    pub dir: PathBuf,
    pub process: Process,
}

impl Warm {
    /// Ends its sandbox and removes its directory.
    fn discard(mut self) {
        self.process.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One template and its warm sessions.
pub struct Template {
    pub spec: TemplateSpec,
    /// `run`'s flags of its sessions' sandboxes.
    flags: Vec<std::ffi::OsString>,
    pool: Mutex<Pool>,
}

#[derive(Default)]
struct Pool {
    ready: VecDeque<Warm>,
    /// The filler is setting one up.
    filling: bool,
    deleted: bool,
    last_error: Option<String>,
    /// No refill before this (after a failure).
    retry_at: Option<Instant>,
    backoff: Duration,
    /// Sessions handed out warm and cold, since the daemon started.
    taken_warm: u64,
    taken_cold: u64,
}

/// What `GET /v1/templates/{name}` says.
#[derive(Debug, Serialize)]
pub struct TemplateInfo {
    #[serde(flatten)]
    pub spec: TemplateSpec,
    /// Warm sessions ready now.
    pub ready: usize,
    /// The last refill's failure, if the last refill failed.
    pub last_error: Option<String>,
    /// Sessions handed out already set up, and set up on request (pool empty).
    pub taken_warm: u64,
    pub taken_cold: u64,
}

/// All templates of one daemon.
pub struct Templates {
    data_dir: PathBuf,
    exe: PathBuf,
    /// Warm sessions of all templates together, at most.
    max_warm: usize,
    table: Mutex<BTreeMap<String, Arc<Template>>>,
    /// Wakes the filler (a session taken, a template made or deleted).
    wake: Condvar,
    /// One template is created at a time (its name is free until saved).
    creating: Mutex<()>,
    stopping: Mutex<bool>,
}

impl Templates {
    /// The templates kept under `data_dir` (warm sessions of a previous
    /// daemon are removed by `record::Record::recover`).
    pub fn open(
        data_dir: &Path,
        exe: &Path,
        max_warm: usize,
    ) -> std::result::Result<Templates, String> {
        mkdir_private(&template::templates_dir(data_dir))?;
        let mut table = BTreeMap::new();
        for spec in TemplateSpec::load_all(data_dir) {
            if let Ok(flags) = spec.check() {
                let t = Template::new(spec, flags);
                table.insert(t.spec.name.clone(), Arc::new(t));
            }
        }
        Ok(Templates {
            data_dir: data_dir.to_path_buf(),
            exe: exe.to_path_buf(),
            max_warm,
            table: Mutex::new(table),
            wake: Condvar::new(),
            creating: Mutex::new(()),
            stopping: Mutex::new(false),
        })
    }

    /// Makes a template: checks it, runs its setup once in a fresh
    /// session sandbox (a setup that fails: 422, nothing kept), keeps it
    /// on disk, and keeps that sandbox as its first warm session.
    pub fn create(&self, spec: TemplateSpec) -> Result<TemplateInfo> {
        let flags = spec.check().map_err(SessionError::BadRequest)?;
        let _one = lock(&self.creating);
        if lock(&self.table).contains_key(&spec.name) {
            return Err(SessionError::Conflict(format!(
                "template {:?} exists (delete it first)",
                spec.name
            )));
        }
        let t = Arc::new(Template::new(spec, flags));
        let first = self.make_warm(&t)?;
        t.spec
            .save(&self.data_dir)
            .map_err(|e| SessionError::Internal(format!("keeping the template: {e}")))?;
        if t.spec.warm > 0 && self.warm_count() < self.max_warm {
            lock(&t.pool).ready.push_back(first);
        } else {
            first.discard();
        }
        lock(&self.table).insert(t.spec.name.clone(), t.clone());
        self.wake.notify_all();
        Ok(t.info())
    }

    /// The template `name`.
    pub fn get(&self, name: &str) -> Result<Arc<Template>> {
        lock(&self.table)
            .get(name)
            .cloned()
            .ok_or_else(|| SessionError::NotFound(format!("no template {name:?}")))
    }

    /// Every template, by name.
    pub fn list(&self) -> Vec<Arc<Template>> {
        lock(&self.table).values().cloned().collect()
    }

    /// Deletes the template `name`: its warm sessions end and its file
    /// goes; sessions already made from it stay.
    pub fn delete(&self, name: &str) -> Result<()> {
        let t = lock(&self.table)
            .remove(name)
            .ok_or_else(|| SessionError::NotFound(format!("no template {name:?}")))?;
        TemplateSpec::remove(&self.data_dir, name);
        let ready: Vec<Warm> = {
            let mut pool = lock(&t.pool);
            pool.deleted = true;
            pool.ready.drain(..).collect()
        };
        ready.into_iter().for_each(Warm::discard);
        Ok(())
    }

    /// A warm session of `t`, if one is ready (a dead one is discarded);
    /// the filler is woken to replace it.
    pub fn take(&self, t: &Template) -> Option<Warm> {
        let mut taken = None;
        let mut dead = Vec::new();
        {
            let mut pool = lock(&t.pool);
            while let Some(mut w) = pool.ready.pop_front() {
                if w.process.exited() {
                    dead.push(w);
                    continue;
                }
                taken = Some(w);
                break;
            }
            match taken {
                Some(_) => pool.taken_warm += 1,
                None => pool.taken_cold += 1,
            }
        }
        dead.into_iter().for_each(Warm::discard);
        self.wake.notify_all();
        taken
    }

    /// Starts a session sandbox for `t` and runs its setup in it.
    pub fn make_warm(&self, t: &Template) -> Result<Warm> {
        let id = new_id().map_err(SessionError::Internal)?;
        let dir = record::sessions_dir(&self.data_dir).join(&id);
        mkdir_private(&dir).map_err(SessionError::Internal)?;
        if let Err(e) = std::fs::write(dir.join(WARM_FILE), &t.spec.name) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(SessionError::Internal(format!("{}: {e}", dir.display())));
        }
        let process = match process::start(&self.exe, &dir, &t.flags) {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let warm = Warm { id, dir, process };
        match template::run_setup(&t.spec, &warm.dir, warm.process.init) {
            Ok(()) => Ok(warm),
            Err(e) => {
                warm.discard();
                Err(e)
            }
        }
    }

    /// Warm sessions of every template, ready or being set up.
    fn warm_count(&self) -> usize {
        self.list()
            .iter()
            .map(|t| {
                let pool = lock(&t.pool);
                pool.ready.len() + usize::from(pool.filling)
            })
            .sum()
    }

    /// The template the filler should set a session up for next (marked
    /// `filling`), if any: one below its `warm` count, not backing off,
    /// within `--max-warm`. Dead warm sessions are discarded on the way.
    fn next_job(&self) -> Option<Arc<Template>> {
        if *lock(&self.stopping) {
            return None;
        }
        let mut total = self.warm_count();
        let mut dead = Vec::new();
        let mut job = None;
        for t in self.list() {
            let mut pool = lock(&t.pool);
            let before = pool.ready.len();
            let mut alive = VecDeque::new();
            while let Some(mut w) = pool.ready.pop_front() {
                match w.process.exited() {
                    true => dead.push(w),
                    false => alive.push_back(w),
                }
            }
            pool.ready = alive;
            total -= before - pool.ready.len();
            let wanted = pool.ready.len() < t.spec.warm as usize;
            let waiting = pool.retry_at.is_some_and(|at| Instant::now() < at);
            if job.is_none() && wanted && !waiting && !pool.filling && total < self.max_warm {
                pool.filling = true;
                job = Some(t.clone());
            }
        }
        dead.into_iter().for_each(Warm::discard);
        job
    }

    /// Sets one session up for the template `next_job` chose, and keeps it.
    fn fill(&self, t: &Template) {
        let made = self.make_warm(t);
        let mut pool = lock(&t.pool);
        pool.filling = false;
        match made {
            Ok(w) if pool.deleted || *lock(&self.stopping) => {
                drop(pool);
                w.discard();
            }
            Ok(w) => {
                pool.ready.push_back(w);
                pool.last_error = None;
                pool.retry_at = None;
                pool.backoff = Duration::ZERO;
            }
            Err(e) => {
                eprintln!("supervisor: templates: {}: {e}", t.spec.name);
                pool.last_error = Some(e.to_string());
                pool.backoff = (pool.backoff * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
                pool.retry_at = Some(Instant::now() + pool.backoff);
            }
        }
    }

    /// Starts the filler thread.
    pub fn start_filler(self: &Arc<Self>) -> std::io::Result<()> {
        let me = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("template-filler".into())
            .spawn(move || {
                while let Some(templates) = me.upgrade() {
                    if *lock(&templates.stopping) {
                        return;
                    }
                    match templates.next_job() {
                        Some(t) => templates.fill(&t),
                        None => {
                            let table = lock(&templates.table);
                            let _ = templates.wake.wait_timeout(table, FILLER_TICK);
                        }
                    }
                }
            })
            .map(|_| ())
    }

    /// Ends every warm session (the daemon is stopping).
    pub fn shutdown(&self) {
        *lock(&self.stopping) = true;
        self.wake.notify_all();
        for t in self.list() {
            let ready: Vec<Warm> = lock(&t.pool).ready.drain(..).collect();
            ready.into_iter().for_each(Warm::discard);
        }
    }
}

impl Template {
    fn new(spec: TemplateSpec, flags: Vec<std::ffi::OsString>) -> Template {
        Template {
            spec,
            flags,
            pool: Mutex::new(Pool::default()),
        }
    }

    /// Its state now.
    pub fn info(&self) -> TemplateInfo {
        let pool = lock(&self.pool);
        TemplateInfo {
            spec: self.spec.clone(),
            ready: pool.ready.len(),
            last_error: pool.last_error.clone(),
            taken_warm: pool.taken_warm,
            taken_cold: pool.taken_cold,
        }
    }
}

/// A warm session handed out is a session: its marker goes.
pub fn unmark(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(WARM_FILE));
}
