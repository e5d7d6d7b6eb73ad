//! The host-wide /proc files nobody in a sandbox needs, which tell of the
//! host (its kernel, devices, memory, keys, timers): they read as empty,
//! like runc's `maskedPaths`. The same holds for `/proc/cmdline`, served
//! as one empty line.
//!
//! Owns: the [`MASKED`] list and the [`CMDLINE`] text. Does not own:
//! serving the empty text (`served::substitute`), what a path stat of
//! one says (the kernel answers it, on the view's cover of the file:
//! `covers.rs`), or the directories of host facts, which the view masks
//! with empty tmpfs (`launch/view.rs`).

/// Files of the view's procfs that read as empty (as runc's and docker's
/// `maskedPaths` do, and more: the host's devices and memory layout).
/// Directories of host facts are masked by the view (`launch/view.rs`).
pub const MASKED: &[&str] = &[
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
pub fn is_masked(path: &str) -> bool {
    MASKED.contains(&path)
}

/// The text `/proc/cmdline` is served as (the host's names its boot
/// image, devices and init).
pub const CMDLINE: &str = "\n";
