//! The sandbox's cgroup: found, created, filled in, read and removed.
//!
//! Owns: finding where each controller the sandbox needs (memory, pids,
//! cpu, and cpuacct on v1) lives for this process — cgroup v2 when the
//! controller is bound there and delegated to our cgroup, a v1 hierarchy
//! otherwise — creating one child cgroup per hierarchy *beneath the
//! supervisor's own* (never elsewhere), writing the limits, moving the
//! sandbox's init into it, reading the counters the report and the
//! watchdog need, and removing it. Does not own: which limits to set
//! (`limits::Limits`), when to kill (the watchdog), or cleaning up after a
//! killed supervisor (the janitor, which uses [`remove_tree`]), or
//! reading the counters (`counters.rs`, opened by
//! [`SandboxCgroup::counters`]).

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::mountinfo::unescape;

pub use super::counters::Counters;

/// A controller the sandbox uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controller {
    Memory,
    Pids,
    Cpu,
    /// CPU usage accounting: `cpuacct` on v1; part of `cpu` on v2.
    CpuAcct,
}

impl Controller {
    fn v1_name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
            Controller::CpuAcct => "cpuacct",
        }
    }
    /// The v2 controller that provides it (usage is in every cgroup's
    /// cpu.stat, so CpuAcct needs none).
    fn v2_name(self) -> Option<&'static str> {
        match self {
            Controller::Memory => Some("memory"),
            Controller::Pids => Some("pids"),
            Controller::Cpu => Some("cpu"),
            Controller::CpuAcct => None,
        }
    }
}

/// Where one controller's files are, for the supervisor's own cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    V1(PathBuf),
    V2(PathBuf),
}

/// The supervisor's own cgroups, as `/proc/self/cgroup` and
/// `/proc/self/mountinfo` describe them.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// v1 hierarchies: (controllers of the hierarchy, our directory in it).
    v1: Vec<(Vec<String>, PathBuf)>,
    /// Our directory in the v2 hierarchy, if it is mounted.
    v2: Option<PathBuf>,
}

impl Host {
    /// Reads this process's cgroups.
    pub fn discover() -> Host {
        let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Host::parse(&cgroup, &mountinfo)
    }

    /// [`Host::discover`] from the two files' text.
    pub fn parse(cgroup: &str, mountinfo: &str) -> Host {
        let mounts: Vec<Mount> = mountinfo.lines().filter_map(Mount::parse).collect();
        let mut host = Host::default();
        for line in cgroup.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if ctrls.is_empty() {
                host.v2 = mounts
                    .iter()
                    .find(|m| m.fstype == "cgroup2")
                    .and_then(|m| m.dir_for(path));
            } else {
                let names: Vec<String> = ctrls.split(',').map(str::to_string).collect();
                let mount = mounts
                    .iter()
                    .find(|m| m.fstype == "cgroup" && names.iter().all(|n| m.options.contains(n)));
                if let Some(dir) = mount.and_then(|m| m.dir_for(path)) {
                    host.v1.push((names, dir));
                }
            }
        }
        host
    }

    /// Where `c` lives: its v1 hierarchy if one is mounted (a controller
    /// bound to v1 is absent from v2), else v2 if the controller is
    /// enabled for our cgroup's children (or can be).
    pub fn place(&self, c: Controller) -> Option<Place> {
        if let Some(dir) = self.v1_dir(c) {
            return Some(Place::V1(dir.to_path_buf()));
        }
        let dir = self.v2.as_ref()?;
        let available = match c.v2_name() {
            None => true,
            Some(name) => v2_delegates(dir, name),
        };
        available.then(|| Place::V2(dir.clone()))
    }

    fn v1_dir(&self, c: Controller) -> Option<&Path> {
        self.v1
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == c.v1_name()))
            .map(|(_, d)| d.as_path())
    }
}

/// Whether children of our v2 cgroup `dir` get controller `name`:
/// already enabled in its subtree_control, or enabled now. (Enabling
/// fails while our cgroup holds processes, v2's "no internal processes"
/// rule; a delegating manager usually enables them for us.)
fn v2_delegates(dir: &Path, name: &str) -> bool {
    let enabled = |f: &str| {
        fs::read_to_string(dir.join(f))
            .map(|s| s.split_whitespace().any(|c| c == name))
            .unwrap_or(false)
    };
    if enabled("cgroup.subtree_control") {
        return true;
    }
    enabled("cgroup.controllers")
        && fs::write(dir.join("cgroup.subtree_control"), format!("+{name}")).is_ok()
}

/// One line of /proc/self/mountinfo, the fields we need.
struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    options: Vec<String>,
}

