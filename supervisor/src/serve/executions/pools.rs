//! Pools per shape: for each set of limits executions ask for (a
//! [`Shape`]), a `supervisor pool` child with those flags keeps
//! sandboxes set up before the request (docs/pool.md), so a pooled
//! execution costs what `supervisor run --pool` costs. At most
//! `--max-pools` pools live at once (executions of further shapes take a
//! plain run); a pool that has exited is replaced on the next request.
//! Their sockets are `--data-dir/pools/N.sock`, their logs beside them.
//!
//! Does not own talking to a pool (`runner.rs`). The daemon ends its
//! pools (SIGTERM, by pid) when it stops.

use std::collections::HashMap;
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
}

struct PoolChild {
    socket: PathBuf,
    child: Child,
}

impl Pools {
    pub fn new(data_dir: &Path, exe: PathBuf, size: u32, max: usize) -> Result<Pools, String> {
        let dir = data_dir.join("pools");
        // Sockets and logs of a previous daemon's pools are stale.
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
        let child = Command::new(&self.exe)
            .arg("pool")
            .arg("--socket")
            .arg(&socket)
            .arg(format!("--size={}", self.size))
            .arg(format!("--workdir={SCRATCH}"))
            .args(shape.flags())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .ok()?;
        let mut pool = PoolChild { socket, child };
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
    /// then waits for it.
    pub async fn shut_down(&self) {
        let mut live = self.live.lock().await;
        for (_, pool) in live.pools.drain() {
            drop(pool);
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
