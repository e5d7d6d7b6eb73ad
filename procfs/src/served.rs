//! Recognising and serving every rewritten /proc file.
//!
//! Owns: which files the view's limits ([`Synthetic::set_limits`]), the
//! guest's ids ([`Synthetic::set_ids`]) and the sandbox itself have
//! rewritten, recognising them at an open and serving them (the text in
//! a sealed, read-only memfd, `sealed.rs`): `/proc/meminfo` and
//! `/proc/cpuinfo` when a limit is set (`limit_texts.rs`), the mount
//! tables (`mount_tables.rs`), the kernel's command line and the masked
//! files (`masked.rs`), `/proc/stat`, `vmstat` and `uptime` (`stat.rs`),
//! `loadavg`, the boot id and every `status` under a cpu limit
//! (`tasks.rs`), every `status` and `loginuid` whose ids the guest reads
//! otherwise than the supervisor (`guest_ids.rs`), every
//! `timens_offsets` and `autogroup` (`timens_autogroup.rs`), the guest's
//! `/proc/net` socket lists (`net.rs`), and the /proc/sys
//! files of host counts and sizes (`proc_sys.rs`). Does not own: a
//! fresh copy for a reader that rewinds (`rewound.rs`), the texts (`texts.rs` picks and feeds the renderers, those
//! modules render), the limits (`limits.rs`) or enforcing them (cgroups,
//! in the supervisor), or `/sys/devices/system/cpu`, which the view
//! holds as plain files (`sys_cpu.rs`).
//!
//! The files are recognised by what was opened, not by the guest's
//! spelling of the path (`/proc/./meminfo`, a symlink, a dirfd on
//! `/proc`, `/proc/self/fd/N` of an `O_PATH` descriptor): meminfo and
//! cpuinfo by the (device, inode) `set_limits` looks up once; the rest,
//! on the view's procfs device, by the path the kernel gives the
//! descriptor.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use nix::errno::Errno;
use vfs::resolve::flags::IN_ROOT;
use vfs::Resolver;

use super::covers::read_host;
use super::direct::ProcRoot;
use super::guest_ids::{GuestIds, Inherited};
use super::in_place::InPlace;
use super::limits::GuestLimits;
use super::masked;
use super::mount_tables::Table;
use super::net::NetFile;
use super::proc_sys::{SysBaseline, SysFile};
use super::sealed::{read_all, read_record, read_view, sealed_file, LastSealed};
use super::stat::{Baseline, CpuClock, HighWater, LastUptime};
use super::tasks::{self, PerProcess, ProcessFile};
use super::texts::{boottime, host_source, text, HostText};
use super::timens_autogroup::AutogroupIds;
use super::view_dir::KeptProc;

/// What serving a file reads: the guest's view (`fs`), its sockets
/// (`net`, for `/proc/net`), what the sandbox has served so far and
/// against what (`synthetic`), and what the guest is told of its limits.
/// The syscalls crate's `Context` lends one for each serviced call.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub fs: &'a Resolver,
    pub net: &'a netstack::Stack,
    pub synthetic: &'a Synthetic,
    pub limits: &'a GuestLimits,
}

/// A /proc file the guest gets rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcFile {
    MemInfo,
    CpuInfo,
    /// A process's mount table (`mount_tables.rs`), rewritten always.
    MountTable(Table),
    /// The host kernel's command line (`/proc/cmdline`): always empty,
    /// since it names the host's boot image, devices and init.
    KernelCmdline,
    /// `/proc/stat`, `/proc/loadavg`, the boot id: the sandbox's own
    /// (`tasks.rs`).
    Stat,
    VmStat,
    Uptime,
    LoadAvg,
    BootId,
    /// A process's file rewritten under a limit (`tasks.rs`).
    PerProcess(PerProcess),
    /// A /proc/sys file of host counts or sizes (`proc_sys.rs`).
    Sys(SysFile),
    /// The guest's `/proc/net` socket lists (`net.rs`).
    Net(NetFile),
    /// A host-wide file nobody in a sandbox needs, which tells of the
    /// host (its kernel, devices, memory, keys, timers): read as empty.
    Masked,
}

