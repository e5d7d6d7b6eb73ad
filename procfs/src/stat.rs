//! The sandbox's `/proc/stat`, `/proc/uptime` and `/proc/vmstat`, which
//! would otherwise be the host's: the CPU time of the sandbox's own tasks
//! (not the host's) spread over the CPUs it may use, its boot time and
//! task counts, and the host's other counters less their values when the
//! sandbox started.
//!
//! Owns: the [`Baseline`] these texts are relative to, the split of the
//! sandbox's CPU time into per-CPU counters, and [`CpuClock`] and
//! [`HighWater`], which keep every counter served monotonic. Does not own: recognising or serving
//! the files (`served.rs`), the census of the tasks (`tasks.rs`), or
//! the clocks, which the kernel answers in the sandbox's time namespace
//! (the engine's `launch/timens.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::stat_line::StatLine;
use super::tasks::Census;

/// USER_HZ: the unit of every time in /proc/stat and a task's `stat`.
pub const USER_HZ: u64 = 100;
/// Fields of a `cpuN` line: user nice system idle iowait irq softirq
/// steal guest guest_nice.
const CPU_FIELDS: usize = 10;
const USER: usize = 0;
const SYSTEM: usize = 2;
const IDLE: usize = 3;

/// One `cpuN` line's counters, in USER_HZ.
pub type CpuLine = [u64; CPU_FIELDS];

/// What the sandbox's /proc texts are relative to, taken when the
/// handlers' context is made (just before the guest starts).
#[derive(Debug, Default)]
pub struct Baseline {
    /// The host's /proc/vmstat then: counters are served as differences.
    vmstat: String,
    /// A random id of this sandbox's "boot".
    pub boot_id: String,
    /// The whole seconds of host boot time at which the sandbox's clocks
    /// start (init's start, as `launch/timens.rs` sets the offsets).
    boot_offset: i64,
}

impl Baseline {
    /// `vmstat`: the host's /proc/vmstat now; `uuid`: a fresh random
    /// UUID; `init_stat`: the sandbox's `/proc/1/stat`.
    pub fn new(vmstat: String, uuid: String, init_stat: &str) -> Baseline {
        Baseline {
            vmstat,
            boot_id: uuid,
            boot_offset: clock_origin_secs(init_stat).unwrap_or(0),
        }
    }
}

impl Baseline {
    /// The sandbox's uptime in seconds, given the host's boot time now.
    pub fn uptime(&self, host_boottime: f64) -> f64 {
        (host_boottime - self.boot_offset as f64).max(0.0)
    }

    /// The sandbox's boot time (seconds since the epoch): the wall clock
    /// less its uptime, as the kernel computes btime in a time namespace.
    pub fn btime(&self, host_boottime: f64) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        (now - self.uptime(host_boottime)).max(0.0) as u64
    }
}

/// How long the sandbox's "machine" has been up when its init starts,
/// in whole seconds: its clocks never read below this in the guest, as
/// a booted machine's monotonic clock is past its first seconds when the
/// first program runs. Programs take a zero second as "unset" (iputils
/// ping's pacing does: a probe sent in the clocks' first second
/// restarted its schedule, so `ping -c 3` sent back to back), and
/// `CLOCK_MONOTONIC_RAW`, which the namespace moves by the monotonic
/// offset, reads behind `CLOCK_MONOTONIC` by the host's accumulated NTP
/// correction (0.3 s after a day here): 0 would make it negative.
pub const CLOCK_LEAD_SECS: i64 = 10;

/// The whole second of host boot time at which the sandbox's clocks read
/// zero: its init's start ([`start_secs`]) less [`CLOCK_LEAD_SECS`],
/// never before the host's boot. `launch/timens.rs` sets the time
/// namespace's offsets with it and the served uptime and btime use it,
/// so they agree to the second.
pub fn clock_origin_secs(init_stat: &str) -> Option<i64> {
    start_secs(init_stat).map(|s| (s - CLOCK_LEAD_SECS).max(0))
}

