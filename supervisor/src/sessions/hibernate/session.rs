//! A session's hibernation and wake as steps of its lifecycle: when it
//! may hibernate (idle, not busy), what its record says meanwhile, and
//! the new sandbox a wake starts from the session's request before its
//! processes are restored in it. A template's warm session not yet
//! handed out is no [`Session`] and never hibernates; a session made
//! from a template is one like any other.
//!
//! Owns these transitions; not the saved files (`mod.rs`), nor the
//! session's table, its requests or its end (`registry.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::super::host::{EXEC_SOCKET, READY_FILE};
use super::super::process;
use super::super::registry::{lock, Live, Session, SessionError};
use super::super::volume;
use super::Saved;
use sandbox::checkpoint;

type Result<T> = std::result::Result<T, SessionError>;

/// How many times a hibernation lists and saves the processes when a
/// listed process ended meanwhile.
const SAVE_TRIES: u32 = 3;

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
        let saved = self.save_processes()?;
        {
            let mut record = lock(&self.record);
            record.hibernated = Some(saved.clone());
            record.save(&self.dir).map_err(SessionError::Internal)?;
        }
        live.process.stop();
        self.init.store(0, Ordering::Relaxed);
        remove_stale(&self.dir);
        live.hibernate_error = None;
        Ok(saved)
    }

    /// Saves the session's processes as [`super::save`] does. A process
    /// that was exiting when they were listed (an exec's shell on its way
    /// out, just after the exec's answer) can fail the save while it
    /// ends: when a failed save's listing held a process that has ended
    /// since, the save is tried again with a fresh listing (at most
    /// [`SAVE_TRIES`] times); a failure of processes that all still run is
    /// the answer.
    fn save_processes(&self) -> Result<Saved> {
        let mut tries = 1;
        loop {
            let pids: Vec<i32> = self
                .guest_processes()
                .into_iter()
                .map(|p| p.host_pid)
                .collect();
            match super::save(&self.exe, &self.dir, &pids) {
                Err(_) if tries < SAVE_TRIES && !pids.iter().all(|&p| checkpoint::alive(p)) => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                result => return result,
            }
        }
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
    pub(in super::super) fn wake_locked(&self, live: &mut Live) -> Result<()> {
        let spec = lock(&self.record).spec.clone();
        let volume_dir = spec
            .volume_name()
            .map_err(SessionError::Internal)?
            .map(|name| volume::dir(&self.data_dir, &name));
        if let Some(dir) = &volume_dir {
            volume::ensure(dir).map_err(SessionError::Internal)?;
        }
        let mut flags = spec
            .run_flags(volume_dir.as_deref())
            .map_err(SessionError::Internal)?;
        flags.extend(super::clocks::flag(&super::state_dir(&self.dir)));
        // The checkpoint helper starts first: it maps the images and
        // checks them (BLAKE3) while the sandbox and the stubs start and
        // beside the restore, and holds the restored processes stopped:
        // they go on only once the check has passed.
        let begun = Instant::now();
        let socket = self.dir.join(EXEC_SOCKET);
        let count = super::image_count(&self.dir)?;
        let restore = super::Restore::begin(&self.exe, &self.dir, count)?;
        let mut new = process::start(&self.exe, &self.dir, &flags)?;
        let sandbox_time = begun.elapsed();
        let env = self.env(&[]);
        let held = match restore.into_held(&socket, new.init, env, count) {
            Ok(held) => held,
            Err(e) => {
                new.stop();
                remove_stale(&self.dir);
                return Err(e);
            }
        };
        let times = held.times;
        if let Err(e) = held.release() {
            new.stop();
            remove_stale(&self.dir);
            return Err(e);
        }
        // One line per wake: where its time went (docs/sessions.md, Speed).
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "supervisor: sessions: {} woke in {:.1} ms: sandbox {:.1} ms, stubs {:.1} ms, helper {:.1} ms (restore {:.1} ms, of which pages {:.1} ms; check {:.1} ms, begun with the sandbox)",
            self.id,
            ms(begun.elapsed()),
            ms(sandbox_time),
            ms(times.stubs),
            ms(times.helper),
            ms(times.restore),
            ms(times.copy),
            ms(times.check)
        );
        self.init.store(new.init, Ordering::Relaxed);
        live.process = new;
        {
            let mut record = lock(&self.record);
            record.hibernated = None;
            if let Err(e) = record.save(&self.dir) {
                eprintln!("supervisor: sessions: {e}");
            }
        }
        super::forget_after_wake(&self.dir);
        live.last_active = Instant::now();
        Ok(())
    }

    /// Whether the session has been idle past its `idle_hibernate_s`
    /// (and the last attempt did not fail).
    pub(in super::super) fn hibernate_due(&self) -> bool {
        let Some(after) = self.idle_hibernate else {
            return false;
        };
        if !self.is_awake() {
            return false;
        }
        let live = lock(&self.live);
        live.running == 0 && live.hibernate_error.is_none() && live.last_active.elapsed() >= after
    }
}

/// The files of a sandbox that no longer runs.
fn remove_stale(dir: &std::path::Path) {
    for stale in [EXEC_SOCKET, READY_FILE] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
}
