//! The parsers of the command line's flag values (`value_parser` in
//! clap's derive): mounts, masks and the root (`vfs::mounts`'s parsers,
//! with their errors as one line), sizes, counts, CPUs, durations,
//! published ports, id ranges, capabilities, users, the pool's size and
//! warm paths.
//!
//! Owns: what each flag's value may be and the one-line error of a bad
//! one. Does not own the flags (`cli.rs`) or what a run does with them.

use std::path::PathBuf;
use std::time::Duration;

use sandbox::config::IdRange;
use sandbox::launch::subids::HostRange;
use sandbox::launch::GuestUser;
use vfs::mounts::{parse_size, MountSpec};

pub(super) fn parse_warm(s: &str) -> Result<PathBuf, String> {
    match PathBuf::from(s) {
        p if p.is_absolute() => Ok(p),
        _ => Err(format!(
            "{s:?}: must be absolute (a path in the sandbox's view)"
        )),
    }
}

pub(super) fn parse_pool_size(s: &str) -> Result<usize, String> {
    match parse_count(s)? {
        n if n <= 256 => Ok(n as usize),
        _ => Err(format!("{s:?}: at most 256 sandboxes")),
    }
}

pub(super) fn parse_ro(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_ro(s).map_err(|e| e.to_string())
}
pub(super) fn parse_rw(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_rw(s).map_err(|e| e.to_string())
}
pub(super) fn parse_tmpfs(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_tmpfs(s).map_err(|e| e.to_string())
}
pub(super) fn parse_rootfs(s: &str) -> Result<PathBuf, String> {
    vfs::mounts::parse_rootfs(s).map_err(|e| e.to_string())
}
pub(super) fn parse_mask(s: &str) -> Result<PathBuf, String> {
    vfs::mounts::parse_mask(s).map_err(|e| e.to_string())
}

pub(super) fn parse_remount_ro(s: &str) -> Result<PathBuf, String> {
    vfs::mounts::parse_remount_ro(s).map_err(|e| e.to_string())
}
pub(super) fn parse_publish(s: &str) -> Result<netstack::publish::PublishSpec, String> {
    s.parse()
}
pub(super) fn parse_nonzero_size(s: &str) -> Result<u64, String> {
    match parse_size(s).map_err(|e| e.to_string())? {
        0 => Err(format!("size {s:?}: must be more than 0")),
        n => Ok(n),
    }
}
pub(super) fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) | Err(_) => Err(format!("{s:?}: expected a whole number of at least 1")),
        Ok(n) => Ok(n),
    }
}
pub(super) fn parse_cpus(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if (0.01..=4096.0).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: expected a number of CPUs, like 0.5 or 2")),
    }
}
/// Seconds, optionally fractional, optionally with a unit: 10, 1.5, 90s, 2m, 1h.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n * scale < 1e9 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => Err(format!("{s:?}: expected seconds, like 10, 1.5, 90s or 2m")),
    }
}

pub(super) fn parse_userns_range(s: &str) -> Result<IdRange, String> {
    match s {
        "auto" => Ok(IdRange::Auto),
        "none" => Ok(IdRange::Invoker),
        _ => HostRange::parse(s).map(IdRange::Host),
    }
}

pub(super) fn parse_cap(s: &str) -> Result<String, String> {
    sandbox::launch::guest_caps::parse(s).map(|_| s.to_string())
}

/// `UID[:GID]`, numbers; without GID, UID's primary group in the host's
/// /etc/passwd (whose system users the view's shows), else 0.
pub(super) fn parse_user(s: &str) -> Result<GuestUser, String> {
    let bad = || format!("{s}: expected UID[:GID] (numbers, below 65536)");
    let id = |t: &str| -> Result<u32, String> {
        t.parse::<u32>().ok().filter(|n| *n < 65536).ok_or_else(bad)
    };
    let (uid, gid) = match s.split_once(':') {
        Some((u, g)) => (id(u)?, id(g)?),
        None => {
            let uid = id(s)?;
            let gid = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map_or(0, |u| u.gid.as_raw());
            (uid, gid)
        }
    };
    Ok(GuestUser {
        uid,
        gid,
        groups: Vec::new(),
    })
}
