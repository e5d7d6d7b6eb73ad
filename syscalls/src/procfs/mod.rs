//! The sandbox's /proc: the files of the kernel's procfs that would tell
//! the guest of the host (its memory, CPUs, load, uptime, boot, mounts,
//! sockets, counters and sizes) or hide the guest's limits, served
//! rewritten as a machine of the sandbox's own would show them; and the
//! limits the guest is told of ([`GuestLimits`]).
//!
//! Owns: recognising a served file by what was opened and serving it
//! (`served.rs`), in a sealed memfd (`sealed.rs`); the texts (`texts.rs`
//! picks and feeds the renderer: `limit_texts.rs` for meminfo and
//! cpuinfo, `mount_tables.rs`, `masked.rs`, `stat.rs` for /proc/stat,
//! vmstat and uptime, `tasks.rs` for the census of the sandbox's tasks,
//! loadavg and status, `timens_autogroup.rs`, `net.rs` for /proc/net,
//! `proc_sys.rs` for /proc/sys), reading the view's procfs as a directory
//! (`view_dir.rs`); which global files the view covers and with what
//! (`covers.rs`); and the Landlock fence's grants, which keep the guest's
//! own read opens off the kernel's procfs (`fence.rs`).
//!
//! Does not own: the calls that reach these files (open, lseek's rewind,
//! sysinfo(2), sched_getaffinity: [`crate::handlers`], through the
//! crate-internal interface below); mounting the view's procfs and
//! covers, making the Landlock rules, the `/sys/devices/system/cpu` files
//! and enforcing the limits (the supervisor, through the public one).
//!
//! Public interface, the supervisor's: [`GuestLimits`]
//! ([`crate::Context::set_limits`]); the covers ([`proc_covers`] under
//! [`Limited`], [`covered_when_fenced`]); the fence's grants
//! ([`fence_grants`]); the origin of the sandbox's clocks
//! ([`clock_origin_secs`]).

mod covers;
mod fence;
mod limit_texts;
mod limits;
mod masked;
mod mount_tables;
mod net;
mod proc_sys;
mod sealed;
mod served;
mod stat;
mod tasks;
mod texts;
mod timens_autogroup;
mod view_dir;

pub use covers::{covered_when_fenced, proc_covers, Limited};
pub use fence::granted as fence_grants;
pub use limits::GuestLimits;
pub use stat::{clock_origin_secs, start_secs, CLOCK_LEAD_SECS};

// The handlers' interface.
pub(crate) use fence::Fence;
#[cfg(test)]
pub(crate) use sealed::sealed_file;
pub(crate) use served::{changes, refreshed, substitute, synthetic_file, ProcFile, Synthetic};
pub(crate) use tasks::{fd_name, task_count, Named};
pub(crate) use texts::with_view_proc;
