//! The clocks a hibernated session's processes last saw, so its next
//! sandbox continues them: at hibernation the guest's `CLOCK_MONOTONIC`
//! and `CLOCK_BOOTTIME` (the host's plus the old sandbox's time namespace
//! offsets) and the host's realtime clock go to `hibernate/clocks`,
//! written before the dump (so a full disk fails the hibernation before
//! any process is touched) and written again in place, the same size,
//! once the processes are stopped for good; at wake the new sandbox's time
//! namespace starts monotonic where it stopped (it does not count the
//! hibernation, as it does not count a machine's suspend) and boot time
//! that much later plus the time hibernated (as boot time counts a
//! suspend), passed as `session-sandbox --guest-clocks`.
//!
//! Owns that file's contents; not the namespace's offsets themselves
//! (`sandbox::launch::timens`).

use std::ffi::OsString;
use std::path::Path;

use nix::time::{clock_gettime, ClockId};

/// The file in the saved state's directory.
pub const CLOCKS_FILE: &str = "clocks";

const NANOS: i128 = 1_000_000_000;

/// A time namespace's offsets: monotonic, boot time, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offsets {
    monotonic: i128,
    boottime: i128,
}

/// The offsets of the time namespace host pid `pid` lives in (none when
/// it cannot be read: a kernel without time namespaces).
pub fn offsets_of(pid: i32) -> Option<Offsets> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/timens_offsets")).ok()?;
    parse_offsets(&text)
}

fn parse_offsets(text: &str) -> Option<Offsets> {
    let mut found = (None, None);
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(clock), Some(secs), Some(nanos)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let value =
            i128::from(secs.parse::<i64>().ok()?) * NANOS + i128::from(nanos.parse::<i64>().ok()?);
        match clock {
            "monotonic" | "1" => found.0 = Some(value),
            "boottime" | "7" => found.1 = Some(value),
            _ => {}
        }
    }
    Some(Offsets {
        monotonic: found.0?,
        boottime: found.1?,
    })
}

/// Writes into `dir` the guest's clocks as of now under `offsets`, over
/// what a previous call wrote there (always the same size, so the second
/// write needs no new space).
pub fn save(dir: &Path, offsets: Offsets) -> Result<(), String> {
    use std::io::Write;
    let now = |id| clock_gettime(id).map(|t| nanos(&t)).map_err(|e| e.desc());
    let mono = now(ClockId::CLOCK_MONOTONIC)? + offsets.monotonic;
    let boot = now(ClockId::CLOCK_BOOTTIME)? + offsets.boottime;
    let real = now(ClockId::CLOCK_REALTIME)?;
    let path = dir.join(CLOCKS_FILE);
    let text = format!("{:>24} {:>24} {:>24}\n", mono.max(0), boot.max(0), real);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The `--guest-clocks` flag of the sandbox waking the state in `dir`
/// (none without a readable clocks file: the clocks start afresh).
pub fn flag(dir: &Path) -> Option<OsString> {
    let text = std::fs::read_to_string(dir.join(CLOCKS_FILE)).ok()?;
    let real_now = clock_gettime(ClockId::CLOCK_REALTIME)
        .ok()
        .map(|t| nanos(&t))?;
    let (mono, boot) = continued(&text, real_now)?;
    Some(format!("--guest-clocks={mono},{boot}").into())
}

/// Monotonic as saved; boot time as saved plus the realtime that passed
/// since (none if the clock went back).
fn continued(text: &str, real_now: i128) -> Option<(u64, u64)> {
    let mut words = text.split_whitespace().map(str::parse::<i128>);
    let (Some(Ok(mono)), Some(Ok(boot)), Some(Ok(real))) =
        (words.next(), words.next(), words.next())
    else {
        return None;
    };
    let slept = (real_now - real).max(0);
    Some((u64::try_from(mono).ok()?, u64::try_from(boot + slept).ok()?))
}

fn nanos(t: &nix::sys::time::TimeSpec) -> i128 {
    i128::from(t.tv_sec()) * NANOS + i128::from(t.tv_nsec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_read_as_the_kernel_shows_them() {
        let text = "monotonic        -1234  500000000\nboottime         -1300          0\n";
        assert_eq!(
            parse_offsets(text),
            Some(Offsets {
                monotonic: -1_233_500_000_000,
                boottime: -1_300_000_000_000,
            })
        );
        assert_eq!(parse_offsets("monotonic 0 0\n"), None);
    }

    #[test]
    fn boot_time_counts_the_hibernation_and_monotonic_does_not() {
        assert_eq!(continued("5 7 100\n", 160), Some((5, 67)));
        // A realtime clock set back: no time counted.
        assert_eq!(continued("5 7 100\n", 40), Some((5, 7)));
        assert_eq!(continued("5 x 100\n", 160), None);
        assert_eq!(continued("-5 7 100\n", 160), None);
    }
}
