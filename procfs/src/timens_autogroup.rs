//! The per-process files that tell of host-wide state, served as a
//! machine of the sandbox's own would show them:
//!
//! - `/proc/<pid>/timens_offsets`: the sandbox's clocks are a time
//!   namespace moved back by the host's uptime at its start
//!   (`sandbox/src/launch/timens.rs`), which the kernel shows here.
//!   Served as the kernel shows it outside any time namespace (every
//!   offset 0, same clocks and columns), so the sandbox's clocks look
//!   like its own and tell nothing of the host's uptime.
//! - `/proc/<pid>/autogroup` (`/autogroup-N nice X`): N is a host-wide
//!   counter of sessions made since the host's boot. Served with a
//!   sandbox-own number instead: host groups are numbered from 1 in the
//!   order the sandbox first shows them, so processes of one group share
//!   a number and different groups never do, as with the kernel's; the
//!   nice value is the kernel's (writes to the file reach the kernel).
//!
//! Owns: the two texts and the numbering of autogroups. Does not own:
//! recognising the files (`served.rs`, `tasks.rs`) or serving them.

use std::collections::VecDeque;
use std::sync::Mutex;

/// The kernel's `timens_offsets` text for `host` with every offset 0, in
/// the kernel's format (`%-10s %10lld %9ld`).
pub fn timens_offsets(host: &str) -> String {
    let mut out = String::new();
    for clock in host.lines().filter_map(|l| l.split_whitespace().next()) {
        out.push_str(&format!("{clock:<10} {:>10} {:>9}\n", 0, 0));
    }
    out
}

/// How many host groups the numbering remembers; the oldest are
/// forgotten past it (their numbers are not given again).
const REMEMBERED: usize = 4096;

/// The sandbox's numbers for the host's autogroups.
#[derive(Debug, Default)]
pub struct AutogroupIds(Mutex<Numbering>);

#[derive(Debug, Default)]
struct Numbering {
    /// (host id, sandbox id), oldest first.
    known: VecDeque<(u64, u64)>,
    last: u64,
}

impl AutogroupIds {
    /// The sandbox's number for the host's group `host_id`.
    fn own(&self, host_id: u64) -> u64 {
        let mut n = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, own)) = n.known.iter().find(|(h, _)| *h == host_id) {
            return *own;
        }
        n.last += 1;
        let own = n.last;
        if n.known.len() >= REMEMBERED {
            n.known.pop_front();
        }
        n.known.push_back((host_id, own));
        own
    }
}

/// The kernel's `autogroup` text `host` with the group's host number
/// replaced by the sandbox's; any other line as it is.
pub fn autogroup(host: &str, ids: &AutogroupIds) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        let renamed = line.strip_prefix("/autogroup-").and_then(|rest| {
            let (id, tail) = rest.split_once(' ')?;
            let own = ids.own(id.parse().ok()?);
            Some(format!("/autogroup-{own} {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_read_zero_in_the_kernels_columns() {
        let host = "monotonic      -69679         0\nboottime       -69679         0\n";
        assert_eq!(
            timens_offsets(host),
            "monotonic           0         0\nboottime            0         0\n"
        );
        assert_eq!(timens_offsets(""), "");
    }

    #[test]
    fn autogroups_are_numbered_in_the_sandbox() {
        let ids = AutogroupIds::default();
        assert_eq!(
            autogroup("/autogroup-19608 nice 0\n", &ids),
            "/autogroup-1 nice 0\n"
        );
        assert_eq!(
            autogroup("/autogroup-77 nice 5\n", &ids),
            "/autogroup-2 nice 5\n"
        );
        assert_eq!(
            autogroup("/autogroup-19608 nice 3\n", &ids),
            "/autogroup-1 nice 3\n"
        );
        assert_eq!(autogroup("", &ids), "");
        assert_eq!(
            autogroup("/autogroup-x nice 0\n", &ids),
            "/autogroup-x nice 0\n"
        );
    }

    #[test]
    fn forgotten_groups_never_share_a_number() {
        let ids = AutogroupIds::default();
        for host in 0..REMEMBERED as u64 + 1 {
            ids.own(host);
        }
        assert_eq!(ids.own(0), REMEMBERED as u64 + 2);
    }
}