impl Mount {
    fn parse(line: &str) -> Option<Mount> {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let mut right = right.split(' ');
        let fstype = right.next()?.to_string();
        let _source = right.next()?;
        let options = right.next()?.split(',').map(str::to_string).collect();
        Some(Mount {
            root: String::from_utf8_lossy(&unescape(fields.get(3)?)).into_owned(),
            point: PathBuf::from(OsStr::from_bytes(&unescape(fields.get(4)?))),
            fstype,
            options,
        })
    }

    /// Our directory for cgroup `path`, when this mount shows it.
    fn dir_for(&self, path: &str) -> Option<PathBuf> {
        let rel = if self.root == "/" {
            path
        } else {
            path.strip_prefix(self.root.as_str())?
        };
        let rel = rel.trim_start_matches('/');
        if rel.split('/').any(|c| c == "..") {
            return None;
        }
        Some(self.point.join(rel))
    }
}

/// Where the sandbox's cgroup goes, before any directory is made: each
/// wanted controller's directory, and the directories (one per hierarchy
/// used). The janitor makes them (`janitor::spawn`), so that no kill of
/// the supervisor between a directory's creation and the janitor's fork
/// can leave one behind.
#[derive(Debug)]
pub struct CgroupPlan {
    places: Vec<(Controller, Place)>,
    dirs: Vec<PathBuf>,
}

impl CgroupPlan {
    /// `name` beneath our cgroup in each hierarchy that holds one of
    /// `wanted`. Controllers that cannot be placed are left out.
    pub fn named(host: &Host, wanted: &[Controller], name: &str) -> CgroupPlan {
        let mut plan = CgroupPlan {
            places: Vec::new(),
            dirs: Vec::new(),
        };
        for &c in wanted {
            let Some(place) = host.place(c) else { continue };
            let place = match place {
                Place::V1(d) => Place::V1(d.join(name)),
                Place::V2(d) => Place::V2(d.join(name)),
            };
            let (Place::V1(dir) | Place::V2(dir)) = &place;
            if !plan.dirs.contains(dir) {
                plan.dirs.push(dir.clone());
            }
            plan.places.push((c, place));
        }
        plan
    }

    /// [`CgroupPlan::named`] `stem`, or `stem-1`, `stem-2`... the first
    /// name none of whose directories exists: a directory a killed
    /// supervisor with our pid left would otherwise cost the sandbox its
    /// controller (`mkdir` fails, and the limit falls back to an rlimit).
    pub fn free(host: &Host, wanted: &[Controller], stem: &str) -> CgroupPlan {
        let mut plan = CgroupPlan::named(host, wanted, stem);
        for n in 1..100 {
            if !plan.dirs.iter().any(|d| d.exists()) {
                break;
            }
            plan = CgroupPlan::named(host, wanted, &format!("{stem}-{n}"));
        }
        plan
    }

    /// The directories to make, in order (deepest last).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The cgroup of the directories `made` (of [`CgroupPlan::dirs`]):
    /// a controller whose directory was not made is left out, and the
    /// caller asks [`SandboxCgroup::has`].
    pub fn made(self, made: &[PathBuf]) -> SandboxCgroup {
        let is_made = |p: &Place| {
            let (Place::V1(d) | Place::V2(d)) = p;
            made.contains(d)
        };
        SandboxCgroup {
            places: self
                .places
                .into_iter()
                .filter(|(_, p)| is_made(p))
                .collect(),
            dirs: self.dirs.into_iter().filter(|d| made.contains(d)).collect(),
        }
    }
}

/// Makes each of `dirs`; those made, in order. One that exists already
/// is not ours, and is left out.
pub fn make_dirs(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .filter(|d| fs::create_dir(d).is_ok())
        .cloned()
        .collect()
}

/// The sandbox's cgroup: one directory per hierarchy used.
#[derive(Debug)]
pub struct SandboxCgroup {
    places: Vec<(Controller, Place)>,
    /// Every directory created, for the janitor and removal.
    dirs: Vec<PathBuf>,
}

impl SandboxCgroup {
    /// Creates `name` beneath our cgroup in each hierarchy that holds one
    /// of `wanted`, here and now (no janitor: for tests and callers that
    /// remove it themselves). Controllers that cannot be placed are left
    /// out; the caller asks [`SandboxCgroup::has`].
    pub fn create(host: &Host, wanted: &[Controller], name: &str) -> SandboxCgroup {
        let plan = CgroupPlan::named(host, wanted, name);
        let made = make_dirs(plan.dirs());
        plan.made(&made)
    }

