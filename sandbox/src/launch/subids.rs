//! Which host ids a sandbox's user namespace maps beyond the invoker's:
//! the subordinate ranges of /etc/subuid and /etc/subgid.
//!
//! Root's sandboxes map guest ids 0–65535 onto the range of the
//! `supervisor` entry, which the first run as root adds to both files (as
//! Docker's userns-remap adds `dockremap`): the lowest start at or above
//! 100000, a multiple of 65536, that overlaps no entry of either file,
//! the same start in both, appended under an exclusive lock of each file
//! so that two first runs agree. Every sandbox of the host shares that
//! range: each has its own user namespace, so sharing gives a guest no
//! power over another sandbox's processes (signals and ptrace are refused
//! across user namespaces without a capability in the target's) and the
//! files a guest writes to the host are in its own mounts, but a guest's
//! file left in a shared `--rw` directory is owned by the same host id as
//! another sandbox's root. `--userns-range START:COUNT` picks another
//! range (one per tenant, say). An unprivileged invoker's range is its
//! own entry (by name or uid), written by `newuidmap` (`userns.rs`).
//!
//! Owns: reading, choosing and adding entries. Not the maps (`userns.rs`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;

/// The name of root's entry.
pub const ENTRY_NAME: &str = "supervisor";
/// How many ids a sandbox maps: guest 0–65535.
pub const RANGE_COUNT: u32 = 65536;
/// The lowest host id a range starts at (below: accounts).
const LOWEST_START: u32 = 100_000;

const SUBUID: &str = "/etc/subuid";
const SUBGID: &str = "/etc/subgid";

/// A host range: `count` ids from `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostRange {
    pub start: u32,
    pub count: u32,
}

impl HostRange {
    /// `START:COUNT`, as `--userns-range` takes it: COUNT at least 65536
    /// (guest 0–65535), START at least 1 (never host root), and the
    /// range within 32 bits.
    pub fn parse(text: &str) -> Result<HostRange, String> {
        let bad = || format!("{text}: expected START:COUNT (e.g. 200000:65536)");
        let (start, count) = text.split_once(':').ok_or_else(bad)?;
        let start: u32 = start.trim().parse().map_err(|_| bad())?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        if start == 0 {
            return Err(format!("{text}: the range may not start at host uid 0"));
        }
        if count < RANGE_COUNT {
            return Err(format!("{text}: COUNT must be at least {RANGE_COUNT}"));
        }
        if start.checked_add(count).is_none() {
            return Err(format!("{text}: the range passes the last id"));
        }
        Ok(HostRange { start, count })
    }
}

/// One line of a subordinate-id file: NAME_OR_ID:START:COUNT.
fn entries(text: &str) -> impl Iterator<Item = (&str, u64, u64)> {
    text.lines().filter_map(|line| {
        let mut f = line.trim().split(':');
        let (owner, start, count) = (f.next()?, f.next()?, f.next()?);
        Some((owner, start.parse().ok()?, count.parse().ok()?))
    })
}

/// The first range of `owner` (a name, or a uid as text) in `text`.
fn find(text: &str, owners: &[&str]) -> Option<HostRange> {
    entries(text)
        .find(|(o, _, c)| owners.contains(o) && *c > 0)
        .and_then(|(_, s, c)| {
            Some(HostRange {
                start: u32::try_from(s).ok()?,
                count: u32::try_from(c).ok()?,
            })
        })
}

/// The lowest start ≥ LOWEST_START, a multiple of RANGE_COUNT, whose
/// RANGE_COUNT ids overlap no entry of any of `texts`.
fn free_start(texts: &[&str]) -> Option<u32> {
    let taken: Vec<(u64, u64)> = texts
        .iter()
        .flat_map(|t| entries(t).map(|(_, s, c)| (s, s.saturating_add(c))))
        .collect();
    let step = u64::from(RANGE_COUNT);
    let mut start = LOWEST_START.div_ceil(RANGE_COUNT) as u64 * step;
    while start + step <= u64::from(u32::MAX) {
        match taken.iter().find(|(s, e)| *s < start + step && start < *e) {
            None => return u32::try_from(start).ok(),
            Some((_, end)) => start = end.div_ceil(step) * step,
        }
    }
    None
}

