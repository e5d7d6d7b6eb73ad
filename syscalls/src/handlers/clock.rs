//! The clock and scheduler constants answered without the host kernel:
//! `time`, `gettimeofday` (which the vDSO answers for every libc; these
//! are the calls of a process without it) and `clock_getres` (the vDSO
//! answers the common clocks; the CPU-time clocks trap) from the
//! supervisor's clocks, which are the guest's (the sandbox has no time
//! namespace), and `sched_get_priority_max`/`min`, constants of the
//! kernel.
//!
//! Owns: the answers and their errnos. Does not own: which calls trap
//! (the policy table).

use std::time::{SystemTime, UNIX_EPOCH};

use nix::errno::Errno;

use super::{live, value, Res};
use crate::guest::Guest;

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
/// thread (a negative id) has the same 1 ns resolution whichever it
/// names; the kernel checks that the task exists, which from here would
/// need the guest's pid namespace, so any such id is answered 1 ns.
pub fn clock_getres(g: &dyn Guest, clock: i32, res: u64) -> Res {
    // A negative id with its low two bits 3 is a clock descriptor
    // (CLOCKFD), which the guest cannot hold: EINVAL, as for a bad type.
    let ts = if clock < 0 && clock & 3 == 3 {
        return Err(Errno::EINVAL);
    } else if clock < 0 {
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

/// The priority range of a scheduling policy: 1..99 for the real-time
/// ones (SCHED_FIFO, SCHED_RR), 0 for SCHED_OTHER, SCHED_BATCH,
/// SCHED_IDLE and SCHED_DEADLINE, EINVAL for any other.
fn priority_range(policy: i32) -> Result<(i64, i64), Errno> {
    match policy {
        1 | 2 => Ok((1, 99)),
        0 | 3 | 5 | 6 => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sched_get_priority_max(policy: i32) -> Res {
    value(priority_range(policy)?.1)
}

pub fn sched_get_priority_min(policy: i32) -> Res {
    value(priority_range(policy)?.0)
}
