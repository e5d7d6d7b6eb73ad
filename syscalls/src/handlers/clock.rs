//! The clock and scheduler constants answered without the host kernel:
//! `time`, `gettimeofday` (which the vDSO answers for every libc; these
//! are the calls of a process without it) and `clock_getres` (the vDSO
//! answers the common clocks; the CPU-time clocks trap) from the
//! supervisor's clocks, which are the guest's (the sandbox has no time
//! namespace), and `sched_get_priority_max`/`min`, constants of the
//! kernel the supervisor asks it for.
//!
//! Owns: the answers and their errnos. Does not own: which calls trap
//! (the policy table).

use std::time::{SystemTime, UNIX_EPOCH};

use nix::errno::Errno;

use super::{live, value, Context, Res};
use crate::guest::Guest;
use procfs::with_view_proc;

/// Seconds and microseconds since the epoch.
fn now() -> (i64, i64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        i64::from(d.subsec_micros()),
    )
}

/// time(tloc): the seconds, also stored at `tloc` when it is not NULL.
pub fn time(g: &dyn Guest, tloc: u64) -> Res {
    let (secs, _) = now();
    if tloc != 0 {
        live(g)?;
        g.write_mem(tloc, &secs.to_ne_bytes())?;
    }
    value(secs)
}

/// gettimeofday(tv, tz): the time at `tv`, and at `tz` the zone the
/// kernel keeps (always zeros: nothing in the sandbox may set it).
pub fn gettimeofday(g: &dyn Guest, tv: u64, tz: u64) -> Res {
    let (secs, usecs) = now();
    live(g)?;
    if tv != 0 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&secs.to_ne_bytes());
        buf[8..].copy_from_slice(&usecs.to_ne_bytes());
        g.write_mem(tv, &buf)?;
    }
    if tz != 0 {
        g.write_mem(tz, &[0u8; 8])?;
    }
    value(0)
}

/// clock_getres(clock, res): the host's resolution of a clock by number
/// (EINVAL for one it does not know). A CPU-time clock of a process or
/// thread (a negative id; pid 0 is the caller) has a resolution of 1 ns;
/// the kernel answers EINVAL when no such task is in the caller's pid
/// namespace, which the view's procfs says. A clock descriptor (CLOCKFD,
/// the low bits 3) names none the guest can hold: EINVAL.
pub fn clock_getres(ctx: &Context, g: &dyn Guest, clock: i32, res: u64) -> Res {
    let ts = if clock < 0 {
        let pid = !(clock >> 3);
        let exists = pid == 0
            || with_view_proc(&ctx.fs, |proc| proc.read(&format!("{pid}/stat")).is_some())
                .unwrap_or(false);
        if clock & 3 == 3 || !exists {
            return Err(Errno::EINVAL);
        }
        libc::timespec {
            tv_sec: 0,
            tv_nsec: 1,
        }
    } else {
        vfs::sys::clock_getres(clock)?
    };
    if res != 0 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&ts.tv_sec.to_ne_bytes());
        buf[8..].copy_from_slice(&ts.tv_nsec.to_ne_bytes());
        live(g)?;
        g.write_mem(res, &buf)?;
    }
    value(0)
}

/// sched_get_priority_max(policy): the host kernel's own constant, asked
/// by the supervisor (which policies exist depends on the kernel:
/// SCHED_EXT is 7 from Linux 6.12).
pub fn sched_get_priority_max(policy: i32) -> Res {
    value(vfs::sys::sched_priority_bound(policy, true)?)
}

/// sched_get_priority_min(policy), as [`sched_get_priority_max`].
pub fn sched_get_priority_min(policy: i32) -> Res {
    value(vfs::sys::sched_priority_bound(policy, false)?)
}
