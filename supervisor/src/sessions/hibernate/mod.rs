//! Hibernating a session and waking it: its processes saved to
//! `<session dir>/hibernate/` (one image each and a manifest of their
//! SHA-256, `sandbox::checkpoint`) by the `checkpoint` helper
//! (`helper.rs`), then its sandbox ended, so its memory goes back to the
//! host; at wake a new sandbox of the same request, one stub process per
//! image started in it over the exec socket, and the helper turns each
//! stub into its saved process. The saved state survives the daemon: a
//! restarted daemon wakes the session on its next request.
//!
//! Owns the files of a hibernated session and the helper's invocation;
//! not the session's transitions (`session.rs`) nor its table and record
//! (`registry.rs`).

pub mod clocks;
pub mod helper;
mod session;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::exec;
use super::procs;
use super::registry::SessionError;
use sandbox::checkpoint::manifest::Manifest;

/// The saved state's directory in the session's.
pub const STATE_DIR: &str = "hibernate";
/// Where a dump is written before it is complete.
const PARTIAL_DIR: &str = "hibernate.partial";
/// Where the state of a woken session waits to be removed.
const GONE_DIR: &str = "hibernate.gone";
/// The stubs' program: any single-threaded program that waits in a call.
const STUB: &str = "sleep";

/// What a hibernation saved.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Saved {
    pub processes: usize,
    /// Bytes of memory written to the images.
    pub memory_bytes: u64,
}

pub fn state_dir(session_dir: &Path) -> PathBuf {
    session_dir.join(STATE_DIR)
}

/// Saves the processes `pids` (host pids) of the session in
/// `session_dir` and kills them; on an error they run on and nothing of
/// the attempt is left on disk.
pub fn save(exe: &Path, session_dir: &Path, pids: &[i32]) -> Result<Saved, SessionError> {
    let partial = session_dir.join(PARTIAL_DIR);
    let internal = |e: String| SessionError::Internal(e);
    let _ = std::fs::remove_dir_all(&partial);
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&partial)
            .map_err(|e| internal(format!("{}: {e}", partial.display())))?;
    }
    // The clocks' file is made first (a full disk fails here, the
    // processes untouched) and written again once they are stopped.
    let offsets = pids.iter().find_map(|&p| clocks::offsets_of(p));
    let reserved = match offsets {
        Some(o) => clocks::save(&partial, o).map_err(|e| {
            SessionError::Storage(format!(
                "cannot write the session's state (it keeps running): {e}"
            ))
        }),
        None => Ok(()),
    };
    let result = reserved.and_then(|()| match pids.is_empty() {
        true => Manifest::default()
            .save(&partial)
            .map(|()| (0, 0))
            .map_err(SessionError::Storage),
        false => run_dump(exe, &partial, pids),
    });
    if let (Ok(_), Some(o)) = (&result, offsets) {
        if let Err(e) = clocks::save(&partial, o) {
            eprintln!("supervisor: sessions: {e}");
        }
    }
    let (processes, memory_bytes) = match result {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    let state = state_dir(session_dir);
    let _ = std::fs::remove_dir_all(&state);
    std::fs::rename(&partial, &state)
        .and_then(|()| std::fs::File::open(session_dir)?.sync_all())
        .map_err(|e| internal(format!("{}: {e}", state.display())))?;
    Ok(Saved {
        processes,
        memory_bytes,
    })
}

/// The processes saved (those that ended meanwhile are not) and the
/// bytes of memory.
fn run_dump(exe: &Path, dir: &Path, pids: &[i32]) -> Result<(usize, u64), SessionError> {
    let out = Command::new(exe)
        .args(["checkpoint", "dump", "--dir"])
        .arg(dir)
        .args(pids.iter().map(|p| p.to_string()))
        .output()
        .map_err(|e| SessionError::Internal(format!("starting the checkpoint helper: {e}")))?;
    let message = last_line(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let v = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default();
            let processes = v["processes"].as_u64().unwrap_or(0) as usize;
            Ok((processes, v["memory_bytes"].as_u64().unwrap_or(0)))
        }
        Some(helper::EXIT_BUSY) => Err(SessionError::Busy(format!(
            "cannot hibernate now: {message}"
        ))),
        Some(helper::EXIT_UNSUPPORTED) => Err(SessionError::Refused(format!(
            "cannot hibernate this session: {message}"
        ))),
        Some(helper::EXIT_STORAGE) => Err(SessionError::Storage(format!(
            "cannot write the session's state (it keeps running): {message}"
        ))),
        _ => Err(SessionError::Internal(format!("hibernating: {message}"))),
    }
}

