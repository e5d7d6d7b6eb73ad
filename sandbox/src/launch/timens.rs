//! The sandbox's clocks: a time namespace whose boot-time and monotonic
//! clocks start when init did (plus a lead of
//! `procfs::CLOCK_LEAD_SECS`: they read that at init's start), so that the kernel itself answers the
//! guest's `/proc/uptime`, `clock_gettime(CLOCK_BOOTTIME/MONOTONIC)`,
//! `sysinfo`'s uptime, the start times in `/proc/<pid>/stat` and
//! `/proc/stat`'s btime as of a machine booted with the sandbox.
//!
//! Owns: making the namespace (init's children are born in it; init
//! stays in the host's) and writing its offsets. Does not own the
//! realtime clock (namespaces cannot move it) or the served /proc files
//! (`procfs/src/`).

use nix::errno::Errno;
use nix::sched::{unshare, CloneFlags};
use nix::time::{clock_gettime, ClockId};

/// Makes the time namespace init's children will be born in, with the
/// boot-time and monotonic clocks set back by the whole seconds init has
/// been up less the lead (so init's own start reads `CLOCK_LEAD_SECS`
/// and no task's start is negative).
/// Init needs CAP_SYS_ADMIN and CAP_SYS_TIME in its user namespace: call
/// it before privileges are dropped. A kernel without time namespaces
/// (EINVAL) keeps the host's clocks.
pub(super) fn fresh_clocks() -> Result<(), String> {
    match unshare(CloneFlags::from_bits_retain(libc::CLONE_NEWTIME)) {
        Ok(()) => {}
        Err(Errno::EINVAL) => return Ok(()),
        Err(e) => return Err(format!("creating a time namespace: {}", e.desc())),
    }
    let boot = clock_gettime(ClockId::CLOCK_BOOTTIME).map_err(|e| e.desc().to_owned())?;
    let mono = clock_gettime(ClockId::CLOCK_MONOTONIC).map_err(|e| e.desc().to_owned())?;
    let up = own_clock_origin().unwrap_or(boot.tv_sec());
    let offsets = offsets_text(up, boot.tv_sec(), mono.tv_sec());
    std::fs::write("/proc/self/timens_offsets", offsets)
        .map_err(|e| format!("setting the sandbox's clocks: {e}"))
}

/// `CLOCK_MONOTONIC` (1) and `CLOCK_BOOTTIME` (7) moved back by `start`
/// seconds, never below zero (the kernel refuses a negative clock).
fn offsets_text(start: i64, boot_now: i64, mono_now: i64) -> String {
    let boot = start.clamp(0, boot_now);
    let mono = start.clamp(0, mono_now);
    format!(
        "{} -{mono} 0\n{} -{boot} 0\n",
        libc::CLOCK_MONOTONIC,
        libc::CLOCK_BOOTTIME
    )
}

/// The second of boot time at which the sandbox's clocks read zero: this
/// process's start (`/proc/self/stat`'s 22nd field, in clock ticks) less
/// the lead, as the served /proc/uptime computes it.
fn own_clock_origin() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    procfs::clock_origin_secs(&stat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_never_make_a_clock_negative() {
        assert_eq!(offsets_text(100, 200, 150), "1 -100 0\n7 -100 0\n");
        assert_eq!(offsets_text(100, 200, 50), "1 -50 0\n7 -100 0\n");
        assert_eq!(offsets_text(-3, 200, 50), "1 -0 0\n7 -0 0\n");
    }

    #[test]
    fn own_clock_origin_is_in_the_past() {
        let start = own_clock_origin().expect("own start");
        let boot = clock_gettime(ClockId::CLOCK_BOOTTIME).unwrap().tv_sec();
        assert!((0..=boot).contains(&start), "{start} vs {boot}");
    }
}
