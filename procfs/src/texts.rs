//! The text of each rewritten /proc file: which host text it starts from
//! (`host_source`) and what the sandbox makes of it (`text`), with the
//! sandbox-wide figures those texts need (its tasks' census and CPU time
//! in the view's procfs, the host's boot clock and MemTotal).
//!
//! Owns: choosing the renderer for a [`ProcFile`] and feeding it. Does
//! not own: recognising the files or serving the result (`served.rs`),
//! or the renderers themselves (`limit_texts.rs`, `mount_tables.rs`,
//! `masked.rs`, `stat.rs`, `tasks.rs`, `net.rs`,
//! `proc_sys.rs`).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::OnceLock;

use vfs::resolve::flags::IN_ROOT;
use vfs::Resolver;

use super::covers::read_host;
use super::limit_texts::{cpuinfo, meminfo};
use super::limits::GuestLimits;
use super::masked;
use super::mount_tables;
use super::net::{self, NetFile};
use super::proc_sys::{self, SysFile};
use super::sealed::{read_record_again, read_view};
use super::served::ProcFile;
use super::served::Scope;
use super::stat::{self, OwnCounts, USER_HZ};
use super::tasks::{self, PerProcess};
use super::timens_autogroup;
use super::view_dir::ProcDir;

/// Where the host's text a served file is made from comes from.
pub(super) enum HostText {
    /// Nowhere: the text is the sandbox's alone.
    None,
    /// The host's `/proc/stat` as first read by this process
    /// (`served::stat_layout`): only its lines' order and its softirq
    /// count are used, and neither changes while the host runs.
    StatLayout,
    /// The file the guest opened.
    Opened,
}

pub(super) fn host_source(kind: ProcFile) -> HostText {
    match kind {
        ProcFile::KernelCmdline
        | ProcFile::LoadAvg
        | ProcFile::BootId
        | ProcFile::Masked
        | ProcFile::Sys(SysFile::Tainted)
        // The sandbox's uptime counts its CPUs' idle time, as its
        // /proc/stat does, of the host's online CPUs (`online_cpus`).
        | ProcFile::Uptime => HostText::None,
        // Every figure of the sandbox's /proc/stat is its own; the host's
        // text, which the kernel makes by summing every interrupt line
        // over every CPU (about 25 µs here), gives only the lines' order.
        ProcFile::Stat => HostText::StatLayout,
        // The internet files' lines are the netstack's and their header
        // a constant (`net::inet_header`): the kernel's text, which walks
        // every bucket of the host's TCP and UDP hash tables whatever the
        // namespace (some 6 ms for `tcp` here), is not read.
        ProcFile::Net(file) if net::inet_header(file).is_some() => HostText::None,
        _ => HostText::Opened,
    }
}

/// The text served for `kind`, whose host text is `host`.
pub(super) fn text(ctx: &Scope<'_>, kind: ProcFile, host: String) -> String {
    let base = &ctx.synthetic.baseline;
    match (kind, ctx.limits) {
        (ProcFile::MemInfo, limits) if limits.memory_limit.is_some() => {
            let usage = limits.memory_usage.as_ref().and_then(|f| f());
            let cgroup = limits.cgroup_memory();
            meminfo(
                &host,
                limits.memory_limit().unwrap_or(0),
                usage,
                cgroup.as_ref(),
            )
        }
        (ProcFile::CpuInfo, limits @ GuestLimits { cpus: Some(n), .. }) => {
            cpuinfo(&host, limits.cpus_limit().unwrap_or(*n))
        }
        (ProcFile::MountTable(table), _) => mount_tables::rewrite(table, &host),
        (ProcFile::KernelCmdline, _) => masked::CMDLINE.to_owned(),
        (ProcFile::Stat, _) => sandbox_stat(ctx, &host, base.btime(boottime())),
        (ProcFile::VmStat, _) => stat::vmstat(&host, base),
        (ProcFile::Uptime, _) => uptime(ctx),
        (ProcFile::LoadAvg, _) => tasks::loadavg(&kept_census(ctx, tasks::TaskFile::Stat)),
        (ProcFile::BootId, _) => base.boot_id.clone(),
        (ProcFile::PerProcess(PerProcess::Status), limits) => status(ctx, limits, host),
        (ProcFile::PerProcess(PerProcess::Loginuid), _) => match &ctx.synthetic.ids {
            Some(ids) => ids.loginuid(&host),
            None => host,
        },
        (ProcFile::PerProcess(PerProcess::TimensOffsets), _) => {
            timens_autogroup::timens_offsets(&host)
        }
        (ProcFile::PerProcess(PerProcess::Autogroup), _) => {
            timens_autogroup::autogroup(&host, &ctx.synthetic.autogroups)
        }
        (ProcFile::Sys(file), limits) => {
            let watches = matches!(file, SysFile::EpollWatches | SysFile::InotifyWatches);
            let sizes = proc_sys::Sizes {
                memory_limit: limits.memory_limit(),
                host_memory: (watches && limits.memory_limit.is_some())
                    .then(host_memtotal)
                    .flatten(),
                pids: limits.pids_limit(),
                open_files: match file {
                    SysFile::FileNr => with_view_proc(ctx.fs, tasks::open_files).unwrap_or(0),
                    _ => 0,
                },
            };
            proc_sys::text(file, &host, &ctx.synthetic.sys_baseline, &sizes)
        }
        (ProcFile::Masked, _) => String::new(),
        (ProcFile::Net(file), _) => net_text(ctx, file, &host),
        _ => host,
    }
}