/// A task's start in whole seconds of host boot time, from its `stat`
/// (the 22nd field, in clock ticks). `launch/timens.rs` sets the time
/// namespace's offset with it too, so both agree to the second.
pub fn start_secs(stat: &str) -> Option<i64> {
    let ticks: i64 = StatLine::parse(stat)?.number(22)?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|hz| *hz > 0)?;
    Some(ticks / hz)
}

/// `/proc/uptime` of the sandbox `tick` USER_HZ after its clocks started,
/// given the CPU lines of its `/proc/stat` then: that time, and the idle
/// time of its CPUs since the start (the `cpu` line's idle: their sum),
/// in seconds with their hundredths cut, not rounded, as the kernel
/// prints them.
pub fn uptime(tick: u64, cpus: &[CpuLine]) -> String {
    let idle: u64 = cpus.iter().map(|l| l[IDLE]).sum();
    let (hz, up) = (USER_HZ, tick);
    format!(
        "{}.{:02} {}.{:02}\n",
        up / hz,
        up % hz,
        idle / hz,
        idle % hz
    )
}

/// The last `/proc/uptime` text served, with the USER_HZ tick of the
/// sandbox's uptime it was made at. A text asked for again within the
/// same tick is that one, without a census: its first figure is the
/// tick's alone, and its idle time would be the same, since the CPU
/// lines are raised to what was served before ([`CpuClock`]) and a
/// busier census only lowers the idle they would have; only a task's
/// time dropping out of the census (reaped into a parent not counted, an
/// unreaped zombie) could raise it, an artefact of the census the kernel
/// has no match for (its idle time is the CPUs' own). `ps` opens the file
/// twice a few hundred microseconds apart.
#[derive(Debug, Default)]
pub struct LastUptime(Mutex<Option<(u64, String)>>);

impl LastUptime {
    /// The text kept for `tick`, or `make()`'s, then kept unless a later
    /// tick's was kept meanwhile.
    pub fn at(&self, tick: u64, make: impl FnOnce() -> String) -> String {
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((t, text)) = &*lock() {
            if *t == tick {
                return text.clone();
            }
        }
        let text = make();
        let mut last = lock();
        if last.as_ref().is_none_or(|(t, _)| *t <= tick) {
            *last = Some((tick, text.clone()));
        }
        text
    }
}

/// The sandbox's CPU time as `n` CPU lines, `elapsed` USER_HZ after it
/// started: the user and system time of all its tasks, living and reaped
/// (`Census::user`, `Census::system`), spread evenly over the CPUs, and
/// the rest of each CPU's time idle. The sandbox keeps no nice, iowait,
/// irq or steal time of its own: those read 0.
pub fn cpu_times(n: usize, c: &Census, elapsed: u64) -> Vec<CpuLine> {
    let n = n.max(1);
    let share = |total: u64, i: usize| {
        let (each, rest) = (total / n as u64, total % n as u64);
        each + u64::from((i as u64) < rest)
    };
    (0..n)
        .map(|i| {
            let mut line = [0; CPU_FIELDS];
            line[USER] = share(c.user, i);
            line[SYSTEM] = share(c.system, i);
            line[IDLE] = elapsed.saturating_sub(line[USER] + line[SYSTEM]);
            line
        })
        .collect()
}

/// The CPU counters last served: every later answer is at least these,
/// field by field, so that `top`, `vmstat` and psutil, which subtract two
/// readings, never see time run backwards (a task's time moves to its
/// parent's only when it is reaped, and an unreaped zombie's drops out).
#[derive(Debug, Default)]
pub struct CpuClock(Mutex<Vec<CpuLine>>);

impl CpuClock {
    /// `now`, raised field by field to what was served before.
    pub fn monotonic(&self, mut now: Vec<CpuLine>) -> Vec<CpuLine> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (line, old) in now.iter_mut().zip(last.iter()) {
            for (v, o) in line.iter_mut().zip(old) {
                *v = (*v).max(*o);
            }
        }
        last.clone_from(&now);
        now
    }
}