    /// Whether controller `c` is in place.
    pub fn has(&self, c: Controller) -> bool {
        self.places.iter().any(|(k, _)| *k == c)
    }

    /// Whether the cgroup is cgroup v2 for `c`.
    pub fn is_v2(&self, c: Controller) -> bool {
        matches!(self.place(c), Some(Place::V2(_)))
    }

    /// The directories created (deepest last), for the janitor.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    fn place(&self, c: Controller) -> Option<&Place> {
        self.places.iter().find(|(k, _)| *k == c).map(|(_, p)| p)
    }

    fn dir(&self, c: Controller) -> Option<&Path> {
        self.place(c).map(|p| match p {
            Place::V1(d) | Place::V2(d) => d.as_path(),
        })
    }

    /// Writes `value` to controller `c`'s `file`.
    fn write(&self, c: Controller, file: &str, value: &str) -> io::Result<()> {
        let dir = self.dir(c).ok_or(io::ErrorKind::NotFound)?;
        fs::write(dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}/{file}: {e}", dir.display())))
    }

    /// Caps memory at `bytes`, swap included; on v2, an OOM kill takes
    /// the whole group.
    pub fn set_memory(&self, bytes: u64) -> io::Result<()> {
        let c = Controller::Memory;
        if self.is_v2(c) {
            self.write(c, "memory.max", &bytes.to_string())?;
            let _ = self.write(c, "memory.swap.max", "0");
            let _ = self.write(c, "memory.oom.group", "1");
        } else {
            self.write(c, "memory.limit_in_bytes", &bytes.to_string())?;
            // Absent without swap accounting; then there is nothing to cap.
            let _ = self.write(c, "memory.memsw.limit_in_bytes", &bytes.to_string());
        }
        Ok(())
    }

    pub fn set_pids(&self, max: u64) -> io::Result<()> {
        self.write(Controller::Pids, "pids.max", &max.to_string())
    }

    /// A CPU bandwidth quota of `cpus` CPUs per 100 ms period.
    pub fn set_cpus(&self, cpus: f64) -> io::Result<()> {
        const PERIOD_US: u64 = 100_000;
        let quota = ((cpus * PERIOD_US as f64).round() as u64).max(1000);
        let c = Controller::Cpu;
        if self.is_v2(c) {
            self.write(c, "cpu.max", &format!("{quota} {PERIOD_US}"))
        } else {
            self.write(c, "cpu.cfs_period_us", &PERIOD_US.to_string())?;
            self.write(c, "cpu.cfs_quota_us", &quota.to_string())
        }
    }

    /// The `tasks` file of every cgroup v1 directory, opened for writing,
    /// for the sandbox's init to write "0" to: a thread that moves
    /// *itself* alone skips the global threadgroup lock whose RCU grace
    /// period makes a `cgroup.procs` write cost 10–15 ms on these VMs
    /// (about 50 µs this way). Init is single-threaded, and everything it
    /// forks inherits the cgroup. Opened by us, so the kernel checks our
    /// credentials, not those of init in its user namespace.
    pub fn self_join_files(&self) -> io::Result<Vec<OwnedFd>> {
        self.dirs
            .iter()
            .filter(|d| is_v1_dir(d))
            .map(|dir| {
                fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_CLOEXEC)
                    .open(dir.join("tasks"))
                    .map(OwnedFd::from)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}/tasks: {e}", dir.display())))
            })
            .collect()
    }

    /// For the trap's workers: (the sandbox's cpu `tasks`, our own cpu
    /// `tasks`), when the cpu controller is a v1 hierarchy of its own.
    /// A worker in the guest's cpu group wakes on the guest's CPU as a
    /// peer; in another group a notification round trip costs 2–3 times
    /// as much (`--cpus=2`: 20.9 µs against 8.4 µs, same rounds). Not
    /// where cpu is mounted with cpuacct, memory or pids: the workers'
    /// time would count as the guest's, and cgroup v2 moves processes,
    /// not threads.
    pub fn worker_cpu_files(&self) -> Option<(OwnedFd, OwnedFd)> {
        let Some(Place::V1(dir)) = self.place(Controller::Cpu) else {
            return None;
        };
        let shared = self
            .places
            .iter()
            .any(|(c, p)| *c != Controller::Cpu && matches!(p, Place::V1(d) if d == dir));
        if shared {
            return None;
        }
        let open = |d: &Path| {
            fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(d.join("tasks"))
                .map(OwnedFd::from)
                .ok()
        };
        Some((open(dir)?, open(dir.parent()?)?))
    }

    /// Moves process `pid` (the sandbox's init, before it forks
    /// anything) into every directory that has no `tasks` file (cgroup
    /// v2; init joins the v1 ones itself: [`SandboxCgroup::self_join_files`]).
    pub fn join(&self, pid: i32) -> io::Result<()> {
        for dir in self.dirs.iter().filter(|d| !is_v1_dir(d)) {
            fs::write(dir.join("cgroup.procs"), pid.to_string())
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        }
        Ok(())
    }

    /// Opens the counters the watchdog and the report read.
    pub fn counters(&self) -> Counters {
        let open = |c: Controller, v1: &str, v2: &str| {
            let file = if self.is_v2(c) { v2 } else { v1 };
            self.dir(c).and_then(|d| fs::File::open(d.join(file)).ok())
        };
        Counters {
            memory_events: open(Controller::Memory, "memory.oom_control", "memory.events"),
            memory_usage: open(
                Controller::Memory,
                "memory.usage_in_bytes",
                "memory.current",
            ),
            memory_stat: open(Controller::Memory, "memory.stat", "memory.stat"),
            memory_peak: open(
                Controller::Memory,
                "memory.max_usage_in_bytes",
                "memory.peak",
            ),
            pids_events: open(Controller::Pids, "pids.events", "pids.events"),
            cpu_usage: open(Controller::CpuAcct, "cpuacct.usage", "cpu.stat"),
            cpu_split: open(Controller::CpuAcct, "cpuacct.stat", "cpu.stat"),
            cpu_usage_v2: self.is_v2(Controller::CpuAcct),
        }
    }

    /// Kills what is left and removes every directory.
    pub fn remove(self) {
        remove_tree(&self.dirs);
    }
}

