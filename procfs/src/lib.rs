//! What the guest sees of /proc, /sys and its limits, in one place.
//!
//! The sandbox's `/proc` is the kernel's procfs of its own pid namespace;
//! the files of it that would tell the guest of the host (its memory,
//! CPUs, load, uptime, boot, mounts, sockets, counters and sizes) or hide
//! the guest's limits are served rewritten, as a machine of the
//! sandbox's own would show them. Its `/sys` holds only the CPUs the
//! guest may use.
//!
//! Owns:
//! - the limits the guest is told of: [`GuestView`] (from the run's own
//!   limits, or from limits enforced outside it, read from their cgroup:
//!   `outside.rs`) turned into the [`GuestLimits`] the files are served
//!   under (`limits.rs`);
//! - recognising a served file by what was opened and serving it
//!   (`served.rs`), in a sealed memfd (`sealed.rs`) or, for a file a
//!   rewind rewrites, one the guest cannot write (`in_place.rs`), and
//!   again for a reader that rewinds (`rewound.rs`); the texts
//!   (`texts.rs` picks and feeds the renderer: `limit_texts.rs` for
//!   meminfo, with `cgroup_memory.rs` reading the cgroup's memory.stat, and
//!   cpuinfo, `mount_tables.rs`, `masked.rs`, `stat.rs` for
//!   /proc/stat, vmstat and uptime, `stat_line.rs` for a task's `stat`
//!   line, read by every crate above this one, `tasks.rs` for the census of the
//!   sandbox's tasks, loadavg and status, `guest_ids.rs` for the ids
//!   of status and loginuid, `timens_autogroup.rs`, `net.rs`
//!   for /proc/net and `sockstat.rs` for its sockets' count, `proc_sys.rs` for /proc/sys), reading the view's
//!   procfs as a directory (`view_dir.rs`), naming and reopening the
//!   supervisor's own descriptors (`own_fds.rs`), and the direct route of
//!   a read by a clean path under /proc (`direct.rs`);
//! - what the view's /proc mount hides or protects: the covers of global
//!   files, the masked directories, the read-only parts (`covers.rs`);
//!   and the Landlock fence's grants, which keep the guest's own read
//!   opens off the kernel's procfs (`fence.rs`);
//! - the /sys CPU layout and writing it (`sys_cpu.rs`).
//!
//! Does not own: the calls that reach these files (open, lseek's rewind,
//! sysinfo(2), sched_getaffinity: the `sandbox-syscalls` handlers, which
//! lend a [`Scope`] of their `Context` for each); making the mounts and
//! the Landlock rules, and enforcing the limits (the engine,
//! `sandbox-engine`). The crate sits below both: it depends on `vfs`
//! (the view's resolver, its raw path calls) and `netstack` (the
//! sockets /proc/net lists) only, so the handlers and the engine each
//! use it without a cycle. Its host calls are `vfs::sys`'s and nix's: it
//! has no `unsafe` of its own. Mounting /proc stays a step of the
//! engine's launch (`launch/proc_mount.rs`), beside every other mount of
//! the view, with the host-call wrappers and order of steps it needs.
//!
//! The public interface, below, is all either side uses; the modules are
//! private.

mod cgroup_memory;
pub use cgroup_memory::CgroupMemory;
mod covers;
mod direct;
mod fence;
mod guest_ids;
mod in_place;
mod limit_texts;
mod limits;
mod masked;
mod mount_tables;
mod net;
mod outside;
mod own_fds;
mod proc_sys;
mod rewound;
mod sealed;
mod served;
mod sockstat;
mod stat;
mod stat_line;
mod sys_cpu;
mod tasks;
mod texts;
mod timens_autogroup;
mod view_dir;

// The engine's interface: the limits it tells the guest of, the /proc
// mount's covers, masks and read-only parts, the fence's grants, the
// /sys CPU layout, the origin of the sandbox's clocks.
pub use covers::{proc_covers, wants_cover, Limited, MASKED_PROC_DIRS, READ_ONLY_PROC};
pub use fence::granted as fence_grants;
pub use limits::{guest_cpus, GuestLimits, GuestView, Reading, TextReading};
pub use outside::{cpus_reader, view_of, OutsideCgroup, OutsideLimits};
pub use stat::{clock_origin_secs, start_secs, CLOCK_LEAD_SECS};
// Every crate's (and the tests') reader of a task's `stat` line.
pub use stat_line::StatLine;
pub use sys_cpu::{write_sys_cpu, SysCpu};

// The handlers' interface (the `sandbox-syscalls` crate): what is served,
// the fence's checks, the census their calls answer from.
pub use direct::{direct_rel, Direct};
pub use fence::Fence;
pub use own_fds::reopen as reopen_own_fd;
pub use rewound::{changes, refreshed, rewritten};
pub use sealed::sealed_file;
pub use served::{
    substitute, synthetic_direct, synthetic_file, synthetic_unopened, ProcFile, Scope, Synthetic,
};
pub use tasks::{fd_name, Named};
pub use texts::{sandbox_tasks, warm, with_view_proc};