/// A count served monotonic (context switches, forks): the highest value
/// served so far, since a task's share leaves the sum when it ends.
#[derive(Debug, Default)]
pub struct HighWater(AtomicU64);

impl HighWater {
    /// `now`, or what was served before if that was more.
    pub fn raise(&self, now: u64) -> u64 {
        self.0.fetch_max(now, Ordering::Relaxed).max(now)
    }
}

/// The sandbox's own counts in `/proc/stat` besides its CPU time.
#[derive(Debug, Default)]
pub struct OwnCounts {
    /// Context switches of its tasks (`ctxt`).
    pub ctxt: u64,
    /// Tasks created since it started (`processes`).
    pub processes: u64,
}

/// How many CPUs the host's /proc/stat lists.
#[cfg(test)]
fn host_cpus(host: &str) -> usize {
    host.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count()
}

/// `/proc/stat` of the sandbox: `cpus` its CPU lines (`cpu_times`,
/// renumbered from 0), with `cpu` their sum; `ctxt` and `processes` its
/// own counts; `btime` its boot time; `procs_running` and `procs_blocked`
/// its tasks'. It has no devices, hence no interrupts of its own: `intr`
/// is 0 without the host's per-line counts (which list the host's
/// interrupt lines), and `softirq` all zeros (as many as the host's line
/// has: a count per softirq kind the kernel defines). The other lines
/// come in the order of the host's text `host`.
pub fn stat(host: &str, cpus: &[CpuLine], c: &Census, own: &OwnCounts, btime: u64) -> String {
    let mut sum = [0u64; CPU_FIELDS];
    for line in cpus {
        for (s, v) in sum.iter_mut().zip(line) {
            *s += v;
        }
    }
    let mut out = format!("cpu  {}\n", join(&sum));
    for (i, v) in cpus.iter().enumerate() {
        out.push_str(&format!("cpu{i} {}\n", join(v)));
    }
    for line in host.lines() {
        let key = line.split_whitespace().next().unwrap_or("");
        let text = match key {
            "intr" => "0".to_owned(),
            "softirq" => join(&vec![0; numbers(line).len().max(1)]),
            "ctxt" => own.ctxt.to_string(),
            "btime" => btime.to_string(),
            "processes" => own.processes.to_string(),
            "procs_running" => c.running.max(1).to_string(),
            "procs_blocked" => c.blocked.to_string(),
            _ => continue,
        };
        out.push_str(&format!("{key} {text}\n"));
    }
    out
}

/// `/proc/vmstat` since the sandbox started: every `key value` line of
/// the host's `host` less its value at the baseline (so counters such as
/// pgpgin or pswpin count from the start, and the host's page gauges,
/// which tell its memory size, read as what they grew by, at least 0).
pub fn vmstat(host: &str, base: &Baseline) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        let Some((key, v)) = line.split_once(' ') else {
            continue;
        };
        let old = base
            .vmstat
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let now = v.trim().parse::<u64>().unwrap_or(0);
        out.push_str(&format!("{key} {}\n", now.saturating_sub(old)));
    }
    out
}

fn numbers(line: &str) -> Vec<u64> {
    line.split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect()
}