/// A process's `status`: under a cpu limit its `Cpus_allowed` cut to
/// it (`tasks::status`), and its ids as the guest's user namespace
/// sees them where they read otherwise (`guest_ids.rs`).
fn status(ctx: &Scope<'_>, limits: &GuestLimits, host: String) -> String {
    let cut = match limits.cpus {
        Some(n) => tasks::status(&host, limits.cpus_limit().unwrap_or(n)),
        None => host,
    };
    match &ctx.synthetic.ids {
        Some(ids) => ids.status(&cut),
        None => cut,
    }
}

/// A `/proc/net` list of the guest's (`net.rs`), from the netstack's
/// state now.
fn net_text(ctx: &Scope<'_>, file: NetFile, host: &str) -> String {
    if file == NetFile::Netlink {
        return net::guest_netlink(host, &net::held_sockets());
    }
    let uid_map = read_view(ctx.fs, c"/proc/1/uid_map").unwrap_or_default();
    let src = net::Sources {
        net: ctx.net,
        listing: std::fs::read_to_string(ctx.net.sockets().listing()).unwrap_or_default(),
        held: net::held_sockets(),
        uid: net::socket_owner(&uid_map, nix::unistd::geteuid().as_raw()),
        // Asked before `queues`, whose first dump makes the sock_diag
        // socket: `host` was read before it too.
        diag: file == NetFile::Sockstat && ctx.net.holds_diag(),
        queues: match file {
            NetFile::Unix => Default::default(),
            _ => ctx.net.queues(),
        },
    };
    net::text(file, host, &src)
}

/// The host's MemTotal in bytes, from the host's /proc/meminfo.
fn host_memtotal() -> Option<u64> {
    let text = read_host("/proc/meminfo").ok()?;
    let kb = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// The sandbox's /proc/stat from the host's `host`: its tasks' CPU time
/// over the CPUs it may use (`stat.rs`), their context switches, and
/// the highest pid seen in its procfs (pids go out in order from 1, so
/// that counts the tasks it made, less those that came and went between
/// two reads: the kernel tells a pid namespace's last pid only to its own
/// members), all kept monotonic.
fn sandbox_stat(ctx: &Scope<'_>, host: &str, btime: u64) -> String {
    let syn = &ctx.synthetic;
    let census = kept_census(ctx, tasks::TaskFile::Switches);
    let cpus = cpu_lines(ctx, &census);
    let own = OwnCounts {
        ctxt: syn.ctxt.raise(census.switches),
        processes: syn.processes.raise(u64::from(census.last_pid)),
    };
    stat::stat(host, &cpus, &census, &own, btime)
}

/// The sandbox's /proc/uptime now: the one made within this USER_HZ tick
/// if there is one (`stat::LastUptime` says why it is the same), else
/// from a census of its tasks' CPU time (only the idle time of its CPU
/// lines: no switches counted).
fn uptime(ctx: &Scope<'_>) -> String {
    let tick = uptime_tick(ctx);
    ctx.synthetic.last_uptime.at(tick, || {
        let census = kept_census(ctx, tasks::TaskFile::Stat);
        stat::uptime(tick, &cpu_lines_at(ctx, &census, tick))
    })
}

/// The sandbox's uptime now, in whole USER_HZ ticks.
fn uptime_tick(ctx: &Scope<'_>) -> u64 {
    (ctx.synthetic.uptime() * USER_HZ as f64) as u64
}

/// The sandbox's tasks' CPU time as the CPU lines of its /proc/stat: over
/// the CPUs it may use (without a `--cpus` limit the host's online CPUs,
/// which the host's /proc/stat lists), kept monotonic (`stat.rs`).
fn cpu_lines(ctx: &Scope<'_>, census: &tasks::Census) -> Vec<stat::CpuLine> {
    cpu_lines_at(ctx, census, uptime_tick(ctx))
}

/// [`cpu_lines`] `elapsed` USER_HZ ticks after the sandbox started.
fn cpu_lines_at(ctx: &Scope<'_>, census: &tasks::Census, elapsed: u64) -> Vec<stat::CpuLine> {
    let n = ctx.limits.cpus_limit().unwrap_or_else(online_cpus);
    let clock = &ctx.synthetic.cpu_clock;
    clock.monotonic(stat::cpu_times(n, census, elapsed))
}

/// The host's online CPUs now, at least 1: the CPUs listed in
/// `/sys/devices/system/cpu/online` (what the C library's
/// `_SC_NPROCESSORS_ONLN` counts, the mask the host's /proc/stat lists a
/// line for each CPU of), read again through a descriptor this process
/// keeps open (one `pread`, where the C library opens, reads and closes
/// it each time).
fn online_cpus() -> usize {
    static ONLINE: OnceLock<Option<OwnedFd>> = OnceLock::new();
    let fd = ONLINE.get_or_init(|| {
        let file = std::fs::File::open("/sys/devices/system/cpu/online");
        file.ok().map(OwnedFd::from)
    });
    let listed = fd
        .as_ref()
        .and_then(|fd| read_record_again(fd.as_fd()).ok())
        .map_or(0, |list| count_cpu_list(list.trim()));
    if listed > 0 {
        return listed;
    }
    use nix::unistd::{sysconf, SysconfVar};
    let n = sysconf(SysconfVar::_NPROCESSORS_ONLN).ok().flatten();
    n.and_then(|n| usize::try_from(n).ok()).unwrap_or(1).max(1)
}

/// How many CPUs the kernel's CPU list `list` (`0-3,8,10-11`) names; 0
/// when it is not one.
fn count_cpu_list(list: &str) -> usize {
    let mut count = 0;
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.parse::<usize>(), b.parse::<usize>()) {
            (Ok(a), Ok(b)) if a <= b => count += b - a + 1,
            _ => return 0,
        }
    }
    count
}