impl ProcFile {
    /// The name of the memfd that serves it.
    pub(super) fn memfd_name(self) -> &'static CStr {
        match self {
            ProcFile::MemInfo => c"meminfo",
            ProcFile::CpuInfo => c"cpuinfo",
            ProcFile::MountTable(Table::MountInfo) => c"mountinfo",
            ProcFile::MountTable(Table::Mounts) => c"mounts",
            ProcFile::MountTable(Table::MountStats) => c"mountstats",
            ProcFile::KernelCmdline => c"cmdline",
            ProcFile::Stat => c"stat",
            ProcFile::VmStat => c"vmstat",
            ProcFile::Uptime => c"uptime",
            ProcFile::LoadAvg => c"loadavg",
            ProcFile::BootId => c"boot_id",
            ProcFile::PerProcess(PerProcess::Status) => c"status",
            ProcFile::PerProcess(PerProcess::Loginuid) => c"loginuid",
            ProcFile::PerProcess(PerProcess::TimensOffsets) => c"timens_offsets",
            ProcFile::PerProcess(PerProcess::Autogroup) => c"autogroup",
            ProcFile::Sys(f) => f.memfd_name(),
            ProcFile::Net(f) => f.memfd_name(),
            ProcFile::Masked => c"masked",
        }
    }
}

impl ProcFile {
    /// Whether a per-process file is of this kind (served in a memfd
    /// named for its process, `tasks::ProcessFile::memfd_name`).
    fn per_process(self) -> bool {
        matches!(self, ProcFile::PerProcess(_) | ProcFile::MountTable(_))
    }
}

/// What serving keeps open between calls: the view's procfs for the
/// census behind `/proc/stat`, `uptime` and `loadavg` (`view_dir.rs`),
/// the last text served under each memfd name (`sealed.rs`), the files
/// a rewind rewrites in place (`in_place.rs`), and the view's procfs
/// root the direct route opens beneath (`direct.rs`).
#[derive(Debug, Default)]
pub(super) struct Kept {
    pub(super) proc: KeptProc,
    sealed: LastSealed,
    pub(super) in_place: InPlace,
    /// The view's procfs root, for the direct route (`direct.rs`).
    pub(super) proc_root: ProcRoot,
}

/// The (st_dev, st_ino) of the view's /proc files to rewrite, and the
/// device of the view's procfs (whose mount tables are rewritten).
#[derive(Debug, Default)]
pub struct Synthetic {
    files: Vec<((u64, u64), ProcFile)>,
    proc_dev: Option<u64>,
    /// The device of the view's covers of global /proc files
    /// (`covers.rs`), when the view has them.
    cover_dev: Option<u64>,
    /// The cpu limit, for the per-process files cut to it.
    cpus: Option<usize>,
    /// The guest's ids where its `status` and `loginuid` read them
    /// otherwise than the supervisor's open does (`guest_ids.rs`).
    /// Boxed, as `kept`.
    pub(super) ids: Option<Box<GuestIds>>,
    /// What /proc/stat and the boot id are relative to.
    pub(super) baseline: Baseline,
    /// What /proc/sys's host counts are relative to.
    pub(super) sys_baseline: SysBaseline,
    /// The CPU counters, context switches and forks last served in
    /// /proc/stat.
    pub(super) cpu_clock: CpuClock,
    /// The last `/proc/uptime` served, and its tick.
    pub(super) last_uptime: LastUptime,
    pub(super) ctxt: HighWater,
    pub(super) processes: HighWater,
    /// The sandbox's numbers of the host's autogroups (`timens_autogroup.rs`).
    pub(super) autogroups: AutogroupIds,
    /// What is kept open between serviced calls. Boxed: the counted
    /// benches move the handlers' context, which holds this, by value.
    pub(super) kept: Box<Kept>,
    /// Set before the first served file reaches the guest: until then no
    /// descriptor in the sandbox can be one, and a rewind needs no look.
    served_any: AtomicBool,
}