/// Root's range: the `supervisor` entry of /etc/subuid (with the same in
/// /etc/subgid), added to both on first use.
pub fn root_range() -> Result<HostRange, String> {
    let mut uid_file = open_locked(SUBUID)?;
    let mut gid_file = open_locked(SUBGID)?;
    let uid_text = read_all(&mut uid_file, SUBUID)?;
    let gid_text = read_all(&mut gid_file, SUBGID)?;
    match (
        find(&uid_text, &[ENTRY_NAME]),
        find(&gid_text, &[ENTRY_NAME]),
    ) {
        (Some(u), Some(g)) if u == g => return Ok(u),
        (Some(u), Some(g)) => {
            return Err(format!(
                "the {ENTRY_NAME} entries of {SUBUID} ({}:{}) and {SUBGID} ({}:{}) differ: make them the same or pass --userns-range",
                u.start, u.count, g.start, g.count
            ))
        }
        _ => {}
    }
    let start = free_start(&[&uid_text, &gid_text])
        .ok_or_else(|| format!("no free range of {RANGE_COUNT} ids in {SUBUID} and {SUBGID}"))?;
    let range = HostRange {
        start,
        count: RANGE_COUNT,
    };
    for (file, text, path) in [
        (&mut uid_file, &uid_text, SUBUID),
        (&mut gid_file, &gid_text, SUBGID),
    ] {
        if find(text, &[ENTRY_NAME]).is_none() {
            append(file, text, range, path)?;
        }
    }
    Ok(range)
}

/// An unprivileged invoker's range: its entry (by name or uid) in both
/// files, or `None` when either lacks one (the one-id map then).
pub fn invoker_ranges(uid: u32) -> Option<(HostRange, HostRange)> {
    let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name);
    let uid_text = uid.to_string();
    let mut owners = vec![uid_text.as_str()];
    owners.extend(name.as_deref());
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let sub_u = find(&read(SUBUID)?, &owners)?;
    let sub_g = find(&read(SUBGID)?, &owners)?;
    Some((sub_u, sub_g))
}

fn open_locked(path: &str) -> Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("opening {path}: {e}"))?;
    crate::sys::fd::lock_exclusive(file.as_fd())
        .map_err(|e| format!("locking {path}: {}", e.desc()))?;
    Ok(file)
}

fn read_all(file: &mut File, path: &str) -> Result<String, String> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
        .map_err(|e| format!("reading {path}: {e}"))?;
    Ok(text)
}

fn append(file: &mut File, text: &str, range: HostRange, path: &str) -> Result<(), String> {
    let newline = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let line = format!("{newline}{ENTRY_NAME}:{}:{}\n", range.start, range.count);
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("adding {ENTRY_NAME} to {path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges() {
        assert_eq!(
            HostRange::parse("200000:65536"),
            Ok(HostRange {
                start: 200_000,
                count: 65536
            })
        );
        assert!(HostRange::parse("0:65536").is_err());
        assert!(HostRange::parse("200000:100").is_err());
        assert!(HostRange::parse("4294967000:65536").is_err());
        assert!(HostRange::parse("x").is_err());
    }

    #[test]
    fn finds_entries() {
        let text = "tester:100000:65536\n1001:165536:65536\nsupervisor:231072:65536\n";
        assert_eq!(find(text, &["supervisor"]).map(|r| r.start), Some(231_072));
        assert_eq!(find(text, &["1001", "bob"]).map(|r| r.start), Some(165_536));
        assert_eq!(find(text, &["nobody"]), None);
    }

    #[test]
    fn chooses_a_free_start() {
        assert_eq!(free_start(&["", ""]), Some(131_072));
        assert_eq!(free_start(&["tester:100000:65536\n", ""]), Some(196_608));
        assert_eq!(
            free_start(&["a:100000:65536\n", "b:196608:10\n"]),
            Some(262_144)
        );
        assert_eq!(free_start(&["a:0:4294967295\n"]), None);
    }
}