/// The host's CLOCK_BOOTTIME now, in seconds (the supervisor lives in
/// the host's time namespace).
pub(super) fn boottime() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map_or(0.0, |t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
}

/// The sandbox's tasks, counted in the view's procfs kept open
/// (`view_dir::KeptProc`), reading each task's `file`.
fn kept_census(ctx: &Scope<'_>, file: tasks::TaskFile) -> tasks::Census {
    let kept = &ctx.synthetic.kept;
    kept.proc
        .with(ctx.fs, |proc| tasks::census_reading(proc, file))
        .unwrap_or_default()
}

/// Readies, before the guest's first call, what the first served global
/// file (`/proc/stat`, `uptime`, `loadavg`) would otherwise open on the
/// guest's time: the host's /proc/stat read for its layout, the online
/// CPUs' file, the census's kept procfs root, listed once, and init's
/// files in it (whether the kernel has `schedstat` found out with them),
/// the direct route's procfs root (`direct.rs`) and this process's own
/// descriptor directory (`own_fds.rs`), which the first served /proc open
/// would otherwise open; and the memfds its first `/proc/stat` and
/// `status` opens are served in, opened ahead (`in_place.rs`). For a sandbox set up before its command is known (a pool's, a
/// session's), where it costs the set-up and not the run; a `run` would
/// spend it whether or not its guest reads any such file. Nothing it
/// does is served: the counters served stay as they were.
pub fn warm(ctx: &Scope<'_>) {
    let _ = super::served::stat_layout();
    online_cpus();
    kept_census(ctx, tasks::TaskFile::Switches);
    ctx.synthetic.warm_direct(ctx.fs);
    super::own_fds::warm();
    ctx.synthetic.kept.in_place.warm();
}

/// The sandbox's tasks, as sysinfo(2) counts them (`tasks::task_count`),
/// listed in the census's kept procfs (`view_dir::KeptProc`: a rewind and
/// the processes' entries alone, where a fresh open of the view's /proc
/// costs two opens, two closes and a listing of its ~60 named entries).
pub fn sandbox_tasks(ctx: &Scope<'_>) -> u64 {
    let kept = &ctx.synthetic.kept.proc;
    kept.with(ctx.fs, tasks::task_count)
        .or_else(|| with_view_proc(ctx.fs, tasks::task_count))
        .unwrap_or(0)
}

/// `f` of the view's procfs, as a directory descriptor.
pub fn with_view_proc<T>(fs: &Resolver, f: impl FnOnce(&ProcDir) -> T) -> Option<T> {
    let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    let proc = vfs::sys::openat2(fs.root(), c"/proc", flags, 0, IN_ROOT).ok()?;
    Some(f(&ProcDir::new(proc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_count_as_the_kernel_prints_them() {
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list("0-1"), 2);
        assert_eq!(count_cpu_list("0-3,8,10-11"), 7);
        assert_eq!(count_cpu_list(""), 0);
        assert_eq!(count_cpu_list("3-1"), 0);
        assert_eq!(count_cpu_list("x"), 0);
        let native = std::thread::available_parallelism().map_or(0, |n| n.get());
        // This process may be bound to fewer CPUs than are online.
        assert!(online_cpus() >= native, "{} < {native}", online_cpus());
    }
}
