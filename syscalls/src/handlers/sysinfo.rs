//! What the guest sees of its own limits (memory and CPUs), and the
//! serving of every rewritten /proc file (these, the mount tables of
//! `mounttab.rs`, and the sandbox's own global and masked files of
//! `procfiles.rs`).
//!
//! Owns: [`GuestLimits`] (set by the supervisor with
//! [`Context::set_limits`]); recognising the files served rewritten and
//! serving them (the text in a sealed, read-only memfd): `/proc/meminfo`
//! and `/proc/cpuinfo` when a limit is set, the mount tables, the
//! kernel's command line (empty), `/proc/stat`, `vmstat`, `uptime`,
//! `loadavg` and the boot id (the sandbox's), every `status` under a cpu
//! limit, and the `MASKED` files (empty); and `sched_getaffinity` for
//! the caller itself (its real mask, cut to the first N CPUs). Does not
//! own: enforcing the limits (cgroups, in the supervisor), the texts of
//! `procfiles.rs` and `mounttab.rs`, or `/sys/devices/system/cpu`, which
//! the view holds as plain files (`launch/plan.rs`).
//!
//! The files are recognised by what was opened, not by the guest's
//! spelling of the path (`/proc/./meminfo`, a symlink, a dirfd on
//! `/proc`, `/proc/self/fd/N` of an `O_PATH` descriptor): meminfo and
//! cpuinfo by the (device, inode) `set_limits` looks up once; the rest,
//! on the view's procfs device, by the path the kernel gives the
//! descriptor.

use std::ffi::CStr;
use std::fmt;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::stat::{fchmod, Mode};
use vfs::resolve::flags::IN_ROOT;
use vfs::Resolver;

use super::mounttab::{self, Table};
use super::procfiles::{self, Baseline, PerProcess};
use super::Context;

/// What the guest is told about its limits. The default (no limits)
/// changes nothing: the guest sees the host.
#[derive(Default)]
pub struct GuestLimits {
    /// Memory limit in bytes (MemTotal in /proc/meminfo), if any.
    pub memory_limit: Option<u64>,
    /// Bytes the sandbox uses now (for MemFree/MemAvailable), read at each open of /proc/meminfo.
    pub memory_usage: Option<Box<dyn Fn() -> Option<u64> + Send + Sync>>,
    /// How many CPUs the guest may use (ceil of --cpus, at most the host's), if limited.
    pub cpus: Option<usize>,
}

impl fmt::Debug for GuestLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuestLimits")
            .field("memory_limit", &self.memory_limit)
            .field("memory_usage", &self.memory_usage.as_ref().map(|_| "Fn"))
            .field("cpus", &self.cpus)
            .finish()
    }
}

impl Context {
    /// Tell the guest about its limits from now on. Call it before the
    /// context serves any call. Looks up the view's `/proc/meminfo` and
    /// `/proc/cpuinfo` (when a memory or cpu limit is set) to recognise
    /// opens of them.
    pub fn set_limits(&mut self, limits: GuestLimits) {
        let files = &mut self.synthetic.files;
        files.retain(|f| !matches!(f.1, ProcFile::MemInfo | ProcFile::CpuInfo));
        files.extend(Synthetic::limit_files(&self.fs, &limits));
        self.synthetic.cpus = limits.cpus;
        self.limits = limits;
    }
}

/// A /proc file the guest gets rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProcFile {
    MemInfo,
    CpuInfo,
    /// A process's mount table (`mounttab.rs`), rewritten always.
    MountTable(Table),
    /// The host kernel's command line (`/proc/cmdline`): always empty,
    /// since it names the host's boot image, devices and init.
    KernelCmdline,
    /// `/proc/stat`, `/proc/loadavg`, the boot id: the sandbox's own
    /// (`procfiles.rs`).
    Stat,
    VmStat,
    Uptime,
    LoadAvg,
    BootId,
    /// A process's file rewritten under a limit (`procfiles.rs`).
    PerProcess(PerProcess),
    /// A host-wide file nobody in a sandbox needs, which tells of the
    /// host (its kernel, devices, memory, keys, timers): read as empty.
    Masked,
}

