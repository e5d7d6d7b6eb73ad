//! The watchdog: one thread that ends the run when the wall-clock
//! timeout passes, the sandbox's CPU time runs out, the kernel's OOM
//! killer strikes, or a fork is refused at the pids limit.
//!
//! Owns: the polling loop and its period. Does not own: reading the
//! counters (`cgroup::Counters`) or killing (`Tripwire`). It is started
//! only when one of those limits is set, so a run without them has no
//! such thread and pays nothing.
//!
//! Why polling: cgroup v1 offers eventfd notification for OOM only, v2
//! file-modified events only; a 20 ms tick serves every limit on both
//! with one read per counter, and bounds how far past its limit a
//! runaway program gets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::cgroup::Counters;
use super::{Kill, Limits, Tripwire};

/// How often the counters are read.
const TICK: Duration = Duration::from_millis(20);

/// A running watchdog; dropping it stops the thread at its next tick.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What the watchdog checks, fixed at start.
struct Watch {
    deadline: Option<Instant>,
    cpu_time: Option<f64>,
    oom: bool,
    pids: bool,
}

impl Watch {
    fn new(limits: &Limits, counters: &Counters, started: Instant) -> Watch {
        Watch {
            deadline: limits.timeout.map(|t| started + t),
            cpu_time: limits
                .cpu_time
                .filter(|_| counters.has_cpu())
                .map(|t| t.as_secs_f64()),
            oom: limits.memory.is_some() && counters.has_memory(),
            pids: limits.pids.is_some() && counters.has_pids(),
        }
    }

    fn polls_counters(&self) -> bool {
        self.cpu_time.is_some() || self.oom || self.pids
    }

    /// The limit that has been passed, if any.
    fn check(&self, counters: &Counters, now: Instant) -> Option<Kill> {
        if self.oom && counters.oom_kills() > 0 {
            return Some(Kill::Memory);
        }
        if self.pids && counters.pids_refused() > 0 {
            return Some(Kill::Pids);
        }
        if let Some(limit) = self.cpu_time {
            if counters.cpu_seconds().is_some_and(|used| used >= limit) {
                return Some(Kill::CpuTime);
            }
        }
        if self.deadline.is_some_and(|d| now >= d) {
            return Some(Kill::Timeout);
        }
        None
    }

    /// How long to sleep before the next check.
    fn nap(&self, now: Instant) -> Duration {
        let to_deadline = self.deadline.map(|d| d.saturating_duration_since(now));
        match (self.polls_counters(), to_deadline) {
            (true, Some(d)) => d.min(TICK),
            (true, None) => TICK,
            (false, Some(d)) => d,
            (false, None) => Duration::MAX,
        }
    }
}

/// Starts watching, or returns `None` when no limit needs a watchdog.
/// `started`: when the run began (the timeout counts from there).
pub fn start(
    limits: &Limits,
    counters: Arc<Counters>,
    tripwire: Arc<Tripwire>,
    started: Instant,
) -> Option<Watchdog> {
    let watch = Watch::new(limits, &counters, started);
    if !watch.polls_counters() && watch.deadline.is_none() {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let now = Instant::now();
                if let Some(kill) = watch.check(&counters, now) {
                    tripwire.pull(kill);
                    return;
                }
                thread::sleep(watch.nap(now));
            }
        })
        .ok()?;
    Some(Watchdog { stop })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_alone_sleeps_until_the_deadline() {
        let now = Instant::now();
        let w = Watch {
            deadline: Some(now + Duration::from_secs(3)),
            cpu_time: None,
            oom: false,
            pids: false,
        };
        assert_eq!(w.nap(now), Duration::from_secs(3));
        assert_eq!(w.check(&Counters::default(), now), None);
        assert_eq!(
            w.check(&Counters::default(), now + Duration::from_secs(3)),
            Some(Kill::Timeout)
        );
    }

    #[test]
    fn counters_are_polled_every_tick() {
        let w = Watch {
            deadline: None,
            cpu_time: Some(1.0),
            oom: false,
            pids: false,
        };
        assert_eq!(w.nap(Instant::now()), TICK);
    }
}
