//! The output cap (`--output-limit`): stdout and stderr together may
//! carry so many bytes; the rest is dropped and the run ends (reason
//! `output`).
//!
//! Owns: the [`Meter`] that counts and cuts (shared with the terminal
//! relay, which meters a guest's pseudo-terminal), and the [`Capture`]
//! of the guest's stdout and stderr when they are not a terminal: pipes
//! put in place of our descriptors 1 and 2 just for the launch (so init
//! and the guest inherit them), and one relay thread per pipe copying to
//! the real descriptors. Does not own killing (the `Tripwire`).
//!
//! Without `--output-limit` none of this exists: the guest writes to our
//! stdout and stderr directly, at native speed.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::unistd::{dup2, pipe2, read};

use crate::limits::{Kill, Tripwire};
use crate::sys::fd::write_all;

/// Counts the guest's output against the limit.
#[derive(Debug)]
pub struct Meter {
    limit: u64,
    used: AtomicU64,
    cut: AtomicBool,
    tripwire: Arc<Tripwire>,
}

impl Meter {
    pub fn new(limit: u64, tripwire: Arc<Tripwire>) -> Arc<Meter> {
        Arc::new(Meter {
            limit,
            used: AtomicU64::new(0),
            cut: AtomicBool::new(false),
            tripwire,
        })
    }

    /// How many of the next `n` bytes may pass. Crossing the limit cuts
    /// the output and pulls the tripwire.
    pub fn admit(&self, n: usize) -> usize {
        let before = self.used.fetch_add(n as u64, Ordering::SeqCst);
        let room = self.limit.saturating_sub(before);
        if (n as u64) > room {
            if !self.cut.swap(true, Ordering::SeqCst) {
                self.tripwire.pull(Kill::Output);
            }
            return room as usize;
        }
        n
    }

    /// Bytes passed on to our stdout and stderr.
    pub fn passed(&self) -> u64 {
        self.used.load(Ordering::SeqCst).min(self.limit)
    }

    pub fn was_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

/// The guest's stdout and stderr (those not on a terminal) captured
/// through pipes. Between [`Capture::install`] and [`Capture::restore`]
/// our own descriptors 1 and 2 are the pipes' write ends; nothing may be
/// printed then. [`Capture::relay`] starts copying, once the guest runs.
pub struct Capture {
    /// (our descriptor, a saved copy of what it was, the pipe's read end).
    streams: Vec<(RawFd, OwnedFd, OwnedFd)>,
    relays: Vec<JoinHandle<()>>,
}

impl Capture {
    /// Puts pipes in place of descriptors `fds` (1 for stdout, 2 for
    /// stderr, or both). Call
    /// while single-threaded, just before the launch.
    pub fn install(fds: &[RawFd]) -> Result<Capture, String> {
        let err = |what: &str, e: Errno| format!("capturing the output: {what}: {}", e.desc());
        let mut capture = Capture {
            streams: Vec::new(),
            relays: Vec::new(),
        };
        for &fd in fds {
            let stream = match fd {
                1 => std::io::stdout().as_fd().try_clone_to_owned(),
                _ => std::io::stderr().as_fd().try_clone_to_owned(),
            };
            let saved = stream.map_err(|e| format!("capturing the output: dup: {e}"))?;
            let (rx, tx) = pipe2(OFlag::O_CLOEXEC).map_err(|e| err("pipe", e))?;
            // dup2 clears close-on-exec: init and the guest inherit it.
            dup2(tx.as_raw_fd(), fd).map_err(|e| err("dup2", e))?;
            capture.streams.push((fd, saved, rx));
        }
        Ok(capture)
    }

    /// Gives our descriptors back (the guest keeps the pipes). Call right
    /// after the launch, whatever its result.
    pub fn restore(&mut self) {
        for (fd, saved, _) in &self.streams {
            let _ = dup2(saved.as_raw_fd(), *fd);
        }
    }

    /// Starts relaying, once [`Capture::restore`]d: one thread per pipe,
    /// to what our descriptors 1 and 2 are now (the pool's sandbox has put
    /// its client's there since the launch). Until then the guest's
    /// output waits in the pipes.
    pub fn relay(&mut self, meter: &Arc<Meter>) {
        for (fd, saved, rx) in self.streams.drain(..) {
            let now = match fd {
                1 => std::io::stdout().as_fd().try_clone_to_owned(),
                _ => std::io::stderr().as_fd().try_clone_to_owned(),
            };
            let saved = now.unwrap_or(saved);
            let meter = meter.clone();
            let relay = thread::Builder::new()
                .name("output".into())
                .spawn(move || relay(rx.as_fd(), saved.as_fd(), &meter));
            if let Ok(handle) = relay {
                self.relays.push(handle);
            }
        }
    }

    /// Waits until the guest's last output is relayed (every guest
    /// process is gone, so the pipes are at their end).
    pub fn finish(self) {
        for relay in self.relays {
            let _ = relay.join();
        }
    }
}

/// Copies `from` to `to` as the meter allows; once cut, reads on and
/// drops, so no guest process blocks on a full pipe while it is killed.
fn relay(from: BorrowedFd<'_>, to: BorrowedFd<'_>, meter: &Meter) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut host_ok = true;
    loop {
        match read(from.as_raw_fd(), &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let pass = meter.admit(n);
                if host_ok && pass > 0 {
                    host_ok = write_all(to, &buf[..pass]).is_ok();
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_cuts_at_the_limit_exactly() {
        let m = Meter::new(10, Tripwire::new());
        assert_eq!(m.admit(6), 6);
        assert!(!m.was_cut());
        assert_eq!(m.admit(6), 4);
        assert!(m.was_cut());
        assert_eq!(m.admit(6), 0);
        assert_eq!(m.passed(), 10);
    }

    #[test]
    fn output_up_to_the_limit_is_not_cut() {
        let m = Meter::new(10, Tripwire::new());
        assert_eq!(m.admit(10), 10);
        assert!(!m.was_cut());
    }
}