/// The number of processes in the saved state, its images unchecked.
pub fn image_count(session_dir: &Path) -> Result<usize, SessionError> {
    Manifest::load(&state_dir(session_dir))
        .map(|m| m.processes.len())
        .map_err(|e| SessionError::Refused(format!("the saved state cannot be restored: {e}")))
}

/// A restore begun: the helper started before the wake's sandbox, its
/// images mapped and their check running, waiting for its stubs
/// ([`Restore::into_held`]). Dropped unused, the helper exits (its stdin
/// ends) with nothing restored.
pub struct Restore {
    helper: Option<Child>,
}

/// Processes restored into the session's new sandbox, their images
/// checked, held stopped by the helper until [`Held::release`] or
/// [`Held::abort`].
pub struct Held {
    helper: Option<Child>,
    stubs: Vec<i32>,
    pub times: Times,
}

/// Where a restore's time went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    /// Starting the stubs.
    pub stubs: Duration,
    /// The helper, from the stubs handed to it to its answer.
    pub helper: Duration,
    /// Of which the restore into the stubs, and the images' check beside it
    /// (begun when the helper started, before the sandbox).
    pub restore: Duration,
    pub check: Duration,
    /// Of the restore, the copy of the saved pages.
    pub copy: Duration,
}

impl Restore {
    /// Starts the helper for the `count` processes of the session's
    /// saved state: it maps the images and starts checking them against
    /// the manifest at once, while the caller starts the sandbox.
    pub fn begin(exe: &Path, session_dir: &Path, count: usize) -> Result<Restore, SessionError> {
        if count == 0 {
            // No process was saved: no image to restore or check.
            return Ok(Restore { helper: None });
        }
        let helper = Command::new(exe)
            .args([
                "checkpoint",
                "restore",
                "--hold",
                "--stubs-on-stdin",
                "--dir",
            ])
            .arg(state_dir(session_dir))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| SessionError::Internal(format!("starting the checkpoint helper: {e}")))?;
        Ok(Restore {
            helper: Some(helper),
        })
    }

    /// Starts `count` stubs in the session's new sandbox (init `init`,
    /// exec socket `socket`; commands run with `env`), hands them to the
    /// helper, which restores the images into them and holds them
    /// stopped, and answers once the check beside it has passed too: an
    /// image that does not check out is refused (422, its reason). On an
    /// error whatever was started of them is killed.
    pub fn into_held(
        mut self,
        socket: &Path,
        init: i32,
        env: Vec<String>,
        count: usize,
    ) -> Result<Held, SessionError> {
        let Some(mut helper) = self.helper.take() else {
            return Ok(Held {
                helper: None,
                stubs: Vec::new(),
                times: Times::default(),
            });
        };
        let started = Instant::now();
        let stubs = match start_stubs(socket, init, env, count) {
            Ok(s) => s,
            Err(e) => {
                drop(helper.stdin.take());
                let _ = helper.wait();
                return Err(e);
            }
        };
        let stubs_time = started.elapsed();
        let mut held = Held {
            helper: None,
            stubs,
            times: Times {
                stubs: stubs_time,
                ..Times::default()
            },
        };
        let list = held.stubs.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let handed = helper.stdin.as_mut().map(|stdin| {
            use std::io::Write;
            writeln!(stdin, "stubs {}", list.join(",")).and_then(|()| stdin.flush())
        });
        let handed_at = Instant::now();
        let mut said = String::new();
        if let (Some(Ok(())), Some(out)) = (handed, helper.stdout.as_mut()) {
            use std::io::BufRead;
            let _ = std::io::BufReader::new(out).read_line(&mut said);
        }
        held.times.helper = handed_at.elapsed();
        let mut words = said.split_whitespace();
        if words.next() == Some("restored") {
            let mut ms = || {
                Duration::from_secs_f64(
                    words
                        .next()
                        .and_then(|w| w.parse::<f64>().ok())
                        .filter(|v| v.is_finite())
                        .unwrap_or(0.0)
                        .max(0.0)
                        / 1e3,
                )
            };
            (held.times.restore, held.times.check, held.times.copy) = (ms(), ms(), ms());
            held.helper = Some(helper);
            return Ok(held);
        }
        drop(helper.stdin.take());
        let out = helper.wait_with_output();
        held.abort();
        let message = out.map(|o| last_line(&o.stderr)).unwrap_or_default();
        Err(SessionError::Refused(format!(
            "the saved state cannot be restored: {message}"
        )))
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(mut helper) = self.helper.take() {
            // Its stdin ends: it exits before restoring anything.
            drop(helper.stdin.take());
            let _ = helper.wait();
        }
    }
}

