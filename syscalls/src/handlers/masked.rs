//! The host-wide /proc files nobody in a sandbox needs, which tell of the
//! host (its kernel, devices, memory, keys, timers): they read as empty,
//! like runc's `maskedPaths`, and a stat of one says so (size 0, where
//! procfs gives some, such as `config.gz` or `kcore`, their host size).
//! The same holds for `/proc/cmdline`, served as one empty line.
//!
//! Owns: the [`MASKED`] list and the sizes a path stat of a served
//! procfs file reports ([`StatSizes`]). Does not own: serving the empty
//! text (`sysinfo::substitute`), or the directories of host facts, which
//! the view masks with empty tmpfs (`launch/view.rs`).

use std::ffi::CStr;
use std::sync::OnceLock;

use vfs::Resolver;

/// Files of the view's procfs that read as empty (as runc's and docker's
/// `maskedPaths` do, and more: the host's devices and memory layout).
/// Directories of host facts are masked by the view (`launch/view.rs`).
pub(crate) const MASKED: &[&str] = &[
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

/// Whether the view's procfs file at `path` (as the kernel names it) is
/// masked.
pub(crate) fn is_masked(path: &str) -> bool {
    MASKED.contains(&path)
}

/// The text `/proc/cmdline` is served as (the host's names its boot
/// image, devices and init).
pub(crate) const CMDLINE: &str = "\n";

/// The (inode, size) of each served procfs file of a fixed text, looked
/// up on the view's procfs the first time a stat needs it (a path stat of
/// a procfs file with a size, which is rare), so that start-up pays
/// nothing. `fstat` of a served descriptor needs nothing: it is the
/// memfd's own size.
#[derive(Debug, Default)]
pub(crate) struct StatSizes(OnceLock<Vec<(u64, u64)>>);

impl StatSizes {
    /// The size a stat of (`dev`, `ino`) on the view's procfs (device
    /// `proc_dev`) reports, when it is a served file whose procfs size
    /// (`size`) is not what a read gives.
    pub(crate) fn served(
        &self,
        fs: &Resolver,
        proc_dev: u64,
        dev: u64,
        ino: u64,
        size: u64,
    ) -> Option<u64> {
        if size == 0 || dev != proc_dev {
            return None;
        }
        let table = self.0.get_or_init(|| {
            let served = MASKED
                .iter()
                .map(|p| (*p, 0))
                .chain([("/proc/cmdline", CMDLINE.len() as u64)]);
            served
                .filter_map(|(path, size)| {
                    let path = std::ffi::CString::new(path).ok()?;
                    Some((inode(fs, &path, proc_dev)?, size))
                })
                .collect()
        });
        table.iter().find(|(i, _)| *i == ino).map(|(_, s)| *s)
    }
}

/// The inode of the view's file at `path`, if it is on device `dev`.
fn inode(fs: &Resolver, path: &CStr, dev: u64) -> Option<u64> {
    let (d, ino) = super::sysinfo::identity(fs, path)?;
    (d == dev).then_some(ino)
}