fn join(v: &[u64]) -> String {
    let words: Vec<String> = v.iter().map(u64::to_string).collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "cpu  100 0 50 1000 5 0 1 0 0 0\n\
cpu0 60 0 30 500 3 0 1 0 0 0\n\
cpu1 40 0 20 500 2 0 0 0 0 0\n\
intr 900 10 20\n\
ctxt 5000\n\
btime 1000\n\
processes 777\n\
procs_running 9\n\
procs_blocked 2\n\
softirq 300 1 2\n";

    fn census() -> Census {
        Census {
            running: 2,
            blocked: 0,
            total: 3,
            last_pid: 4,
            user: 7,
            system: 3,
            switches: 0,
        }
    }

    #[test]
    fn stat_is_the_sandboxs() {
        let base = Baseline {
            vmstat: "nr_free_pages 1000\npgpgin 50\n".to_owned(),
            boot_id: String::new(),
            boot_offset: 1000,
        };
        let c = census();
        let one = cpu_times(1, &c, 1250);
        let own = OwnCounts {
            ctxt: 1000,
            processes: 6,
        };
        let s = stat(HOST, &one, &c, &own, 123);
        assert_eq!(
            s,
            "cpu  7 0 3 1240 0 0 0 0 0 0\ncpu0 7 0 3 1240 0 0 0 0 0 0\nintr 0\nctxt 1000\n\
btime 123\nprocesses 6\nprocs_running 2\nprocs_blocked 0\nsoftirq 0 0 0\n"
        );
        let two = cpu_times(host_cpus(HOST), &c, 1250);
        let all = stat(HOST, &two, &c, &own, 123);
        assert!(
            all.starts_with(
                "cpu  7 0 3 2490 0 0 0 0 0 0\ncpu0 4 0 2 1244 0 0 0 0 0 0\ncpu1 3 0 1 1246 "
            ),
            "{all}"
        );
        assert_eq!(uptime(1250, &one), "12.50 12.40\n");
        // The `cpu` line's idle: the sum of the CPUs'.
        assert_eq!(uptime(1250, &two), "12.50 24.90\n");
        assert_eq!(base.uptime(1012.5), 12.5);
        assert_eq!(
            vmstat("nr_free_pages 900\npgpgin 70\nnew 5\n", &base),
            "nr_free_pages 0\npgpgin 20\nnew 5\n"
        );
        let init = "1 (supervisor-init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250000 1 2";
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .unwrap()
            .unwrap();
        assert_eq!(start_secs(init), Some(250000 / hz));
        let origin = 250000 / hz - CLOCK_LEAD_SECS;
        assert_eq!(clock_origin_secs(init), Some(origin.max(0)));
        let early = "1 (supervisor-init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 1 2";
        assert_eq!(clock_origin_secs(early), Some(0));
    }

    #[test]
    fn an_uptime_asked_for_within_its_tick_is_the_one_made() {
        let last = LastUptime::default();
        assert_eq!(last.at(7, || "0.07 0.10\n".into()), "0.07 0.10\n");
        // The same tick: kept, nothing made.
        assert_eq!(last.at(7, || unreachable!()), "0.07 0.10\n");
        assert_eq!(last.at(8, || "0.08 0.12\n".into()), "0.08 0.12\n");
        // An earlier tick (a worker that read the clock before another
        // served a later one) is made, and leaves the later one kept.
        assert_eq!(last.at(7, || "0.07 0.11\n".into()), "0.07 0.11\n");
        assert_eq!(last.at(8, || unreachable!()), "0.08 0.12\n");
    }

    #[test]
    fn high_water_never_goes_back() {
        let h = HighWater::default();
        assert_eq!(h.raise(5), 5);
        assert_eq!(h.raise(3), 5);
        assert_eq!(h.raise(9), 9);
    }

    #[test]
    fn cpu_counters_never_go_back() {
        let clock = CpuClock::default();
        let mut c = census();
        let first = clock.monotonic(cpu_times(2, &c, 100));
        // A reaped task's time is gone for a moment; busier than the wall clock.
        c.user = 2;
        c.system = 300;
        let second = clock.monotonic(cpu_times(2, &c, 110));
        for (a, b) in first.iter().zip(&second) {
            assert!(a.iter().zip(b).all(|(x, y)| x <= y), "{a:?} then {b:?}");
        }
        assert_eq!(second[0][SYSTEM], 150);
        assert_eq!(second[0][IDLE], first[0][IDLE]);
    }
}