impl Held {
    /// Lets the restored processes go.
    pub fn release(mut self) -> Result<(), SessionError> {
        let Some(mut helper) = self.helper.take() else {
            return Ok(());
        };
        if let Some(mut stdin) = helper.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(b"go\n");
        }
        match helper.wait_with_output() {
            Ok(out) if out.status.success() => {
                // They run: nothing left to kill on drop.
                self.stubs.clear();
                Ok(())
            }
            out => {
                self.abort();
                let message = out.map(|o| last_line(&o.stderr)).unwrap_or_default();
                Err(SessionError::Internal(format!(
                    "letting the restored processes go: {message}"
                )))
            }
        }
    }

    /// Kills the restored processes (the helper, told so, kills them
    /// too; so does its exit).
    pub fn abort(mut self) {
        if let Some(mut helper) = self.helper.take() {
            drop(helper.stdin.take());
            let _ = helper.wait();
        }
        for &s in &self.stubs {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(s),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        self.stubs.clear();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.helper.is_some() || !self.stubs.is_empty() {
            let held = Held {
                helper: self.helper.take(),
                stubs: std::mem::take(&mut self.stubs),
                times: self.times,
            };
            held.abort();
        }
    }
}

/// Starts `count` stubs in the session; their host pids, each once it
/// runs the stub's program.
fn start_stubs(
    socket: &Path,
    init: i32,
    env: Vec<String>,
    count: usize,
) -> Result<Vec<i32>, SessionError> {
    let script = format!(
        "i=0; while [ $i -lt {count} ]; do {STUB} 2147483647 </dev/null >/dev/null 2>&1 & echo $!; i=$((i+1)); done"
    );
    let cmd = exec::Command {
        args: vec!["/bin/sh".into(), "-c".into(), script],
        env,
        cwd: "/".into(),
        stdin: Vec::new(),
        timeout: Duration::from_secs(10),
        cap: 1 << 16,
    };
    let out = exec::run(socket, init, &cmd, &mut |_, _| {})
        .map_err(|e| SessionError::Internal(format!("starting the restore's stubs: {e}")))?;
    let inside: Vec<i32> = String::from_utf8_lossy(&out.stdout.bytes)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    if inside.len() != count {
        return Err(SessionError::Internal(format!(
            "started {} of {count} stubs: {}",
            inside.len(),
            last_line(&out.stderr.bytes)
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut host = Vec::with_capacity(count);
    for pid in inside {
        loop {
            let found = procs::host_pid(init, pid).filter(|&h| runs_stub(h));
            if let Some(h) = found {
                host.push(h);
                break;
            }
            if Instant::now() >= deadline {
                return Err(SessionError::Internal(format!("stub {pid} did not start")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(host)
}

/// Whether host pid `pid` has executed the stub's program.
fn runs_stub(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.starts_with(STUB.as_bytes()))
        .unwrap_or(false)
}

fn last_line(text: &[u8]) -> String {
    String::from_utf8_lossy(text)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_string()
}

/// Removes the session's saved state (it woke, or it ended).
pub fn forget(session_dir: &Path) {
    for d in [STATE_DIR, PARTIAL_DIR] {
        let _ = std::fs::remove_dir_all(session_dir.join(d));
    }
    remove_gone(session_dir);
}

/// Removes the session's saved state after a wake: renamed out of the
/// way at once, removed on a thread of its own, as freeing the page
/// cache of 100 MiB of images takes tens of milliseconds that the woken
/// session need not wait for. A daemon that stops first leaves the
/// renamed directory, which the session's next `forget` removes.
pub fn forget_after_wake(session_dir: &Path) {
    let gone = session_dir.join(GONE_DIR);
    let _ = std::fs::remove_dir_all(session_dir.join(PARTIAL_DIR));
    if std::fs::rename(state_dir(session_dir), &gone).is_err() {
        // A gone state not yet removed is in the way: this one at once.
        forget(session_dir);
        return;
    }
    let dir = session_dir.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("forget-state".into())
        .spawn(move || remove_gone(&dir));
    if spawned.is_err() {
        remove_gone(session_dir);
    }
}

fn remove_gone(session_dir: &Path) {
    let _ = std::fs::remove_dir_all(session_dir.join(GONE_DIR));
}