/// Files of the view's procfs that read as empty (as runc's and docker's
/// `maskedPaths` do, and more: the host's devices and memory layout).
/// Directories of host facts are masked by the view (`launch/view.rs`).
const MASKED: &[&str] = &[
    "/proc/kcore",
    "/proc/keys",
    "/proc/key-users",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/kallsyms",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/kpagecgroup",
    "/proc/config.gz",
    "/proc/iomem",
    "/proc/ioports",
    "/proc/partitions",
    "/proc/diskstats",
    "/proc/interrupts",
    "/proc/softirqs",
    "/proc/zoneinfo",
    "/proc/buddyinfo",
    "/proc/pagetypeinfo",
    "/proc/vmallocinfo",
    "/proc/slabinfo",
    "/proc/consoles",
    "/proc/latency_stats",
];

/// The (st_dev, st_ino) of the view's /proc files to rewrite, and the
/// device of the view's procfs (whose mount tables are rewritten).
#[derive(Debug, Default)]
pub(crate) struct Synthetic {
    files: Vec<((u64, u64), ProcFile)>,
    proc_dev: Option<u64>,
    /// The cpu limit, for the per-process files cut to it.
    cpus: Option<usize>,
    /// What /proc/stat and the boot id are relative to.
    baseline: Baseline,
}

impl Synthetic {
    /// What is rewritten whatever the limits: the view's mount tables,
    /// the kernel's command line, the sandbox's own global files and the
    /// masked ones, all found by the path the kernel gives a descriptor
    /// of the view's procfs (no spelling of the guest's changes it).
    pub(crate) fn always(fs: &Resolver) -> Synthetic {
        let read = |path: &CStr| read_view(fs, path).ok();
        let baseline = Baseline::new(
            read(c"/proc/stat").unwrap_or_default(),
            read(c"/proc/vmstat").unwrap_or_default(),
            read(c"/proc/sys/kernel/random/uuid").unwrap_or_default(),
            &read(c"/proc/1/stat").unwrap_or_default(),
        );
        Synthetic {
            files: Vec::new(),
            proc_dev: identity(fs, c"/proc").map(|(dev, _)| dev),
            cpus: None,
            baseline,
        }
    }

    /// The view's files rewritten under `limits`.
    fn limit_files(fs: &Resolver, limits: &GuestLimits) -> Vec<((u64, u64), ProcFile)> {
        let wanted = [
            (
                c"/proc/meminfo",
                ProcFile::MemInfo,
                limits.memory_limit.is_some(),
            ),
            (c"/proc/cpuinfo", ProcFile::CpuInfo, limits.cpus.is_some()),
        ];
        wanted
            .into_iter()
            .filter(|w| w.2)
            .filter_map(|(path, kind, _)| Some((identity(fs, path)?, kind)))
            .collect()
    }

    /// The sandbox's uptime in seconds now.
    pub(crate) fn uptime(&self) -> f64 {
        self.baseline.uptime(boottime())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.proc_dev.is_none()
    }

    /// Whether `fd` is one of the files served synthetic.
    pub(crate) fn serves(&self, fd: &OwnedFd) -> bool {
        self.which(fd).is_some()
    }

    fn which(&self, fd: &OwnedFd) -> Option<ProcFile> {
        let st = vfs::sys::fstat(fd.as_fd()).ok()?;
        let id = (st.st_dev, st.st_ino);
        if let Some(f) = self.files.iter().find(|f| f.0 == id) {
            return Some(f.1);
        }
        if self.proc_dev != Some(st.st_dev) {
            return None;
        }
        let path = procfiles::fd_name(fd)?;
        if let Some(kind) = global_file(&path) {
            return Some(kind);
        }
        let name = procfiles::per_process_name(&path)?;
        match name {
            "mountinfo" => Some(ProcFile::MountTable(Table::MountInfo)),
            "mounts" => Some(ProcFile::MountTable(Table::Mounts)),
            "status" if self.cpus.is_some() => Some(ProcFile::PerProcess(PerProcess::Status)),
            _ => None,
        }
    }
}

/// The view's global procfs file at `path` (as the kernel names it), if
/// it is served.
fn global_file(path: &str) -> Option<ProcFile> {
    match path {
        "/proc/cmdline" => Some(ProcFile::KernelCmdline),
        "/proc/stat" => Some(ProcFile::Stat),
        "/proc/vmstat" => Some(ProcFile::VmStat),
        "/proc/uptime" => Some(ProcFile::Uptime),
        "/proc/loadavg" => Some(ProcFile::LoadAvg),
        "/proc/sys/kernel/random/boot_id" => Some(ProcFile::BootId),
        p if MASKED.contains(&p) => Some(ProcFile::Masked),
        _ => None,
    }
}

