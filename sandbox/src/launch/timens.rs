//! The sandbox's clocks: a time namespace whose boot-time and monotonic
//! clocks start when init did (plus a lead of
//! `procfs::CLOCK_LEAD_SECS`: they read that at init's start), so that the kernel itself answers the
//! guest's `/proc/uptime`, `clock_gettime(CLOCK_BOOTTIME/MONOTONIC)`,
//! `sysinfo`'s uptime, the start times in `/proc/<pid>/stat` and
//! `/proc/stat`'s btime as of a machine booted with the sandbox. A
//! sandbox given [`GuestClocks`] (a woken session's) starts its clocks
//! where those say instead, so a restored program's clocks continue
//! those of the sandbox it was saved in: monotonic never goes back.
//!
//! Owns: making the namespace (init's children are born in it, and init
//! joins it once its offsets are set) and writing its offsets. Does not own the
//! realtime clock (namespaces cannot move it) or the served /proc files
//! (`procfs/src/`).

use nix::errno::Errno;
use nix::sched::{setns, unshare, CloneFlags};
use nix::time::{clock_gettime, ClockId};

use crate::config::GuestClocks;

const NANOS: i128 = 1_000_000_000;

/// Makes the time namespace init's children will be born in, with the
/// boot-time and monotonic clocks set back by the whole seconds init has
/// been up less the lead (so init's own start reads `CLOCK_LEAD_SECS`
/// and no task's start is negative).
/// Init needs CAP_SYS_ADMIN and CAP_SYS_TIME in its user namespace: call
/// it before privileges are dropped. A kernel without time namespaces
/// (EINVAL) keeps the host's clocks. With `from`, the clocks read
/// `from`'s values now instead ([`continued_offsets`]).
pub(super) fn fresh_clocks(from: Option<GuestClocks>) -> Result<(), String> {
    match unshare(CloneFlags::from_bits_retain(libc::CLONE_NEWTIME)) {
        Ok(()) => {}
        Err(Errno::EINVAL) => return Ok(()),
        Err(e) => return Err(format!("creating a time namespace: {}", e.desc())),
    }
    let boot = clock_gettime(ClockId::CLOCK_BOOTTIME).map_err(|e| e.desc().to_owned())?;
    let mono = clock_gettime(ClockId::CLOCK_MONOTONIC).map_err(|e| e.desc().to_owned())?;
    let offsets = match from {
        Some(from) => continued_offsets(from, nanos(&mono), nanos(&boot)),
        None => {
            let up = own_clock_origin().unwrap_or(boot.tv_sec());
            offsets_text(up, boot.tv_sec(), mono.tv_sec())
        }
    };
    std::fs::write("/proc/self/timens_offsets", offsets)
        .map_err(|e| format!("setting the sandbox's clocks: {e}"))?;
    join_childrens()
}

/// Moves init into the time namespace its children are born in (the
/// offsets are set, and frozen by this first entry), so that a child of
/// init may share its memory until it executes: the kernel refuses
/// `CLONE_VM` across time namespaces without `CLONE_VFORK`, whose wait
/// `sys::process::spawn_sharing_memory` does without. Init reads no
/// clock of its own.
fn join_childrens() -> Result<(), String> {
    let ns = std::fs::File::open("/proc/self/ns/time_for_children")
        .map_err(|e| format!("opening the sandbox's time namespace: {e}"))?;
    setns(ns, CloneFlags::from_bits_retain(libc::CLONE_NEWTIME))
        .map_err(|e| format!("joining the sandbox's time namespace: {}", e.desc()))
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

/// Offsets that make the namespace's clocks read `from` when the host's
/// read `mono_now` and `boot_now` (nanoseconds): `from` less now, as
/// whole seconds and a non-negative part of one (the kernel's form),
/// never below what makes a clock negative.
fn continued_offsets(from: GuestClocks, mono_now: i128, boot_now: i128) -> String {
    let offset = |target: u64, now: i128| {
        let off = (i128::from(target) - now).max(-now);
        (off.div_euclid(NANOS), off.rem_euclid(NANOS))
    };
    let (ms, mn) = offset(from.monotonic_ns, mono_now);
    let (bs, bn) = offset(from.boottime_ns, boot_now);
    format!(
        "{} {ms} {mn}\n{} {bs} {bn}\n",
        libc::CLOCK_MONOTONIC,
        libc::CLOCK_BOOTTIME
    )
}

fn nanos(t: &nix::sys::time::TimeSpec) -> i128 {
    i128::from(t.tv_sec()) * NANOS + i128::from(t.tv_nsec())
}

/// The second of boot time at which the sandbox's clocks read zero: this
/// process's start (`/proc/self/stat`'s 22nd field, in clock ticks) less
/// the lead, as the served /proc/uptime computes it.
fn own_clock_origin() -> Option<i64> {
    let stat = crate::proc_text::read("/proc/self/stat", 4096).ok()?;
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
    fn continued_clocks_read_what_they_were_given() {
        let from = GuestClocks {
            monotonic_ns: 5_250_000_000,
            boottime_ns: 9_000_000_001,
        };
        // Now 100.5 s (monotonic) and 120 s (boot time) on the host.
        assert_eq!(
            continued_offsets(from, 100_500_000_000, 120_000_000_000),
            "1 -96 750000000\n7 -111 1\n"
        );
        // A clock ahead of the host's is a positive offset.
        assert_eq!(
            continued_offsets(from, 1_000_000_000, 2_000_000_000),
            "1 4 250000000\n7 7 1\n"
        );
    }

    #[test]
    fn own_clock_origin_is_in_the_past() {
        let start = own_clock_origin().expect("own start");
        let boot = clock_gettime(ClockId::CLOCK_BOOTTIME).unwrap().tv_sec();
        assert!((0..=boot).contains(&start), "{start} vs {boot}");
    }
}