impl Synthetic {
    /// What is rewritten whatever the limits: the view's mount tables,
    /// the kernel's command line, the sandbox's own global files and the
    /// masked ones, all found by the path the kernel gives a descriptor
    /// of the view's procfs (no spelling of the guest's changes it).
    pub fn always(fs: &Resolver) -> Synthetic {
        let read = |path: &CStr| read_view(fs, path).ok();
        let host = |path: &str| read_host(path).unwrap_or_default();
        let baseline = Baseline::new(
            host("/proc/vmstat"),
            read(c"/proc/sys/kernel/random/uuid").unwrap_or_default(),
            &read(c"/proc/1/stat").unwrap_or_default(),
        );
        let sys_baseline = SysBaseline {
            inode_nr: host("/proc/sys/fs/inode-nr"),
            dentry_state: host("/proc/sys/fs/dentry-state"),
        };
        let proc_dev = identity(fs, c"/proc").map(|(dev, _)| dev);
        // file-nr is covered whatever the limits and the fence.
        let cover_dev = identity(fs, c"/proc/sys/fs/file-nr")
            .map(|(dev, _)| dev)
            .filter(|dev| Some(*dev) != proc_dev);
        Synthetic {
            files: Vec::new(),
            proc_dev,
            cover_dev,
            cpus: None,
            ids: None,
            baseline,
            sys_baseline,
            cpu_clock: CpuClock::default(),
            last_uptime: LastUptime::default(),
            ctxt: HighWater::default(),
            processes: HighWater::default(),
            autogroups: AutogroupIds::default(),
            kept: Box::new(Kept {
                in_place: InPlace::new(read(c"/proc/1/uid_map").as_deref()),
                ..Kept::default()
            }),
            served_any: AtomicBool::new(false),
        }
    }

    /// The memfd serving `data` as `name`, a file of `kind`: for a file a
    /// rewind rewrites in place, one of `in_place.rs`'s where this sandbox
    /// allows it; else a sealed one (`sealed.rs`'s [`LastSealed`]: the
    /// last one made with that text, if any; but a `status`, whose text
    /// changes with every switch of its task and whose names, one per
    /// task, would push the global files' texts out of it).
    pub(super) fn sealed(
        &self,
        kind: ProcFile,
        name: &CStr,
        data: &[u8],
        extra: i32,
    ) -> Result<OwnedFd, Errno> {
        if kind.rewritten_in_place() {
            if let Some(file) = self.kept.in_place.file(name, data, extra) {
                return file;
            }
        }
        match kind {
            ProcFile::PerProcess(PerProcess::Status) => sealed_file(name, data, extra),
            _ => self.kept.sealed.file(name, data, extra),
        }
    }

    /// The device of the view's procfs, if it has one.
    pub(super) fn proc_dev(&self) -> Option<u64> {
        self.proc_dev
    }