fn identity(fs: &Resolver, path: &CStr) -> Option<(u64, u64)> {
    let flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    let fd = vfs::sys::openat2(fs.root(), path, flags, 0, IN_ROOT).ok()?;
    let st = vfs::sys::fstat(fd.as_fd()).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// The open handler's last step: `fd`, just opened for the guest with
/// `flags`, or the synthetic file in its place when `fd` is one of the
/// files to rewrite and was opened to be read.
pub(crate) fn substitute(ctx: &Context, fd: OwnedFd, flags: i32) -> Result<OwnedFd, Errno> {
    if flags & (libc::O_ACCMODE | libc::O_PATH) != libc::O_RDONLY {
        return Ok(fd);
    }
    let Some(kind) = ctx.synthetic.which(&fd) else {
        return Ok(fd);
    };
    let host = match kind {
        ProcFile::KernelCmdline | ProcFile::LoadAvg | ProcFile::BootId | ProcFile::Masked => {
            String::new()
        }
        // The sandbox's uptime counts its CPUs' idle time in /proc/stat.
        ProcFile::Uptime => read_view(&ctx.fs, c"/proc/stat")?,
        _ => read_all(fd)?,
    };
    let census = || view_census(&ctx.fs);
    let base = &ctx.synthetic.baseline;
    let text = match (kind, &ctx.limits) {
        (
            ProcFile::MemInfo,
            GuestLimits {
                memory_limit: Some(limit),
                memory_usage,
                ..
            },
        ) => {
            let usage = memory_usage.as_ref().and_then(|f| f());
            meminfo(&host, *limit, usage)
        }
        (ProcFile::CpuInfo, GuestLimits { cpus: Some(n), .. }) => cpuinfo(&host, *n),
        (ProcFile::MountTable(table), _) => mounttab::rewrite(table, &host),
        (ProcFile::KernelCmdline, _) => "\n".to_owned(),
        (ProcFile::Stat, limits) => {
            let btime = base.btime(boottime());
            procfiles::stat(&host, base, limits.cpus, &census(), btime)
        }
        (ProcFile::VmStat, _) => procfiles::vmstat(&host, base),
        (ProcFile::Uptime, limits) => {
            let stat = procfiles::stat(&host, base, limits.cpus, &census(), 0);
            procfiles::uptime(base, boottime(), &stat)
        }
        (ProcFile::LoadAvg, _) => procfiles::loadavg(&census()),
        (ProcFile::BootId, _) => base.boot_id.clone(),
        (ProcFile::PerProcess(PerProcess::Status), GuestLimits { cpus: Some(n), .. }) => {
            procfiles::status(&host, *n)
        }
        (ProcFile::Masked, _) => String::new(),
        _ => host,
    };
    sealed_file(kind, text.as_bytes(), flags & libc::O_NONBLOCK)
}

/// The text of the view's file at `path`.
fn read_view(fs: &Resolver, path: &CStr) -> Result<String, Errno> {
    let flags = (libc::O_RDONLY | libc::O_CLOEXEC) as u64;
    read_all(vfs::sys::openat2(fs.root(), path, flags, 0, IN_ROOT)?)
}

/// The host's CLOCK_BOOTTIME now, in seconds (the supervisor lives in
/// the host's time namespace).
fn boottime() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map_or(0.0, |t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
}

/// The sandbox's tasks, counted in the view's procfs.
pub(crate) fn view_census(fs: &Resolver) -> procfiles::Census {
    let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    let Ok(proc) = vfs::sys::openat2(fs.root(), c"/proc", flags, 0, IN_ROOT) else {
        return procfiles::Census::default();
    };
    let path = vfs::sys::ProcFd::new(proc.as_fd());
    let path = std::ffi::OsStr::from_bytes(path.as_cstr().to_bytes());
    procfiles::census(std::path::Path::new(path))
}

fn read_all(fd: OwnedFd) -> Result<String, Errno> {
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .read_to_end(&mut bytes)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A memfd holding `data`, mode 0444 and sealed against any change,
/// reopened read-only (a fresh open file description at offset 0).
fn sealed_file(kind: ProcFile, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
    let name = match kind {
        ProcFile::MemInfo => c"meminfo",
        ProcFile::CpuInfo => c"cpuinfo",
        ProcFile::MountTable(Table::MountInfo) => c"mountinfo",
        ProcFile::MountTable(Table::Mounts) => c"mounts",
        ProcFile::KernelCmdline => c"cmdline",
        ProcFile::Stat => c"stat",
        ProcFile::VmStat => c"vmstat",
        ProcFile::Uptime => c"uptime",
        ProcFile::LoadAvg => c"loadavg",
        ProcFile::BootId => c"boot_id",
        ProcFile::PerProcess(PerProcess::Status) => c"status",
        ProcFile::Masked => c"masked",
    };
    let flags = MemFdCreateFlag::MFD_CLOEXEC | MemFdCreateFlag::MFD_ALLOW_SEALING;
    let mem = memfd_create(name, flags)?;
    let mut rest = data;
    while !rest.is_empty() {
        match nix::unistd::write(&mem, rest) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => rest = &rest[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    fchmod(mem.as_raw_fd(), Mode::from_bits_truncate(0o444))?;
    let seals = SealFlag::F_SEAL_SEAL
        | SealFlag::F_SEAL_SHRINK
        | SealFlag::F_SEAL_GROW
        | SealFlag::F_SEAL_WRITE;
    fcntl(mem.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals))?;
    let path = vfs::sys::ProcFd::new(mem.as_fd());
    let path = std::ffi::OsStr::from_bytes(path.as_cstr().to_bytes());
    OpenOptions::new()
        .read(true)
        .custom_flags(extra)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}

// ---- The rewritten text. ------------------------------------------------------

/// Lines of /proc/meminfo that are sizes of address space or of a page,
/// not amounts of memory: kept as the host has them.
const MEMINFO_KEPT: &[&str] = &["VmallocTotal", "VmallocChunk", "Hugepagesize"];
/// What free(1) adds up as buff/cache.
const MEMINFO_CACHE: &[&str] = &["Buffers", "Cached", "SReclaimable"];
/// Swap the guest is not told about.
const MEMINFO_ZERO: &[&str] = &["SwapTotal", "SwapFree", "SwapCached", "Zswap", "Zswapped"];

/// The host's /proc/meminfo for a guest limited to `limit` bytes (at most
/// the host's MemTotal) that uses `usage` bytes now: MemTotal is the
/// limit, MemFree and MemAvailable what is left of it (without a usage,
/// the host's figures capped at the limit), swap 0, buffers and caches
/// within the memory in use, and no other amount above MemTotal. Lines in
/// other units (HugePages_*) are kept.
pub(crate) fn meminfo(host: &str, limit: u64, usage: Option<u64>) -> String {
    let field = |key: &str| {
        host.lines()
            .find_map(|l| kb_line(l).filter(|(k, _)| *k == key).map(|(_, v)| v))
    };
    let total = match field("MemTotal") {
        Some(host_total) => (limit / 1024).min(host_total),
        None => limit / 1024,
    };
    let free = usage.map(|u| limit.saturating_sub(u) / 1024);
    let free_now = free.or(field("MemFree")).unwrap_or(0).min(total);
    // What free(1) shows as buff/cache fits in the memory in use.
    let mut cache_left = total - free_now;
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        match kb_line(line) {
            Some((key, v)) => {
                let v = match key {
                    "MemTotal" => total,
                    "MemFree" | "MemAvailable" => free.unwrap_or(v).min(total),
                    k if MEMINFO_CACHE.contains(&k) => {
                        let v = v.min(cache_left);
                        cache_left -= v;
                        v
                    }
                    k if MEMINFO_ZERO.contains(&k) => 0,
                    k if MEMINFO_KEPT.contains(&k) => v,
                    _ => v.min(total),
                };
                // The kernel's format: the label padded to 16, the value to 8.
                let label = format!("{key}:");
                out.push_str(&format!("{label:<15} {v:>8} kB\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// `Key:   1234 kB` as ("Key", 1234).
fn kb_line(line: &str) -> Option<(&str, u64)> {
    let (key, rest) = line.split_once(':')?;
    let v = rest.trim().strip_suffix(" kB")?.trim().parse().ok()?;
    Some((key, v))
}

/// The host's /proc/cpuinfo with its first `n` processors only,
/// numbered 0..n-1, each counting at most `n` siblings and cores.
pub(crate) fn cpuinfo(host: &str, n: usize) -> String {
    let mut out = String::with_capacity(host.len());
    let blocks = host
        .split("\n\n")
        .filter(|b| b.trim_start().starts_with("processor"));
    for (i, block) in blocks.take(n).enumerate() {
        for line in block.trim_start_matches('\n').lines() {
            let key = line.split(':').next().unwrap_or("").trim_end();
            let capped = |line: &str| match line.split_once(':') {
                Some((k, v)) => match v.trim().parse::<usize>() {
                    Ok(x) => format!("{k}: {}", x.min(n)),
                    Err(_) => line.to_string(),
                },
                None => line.to_string(),
            };
            match key {
                "processor" => out.push_str(&format!("processor\t: {i}")),
                "siblings" | "cpu cores" => out.push_str(&capped(line)),
                _ => out.push_str(line),
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_MEMINFO: &str = "MemTotal:       24684096 kB\n\
MemFree:        23875036 kB\n\
MemAvailable:   24275744 kB\n\
Buffers:            4808 kB\n\
Cached:           527128 kB\n\
SwapCached:            0 kB\n\
SwapTotal:       8388604 kB\n\
SwapFree:        8388604 kB\n\
CommitLimit:    20730652 kB\n\
VmallocTotal:   34359738367 kB\n\
HugePages_Total:       0\n\
Hugepagesize:       2048 kB\n\
DirectMap2M:    25165824 kB\n";

    #[test]
    fn meminfo_is_cut_to_the_limit() {
        let m = meminfo(HOST_MEMINFO, 512 << 20, Some(100 << 20));
        let want = "MemTotal:         524288 kB\n\
MemFree:          421888 kB\n\
MemAvailable:     421888 kB\n\
Buffers:            4808 kB\n\
Cached:            97592 kB\n\
SwapCached:            0 kB\n\
SwapTotal:             0 kB\n\
SwapFree:              0 kB\n\
CommitLimit:      524288 kB\n\
VmallocTotal:   34359738367 kB\n\
HugePages_Total:       0\n\
Hugepagesize:       2048 kB\n\
DirectMap2M:      524288 kB\n";
        assert_eq!(m, want);
        // Usage above the limit: nothing free. No usage: the host's, capped.
        assert!(
            meminfo(HOST_MEMINFO, 1 << 20, Some(2 << 20)).contains("MemFree:               0 kB\n")
        );
        let m = meminfo(HOST_MEMINFO, 1 << 40, None);
        assert!(
            m.starts_with("MemTotal:       24684096 kB\nMemFree:        23875036 kB\n"),
            "{m}"
        );
        // The host's real file keeps its shape.
        let real = std::fs::read_to_string("/proc/meminfo").unwrap();
        let m = meminfo(&real, 1 << 30, Some(0));
        assert_eq!(m.lines().count(), real.lines().count());
        assert!(m.starts_with("MemTotal:        1048576 kB\n"), "{m}");
        // ... in the kernel's format: unchanged lines stay byte for byte.
        let m = meminfo(&real, u64::MAX, None);
        for (a, b) in m.lines().zip(real.lines()) {
            let total = real.lines().next().and_then(kb_line).map_or(0, |(_, v)| v);
            let kept = kb_line(b).is_none_or(|(k, v)| {
                v <= total && !MEMINFO_ZERO.contains(&k) && !MEMINFO_CACHE.contains(&k)
            });
            if kept {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn cpuinfo_keeps_the_first_processors() {
        let host = "processor\t: 0\nsiblings\t: 4\ncpu cores\t: 2\nflags\t\t: fpu\n\n\
processor\t: 1\nsiblings\t: 4\n\nprocessor\t: 5\nsiblings\t: 4\n\n";
        assert_eq!(
            cpuinfo(host, 1),
            "processor\t: 0\nsiblings\t: 1\ncpu cores\t: 1\nflags\t\t: fpu\n\n"
        );
        let two = cpuinfo(host, 2);
        assert!(two.ends_with("processor\t: 1\nsiblings\t: 2\n\n"), "{two}");
        assert_eq!(cpuinfo(host, 9).matches("processor").count(), 3);
        assert!(cpuinfo(host, 9).contains("processor\t: 2\n"));
    }
}
