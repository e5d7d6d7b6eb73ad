//! The calls that ask about a task what its `stat` in the view's procfs
//! says, answered from there rather than by the host kernel:
//! `sched_getscheduler` and `sched_getparam` (its policy and real-time
//! priority), `getpgid` and `getsid` (its process group and session) and
//! `times` (the caller's process times). The view's procfs belongs to the
//! guest's pid namespace, so a pid means what the guest means by it, and
//! names no task outside the sandbox (ESRCH, as the kernel answers there).
//!
//! Owns: reading the `stat` line (split by `procfs::StatLine`), the kernel's EINVAL,
//! ESRCH and EFAULT cases, and writing the answers. Does not own: which
//! calls are answered (the policy table) or procfs itself.

use nix::errno::Errno;

use super::{live, value, Context, Res};
use crate::guest::Guest;
use procfs::{with_view_proc, StatLine};

/// The fields of a `stat` line after the command (field 3 on), so that
/// `field(n)` is the stat(5) field numbered n.
struct Stat(Vec<i64>);

impl Stat {
    fn parse(text: &str) -> Option<Stat> {
        let fields = StatLine::parse(text)?
            .fields_from(4)
            .map(|f| f.parse::<i64>().unwrap_or(0));
        Some(Stat(fields.collect()))
    }

    /// Field `n` (1-based, as stat(5) numbers them; from 4 on).
    fn field(&self, n: usize) -> i64 {
        n.checked_sub(4)
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(0)
    }
}

/// The `stat` of task `pid` as the guest names it (0: the caller's own
/// thread): ESRCH for one the view lacks, negative pids included (the
/// scheduler calls refuse those first, EINVAL).
fn stat_of(ctx: &Context, g: &dyn Guest, pid: i32) -> Result<Stat, Errno> {
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    let rel = if pid == 0 {
        let (tgid, tid) = g.ns_ids()?;
        format!("{tgid}/task/{tid}/stat")
    } else {
        format!("{pid}/stat")
    };
    with_view_proc(&ctx.fs, |proc| proc.read(&rel))
        .flatten()
        .and_then(|s| Stat::parse(&s))
        .ok_or(Errno::ESRCH)
}

const PGRP: usize = 5;
const SESSION: usize = 6;
const UTIME: usize = 14;
const RT_PRIORITY: usize = 40;
const POLICY: usize = 41;

pub fn sched_getscheduler(ctx: &Context, g: &dyn Guest, pid: i32) -> Res {
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    value(stat_of(ctx, g, pid)?.field(POLICY))
}

/// sched_getparam(pid, param): EINVAL for a NULL `param` or a negative
/// pid before the lookup, as the kernel checks.
pub fn sched_getparam(ctx: &Context, g: &dyn Guest, pid: i32, param: u64) -> Res {
    if param == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = stat_of(ctx, g, pid)?.field(RT_PRIORITY);
    live(g)?;
    g.write_mem(param, &i32::try_from(prio).unwrap_or(0).to_ne_bytes())?;
    value(0)
}

pub fn getpgid(ctx: &Context, g: &dyn Guest, pid: i32) -> Res {
    value(stat_of(ctx, g, pid)?.field(PGRP))
}

pub fn getsid(ctx: &Context, g: &dyn Guest, pid: i32) -> Res {
    value(stat_of(ctx, g, pid)?.field(SESSION))
}

/// times(buf): the caller's process's user and system time and its
/// waited-for children's (the four fields from utime on, in clock ticks),
/// and the host's tick count, the kernel's return value.
pub fn times(ctx: &Context, g: &dyn Guest, buf: u64) -> Res {
    let (tgid, _) = g.ns_ids()?;
    let stat = stat_of(ctx, g, tgid)?;
    let ticks = vfs::sys::times_ticks()?;
    if buf != 0 {
        let mut out = [0u8; 32];
        for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&stat.field(UTIME + i).to_ne_bytes());
        }
        live(g)?;
        g.write_mem(buf, &out)?;
    }
    value(ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_numbered_as_in_proc_5() {
        let line = "42 (a (b) c) S 1 42 40 0 -1 4194560 100 0 0 0 7 8 9 10 20 0 1 0 \
                    123 4096 100 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 5 2 0 0 0\n";
        let s = Stat::parse(line).unwrap();
        assert_eq!(s.field(4), 1);
        assert_eq!(s.field(PGRP), 42);
        assert_eq!(s.field(SESSION), 40);
        assert_eq!(
            [UTIME, UTIME + 1, UTIME + 2, UTIME + 3].map(|f| s.field(f)),
            [7, 8, 9, 10]
        );
        assert_eq!(s.field(RT_PRIORITY), 5);
        assert_eq!(s.field(POLICY), 2);
        assert_eq!(s.field(99), 0);
    }
}
