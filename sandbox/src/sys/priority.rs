//! Scheduling priority (nice values): `getpriority` and `setpriority`,
//! which nix does not wrap, and starting a child at a given nice value.
//!
//! Owns the calls; not when a priority is lowered or restored (the pool:
//! `supervisor/src/pool/daemon.rs`, `slot.rs`).

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::errno::Errno;
use nix::sys::resource::{getrlimit, Resource};

/// The lowest priority: a task at nice 19 gets about 1/70 of the CPU a
/// nice-0 task competing with it gets.
pub const LOWEST: i32 = 19;

/// The calling thread's nice value.
pub fn own_nice() -> nix::Result<i32> {
    Errno::clear();
    // SAFETY: getpriority takes two integers and touches no memory of ours.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS as _, 0) };
    // -1 is also a valid nice value: only errno tells them apart.
    match (nice, Errno::last_raw()) {
        (-1, e) if e != 0 => Err(Errno::from_raw(e)),
        (nice, _) => Ok(nice),
    }
}

/// Sets the nice value of every thread of every process in process group
/// `pgid` (0: the caller's own). Fails if any thread could not be set
/// (the others are set all the same).
pub fn set_group_nice(pgid: i32, nice: i32) -> nix::Result<()> {
    // SAFETY: setpriority takes integers only.
    let ret = unsafe { libc::setpriority(libc::PRIO_PGRP as _, pgid as libc::id_t, nice) };
    Errno::result(ret).map(drop)
}

/// Whether this process may set a nice value of `nice` on its own tasks
/// (and its children's) once they run at [`LOWEST`]: raising a priority
/// needs CAP_SYS_NICE, or RLIMIT_NICE at least `20 - nice`.
pub fn may_raise_to(nice: i32) -> bool {
    let capable = caps::has_cap(
        None,
        caps::CapSet::Effective,
        caps::Capability::CAP_SYS_NICE,
    )
    .unwrap_or(false);
    let limit = getrlimit(Resource::RLIMIT_NICE).map_or(0, |(soft, _)| soft);
    capable || i64::try_from(limit).unwrap_or(i64::MAX) >= 20 - i64::from(nice)
}

/// Makes `command`'s child start at nice `nice` (set between its fork and
/// its exec, so the whole of its life runs at it).
pub fn start_at_nice(command: &mut Command, nice: i32) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes one async-signal-safe call (setpriority), allocating nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::setpriority(libc::PRIO_PROCESS as _, 0, nice) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_starts_at_the_nice_asked_for() {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", "cut -d' ' -f19 /proc/self/stat"]);
        start_at_nice(&mut command, LOWEST);
        let out = command.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
    }

    #[test]
    fn our_own_nice_is_read() {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let nice = procfs::StatLine::parse(&stat).and_then(|l| l.number::<i32>(19));
        assert_eq!(own_nice().unwrap(), nice.expect("field 19 of our stat"));
    }
}
