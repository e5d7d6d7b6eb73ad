//! Pools per shape: for each set of limits executions ask for (a
//! [`Shape`]), a `supervisor pool` child with those flags keeps
//! sandboxes set up before the request (docs/pool.md), so a pooled
//! execution costs what `supervisor run --pool` costs. At most
//! `--max-pools` pools live at once (executions of further shapes take a
//! plain run); a pool that has exited is replaced on the next request.
//! Their sockets are `--data-dir/pools/N.sock`, their logs beside them.
//!
//! Does not own talking to a pool (`runner.rs`). The daemon ends its
//! pools (SIGTERM, by pid) when it stops. Each pool's stdin is its
//! lifeline (`pool --lifeline`), a pipe whose write end only the daemon
//! holds: a daemon that was killed closes it by dying, and the pool
//! kills its sandboxes and exits. Should one still run (stopped, or
//! frozen), the next daemon on the same `--data-dir` ends it (their pids
//! are recorded beside their sockets).

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::request::{Shape, SCRATCH};

pub struct Pools {
    dir: PathBuf,
    exe: PathBuf,
    size: u32,
    max: usize,
    live: Mutex<Live>,
}

#[derive(Default)]
struct Live {
    next: u64,
    pools: HashMap<Shape, PoolChild>,
    /// The daemon is stopping: no pool starts any more (one started
    /// after [`Pools::shut_down`] would outlive the daemon).
    closed: bool,
}

struct PoolChild {
    socket: PathBuf,
    child: Child,
    /// The write end of the pool's lifeline: never written, closed when
    /// we end (or die).
    _lifeline: OwnedFd,
}

impl Pools {
    pub fn new(data_dir: &Path, exe: PathBuf, size: u32, max: usize) -> Result<Pools, String> {
        let dir = data_dir.join("pools");
        // A previous daemon's pools: ended if it could not end them
        // itself (it was killed), then their sockets and logs removed.
        end_stale(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Pools {
            dir,
            exe,
            size,
            max,
            live: Mutex::new(Live::default()),
        })
    }

    /// The socket of `shape`'s pool, started if need be; `None`: no pool
    /// (pools are off, at their maximum, or this one failed to start).
    pub async fn socket_for(&self, shape: &Shape) -> Option<PathBuf> {
        if self.size == 0 {
            return None;
        }
        let mut live = self.live.lock().await;
        if live.closed {
            return None;
        }
        if let Some(pool) = live.pools.get_mut(shape) {
            if matches!(pool.child.try_wait(), Ok(None)) {
                return Some(pool.socket.clone());
            }
            let gone = live.pools.remove(shape);
            drop(gone);
        }
        if live.pools.len() >= self.max {
            return None;
        }
        live.next += 1;
        let socket = self.dir.join(format!("{}.sock", live.next));
        let log = std::fs::File::create(self.dir.join(format!("{}.log", live.next))).ok()?;
        // Close-on-exec: no other child of ours holds the write end.
        let (lifeline_r, lifeline) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
        let child = Command::new(&self.exe)
            .arg("pool")
            .arg("--socket")
            .arg(&socket)
            .arg(format!("--size={}", self.size))
            .arg(format!("--workdir={SCRATCH}"))
            .arg("--lifeline")
            .args(shape.flags())
            .stdin(Stdio::from(lifeline_r))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .ok()?;
        let _ = std::fs::write(
            self.dir.join(format!("{}.pid", live.next)),
            child.id().to_string(),
        );
        let mut pool = PoolChild {
            socket,
            child,
            _lifeline: lifeline,
        };
        // The pool's socket appears once it listens (its first sandbox
        // may still be setting up: a client then waits in its queue).
        let start = Instant::now();
        while !pool.socket.exists() {
            if !matches!(pool.child.try_wait(), Ok(None))
                || start.elapsed() > Duration::from_secs(10)
            {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let socket = pool.socket.clone();
        live.pools.insert(shape.clone(), pool);
        Some(socket)
    }

    /// Ends every pool: SIGTERM (each tears its idle sandboxes down),
    /// then waits for it; none starts afterwards.
    pub async fn shut_down(&self) {
        let mut live = self.live.lock().await;
        live.closed = true;
        for (_, pool) in live.pools.drain() {
            drop(pool);
        }
    }
}

/// SIGTERM to each pool a previous daemon recorded in `dir` (`N.pid`)
/// that still runs: a process whose command line names its socket.
fn end_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "pid") {
            continue;
        }
        let Some(pid) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        else {
            continue;
        };
        let socket = path.with_extension("sock");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let names_it = cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == socket.as_os_str().as_encoded_bytes());
        if names_it {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

impl Drop for PoolChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        }
        let _ = self.child.wait();
    }
}