    /// Whether any served file was ever made for the guest. Read by a
    /// rewind before it looks at the guest's descriptor: false means the
    /// descriptor is the guest's own (SeqCst, as the mark is made before
    /// the file is handed over).
    pub fn served_any(&self) -> bool {
        self.served_any.load(Ordering::SeqCst)
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

    /// Serve the files rewritten under `limits` from now on. Call it
    /// before any call is served. Looks up the view's `/proc/meminfo`
    /// and `/proc/cpuinfo` (when a memory or cpu limit is set) to
    /// recognise opens of them.
    pub fn set_limits(&mut self, fs: &Resolver, limits: &GuestLimits) {
        let files = &mut self.files;
        files.retain(|f| !matches!(f.1, ProcFile::MemInfo | ProcFile::CpuInfo));
        files.extend(Synthetic::limit_files(fs, limits));
        self.cpus = limits.cpus;
    }

    /// Serve the ids of every process's `status` and `loginuid` as the
    /// guest's user namespace, whose maps are `ids`, sees them, where
    /// they read otherwise in the supervisor's (`guest_ids.rs`). Call it
    /// before any call is served.
    pub fn set_ids(&mut self, ids: &vfs::IdMap) {
        self.ids = GuestIds::new(ids, &Inherited::own()).map(Box::new);
    }

    /// The sandbox's uptime in seconds now.
    pub fn uptime(&self) -> f64 {
        self.baseline.uptime(boottime())
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.proc_dev.is_none()
    }

    /// Which of the files served synthetic `fd` is, if any.
    fn which(&self, fd: &OwnedFd) -> Option<ProcFile> {
        let st = vfs::sys::fstat(fd.as_fd()).ok()?;
        self.which_stat(&tasks::Named::new(fd), &st)
    }

    /// Which of the files served synthetic `fd`, whose `stat` is `st`, is.
    pub fn which_stat(&self, fd: &tasks::Named<'_>, st: &libc::stat) -> Option<ProcFile> {
        if self.cover_dev == Some(st.st_dev) {
            return covered_file(fd.name()?);
        }
        let id = (st.st_dev, st.st_ino);
        if let Some(f) = self.files.iter().find(|f| f.0 == id) {
            return Some(f.1);
        }
        if self.proc_dev != Some(st.st_dev) {
            return None;
        }
        let path = fd.name()?;
        if let Some(kind) = global_file(path) {
            return Some(kind);
        }
        if let Some(file) = NetFile::at(path) {
            return Some(ProcFile::Net(file));
        }
        self.per_process(ProcessFile::at(path)?.name)
    }

    /// Whether `fd` (whose `stat` is `st`) is in the view's procfs, in
    /// a process's network directory ([`NetFile::in_net_dir`]).
    pub fn in_net_dir(&self, fd: &tasks::Named<'_>, st: &libc::stat) -> bool {
        self.proc_dev == Some(st.st_dev) && fd.name().is_some_and(NetFile::in_net_dir)
    }

    /// The served per-process file named `name` (in `/proc/<pid>`).
    pub(super) fn per_process(&self, name: &str) -> Option<ProcFile> {
        match name {
            "mountinfo" => Some(ProcFile::MountTable(Table::MountInfo)),
            "mounts" => Some(ProcFile::MountTable(Table::Mounts)),
            "mountstats" => Some(ProcFile::MountTable(Table::MountStats)),
            "status" if self.cpus.is_some() || self.ids.is_some() => {
                Some(ProcFile::PerProcess(PerProcess::Status))
            }
            "loginuid" if self.ids.is_some() => Some(ProcFile::PerProcess(PerProcess::Loginuid)),
            "timens_offsets" => Some(ProcFile::PerProcess(PerProcess::TimensOffsets)),
            "autogroup" => Some(ProcFile::PerProcess(PerProcess::Autogroup)),
            _ => None,
        }
    }

    /// Whether `fd` is one of the view's covers of a global /proc file.
    fn is_cover(&self, fd: &OwnedFd) -> bool {
        let dev = vfs::sys::fstat(fd.as_fd()).map(|st| st.st_dev);
        dev.is_ok_and(|dev| self.cover_dev == Some(dev))
    }
}

/// The served file a cover at `path` (as the kernel names it) stands
/// for: every global file, meminfo and cpuinfo too (served as the
/// host's when no limit is set).
fn covered_file(path: &str) -> Option<ProcFile> {
    match path {
        "/proc/meminfo" => Some(ProcFile::MemInfo),
        "/proc/cpuinfo" => Some(ProcFile::CpuInfo),
        p => global_file(p),
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
        p if masked::is_masked(p) => Some(ProcFile::Masked),
        p => SysFile::at(p).map(ProcFile::Sys),
    }
}

/// Whether the view's global file at `path` (as the kernel names it) is
/// served with a text that needs no open of it (`synthetic_unopened`).
pub(super) fn served_unopened(path: &str) -> bool {
    global_file(path).is_some_and(|kind| !matches!(host_source(kind), HostText::Opened))
}

/// The host's /proc/stat as first read by this process
/// ([`HostText::StatLayout`]): what every sandbox's takes its lines' order
/// and softirq count from, which are the host kernel's and the same for
/// every sandbox the process serves (a pool's too). Kept beside the
/// handlers' context rather than in it: the counted benches move that
/// context by value, and its size is in their counts.
pub(super) fn stat_layout() -> Result<String, Errno> {
    static LAYOUT: OnceLock<String> = OnceLock::new();
    if let Some(text) = LAYOUT.get() {
        return Ok(text.clone());
    }
    let text = read_host("/proc/stat")?;
    Ok(LAYOUT.get_or_init(|| text).clone())
}

/// The (device, inode) of the view's file at `path`.
pub fn identity(fs: &Resolver, path: &CStr) -> Option<(u64, u64)> {
    let flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    let fd = vfs::sys::openat2(fs.root(), path, flags, 0, IN_ROOT).ok()?;
    let st = vfs::sys::fstat(fd.as_fd()).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// The open handler's last step: `fd`, just opened for the guest with
/// `flags`, or the synthetic file in its place when `fd` is one of the
/// files to rewrite and was opened to be read.
pub fn substitute(ctx: &Scope<'_>, fd: OwnedFd, flags: i32) -> Result<OwnedFd, Errno> {
    if flags & (libc::O_ACCMODE | libc::O_PATH) != libc::O_RDONLY {
        return Ok(fd);
    }
    match ctx.synthetic.which(&fd) {
        Some(kind) => synthetic_file(ctx, fd, kind, flags),
        None => Ok(fd),
    }
}

/// The synthetic file of `kind` made without the file the guest's open
/// found (`None` when its text or its memfd's name needs that file: a
/// per-process file, or one rewritten from the host's text): the
/// sandbox's own figures (`/proc/stat`, `uptime`, `loadavg`, the boot id)
/// or an empty text. The caller has seen that the guest may read the file
/// it found (so an open of it would have succeeded) and skips that open.
pub fn synthetic_unopened(
    ctx: &Scope<'_>,
    kind: ProcFile,
    flags: i32,
) -> Option<Result<OwnedFd, Errno>> {
    let host = match host_source(kind) {
        _ if kind.per_process() => return None,
        HostText::Opened => return None,
        HostText::None => Ok(String::new()),
        HostText::StatLayout => stat_layout(),
    };
    ctx.synthetic.served_any.store(true, Ordering::SeqCst);
    Some(host.and_then(|host| {
        let text = text(ctx, kind, host);
        ctx.synthetic.sealed(
            kind,
            kind.memfd_name(),
            text.as_bytes(),
            flags & libc::O_NONBLOCK,
        )
    }))
}

/// The synthetic file of `kind` in place of `fd`, opened for the guest to
/// read with `flags` (its kind known already: [`Synthetic::which_stat`]).
pub fn synthetic_file(
    ctx: &Scope<'_>,
    fd: OwnedFd,
    kind: ProcFile,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    let cover = ctx.synthetic.is_cover(&fd);
    let name = (cover || kind.per_process())
        .then(|| tasks::fd_name(&fd))
        .flatten();
    serve_opened(ctx, fd, name.as_deref(), cover, kind, flags)
}

/// [`synthetic_file`] of a file the direct route opened (`direct.rs`):
/// its name, `name`, is known, and it is no cover (a cover is a mount,
/// which the route never crosses).
pub fn synthetic_direct(
    ctx: &Scope<'_>,
    fd: OwnedFd,
    name: &str,
    kind: ProcFile,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    serve_opened(ctx, fd, Some(name), false, kind, flags)
}

/// The synthetic file of `kind` from `fd`, the file the guest's open
/// found, which the kernel names `name` (asked only of a cover or a
/// per-process file) and which is one of the view's covers or not.
fn serve_opened(
    ctx: &Scope<'_>,
    fd: OwnedFd,
    name: Option<&str>,
    cover: bool,
    kind: ProcFile,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    ctx.synthetic.served_any.store(true, Ordering::SeqCst);
    let memfd = memfd_name(kind, name);
    let host = match host_source(kind) {
        HostText::None => String::new(),
        HostText::StatLayout => stat_layout()?,
        HostText::Opened if cover => read_host(name.ok_or(Errno::EIO)?)?,
        // A process's `status` and `loginuid` are made whole at the
        // first read (`read_record`).
        HostText::Opened
            if matches!(
                kind,
                ProcFile::PerProcess(PerProcess::Status | PerProcess::Loginuid)
            ) =>
        {
            read_record(fd)?
        }
        HostText::Opened => read_all(fd)?,
    };
    let text = text(ctx, kind, host);
    ctx.synthetic
        .sealed(kind, &memfd, text.as_bytes(), flags & libc::O_NONBLOCK)
}

/// The name of the memfd serving a file of `kind` that the kernel names
/// `name`: a per-process file's names its process, for a rewind to find
/// it again.
fn memfd_name(kind: ProcFile, name: Option<&str>) -> CString {
    let own = kind
        .per_process()
        .then(|| ProcessFile::at(name?)?.memfd_name());
    own.flatten()
        .unwrap_or_else(|| kind.memfd_name().to_owned())
}