/// How long a removal waits in all for the members of the directories
/// to leave. A killed process leaves its cgroups late in its exit, after
/// its memory and namespaces are torn down (a sandbox's init: its mount
/// namespace), which a loaded machine can stretch past a second; a
/// directory given up on stays behind for good.
const REMOVAL_BOUND: Duration = Duration::from_secs(10);

/// Kills every process in `dirs` and removes them, retrying while the
/// kernel finishes the kills (a directory with members cannot go).
pub fn remove_tree(dirs: &[PathBuf]) {
    remove_tree_sparing(dirs, None, REMOVAL_BOUND);
}

/// [`remove_tree`], never signalling process `spare` either: the janitor
/// spares the supervisor, whose trap worker may still be leaving the
/// sandbox's cpu group (`worker_cpu_files`) while the supervisor exits.
/// Retries while a directory is busy (members still leaving), for at most
/// `bound` in all; any other error ends the wait for that directory.
pub fn remove_tree_sparing(dirs: &[PathBuf], spare: Option<i32>, bound: Duration) {
    let end = Instant::now() + bound;
    for dir in dirs.iter().rev() {
        // unlinkat, not rmdir: the supervisor's own filter allows it.
        while let Err(Errno::EBUSY | Errno::EINTR) = unlinkat(None, dir, UnlinkatFlags::RemoveDir) {
            if Instant::now() >= end {
                break;
            }
            kill_members(dir, spare);
            evict_own_threads(dir);
            thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Kills the processes in `dir`, never this one (a trap worker may
/// still be leaving the sandbox's cpu group: `worker_cpu_files`) nor
/// `spare`.
fn kill_members(dir: &Path, spare: Option<i32>) {
    let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let me = std::process::id() as i32;
    let others = procs.lines().filter_map(|l| l.trim().parse::<i32>().ok());
    for pid in others.filter(|&pid| pid != me && Some(pid) != spare) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Moves this process's threads still in v1 `dir` (a trap worker that
/// was blocked in a guest's call when the guest died, and so never left
/// the sandbox's cpu group: `worker_cpu_files`) up into the parent
/// group, so that `dir` can be removed. A v1 `tasks` write moves the one
/// thread named. Nothing to do in v2, where threads do not move alone.
fn evict_own_threads(dir: &Path) {
    let Some(parent) = dir.parent().filter(|_| is_v1_dir(dir)) else {
        return;
    };
    let tasks = fs::read_to_string(dir.join("tasks")).unwrap_or_default();
    let ours = tasks
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|tid| Path::new(&format!("/proc/self/task/{tid}")).exists());
    for tid in ours {
        let _ = fs::write(parent.join("tasks"), tid.to_string());
    }
}

/// Whether `dir` is a cgroup v1 directory: only v1 has a `tasks` file.
fn is_v1_dir(dir: &Path) -> bool {
    dir.join("tasks").exists()
}

#[cfg(test)]
mod tests;
