//! Writing a [`SysCpu`] layout (`online`, `possible`, `present`, the
//! `cpuN` directories) into a /sys tree given as a descriptor: once when
//! the view is built (`view.rs`, a fresh tmpfs) and again when an OCI
//! `update` changes the container's CPUs (the OCI front-end, through a
//! writable copy of that mount).
//!
//! Owns: that layout on disk, made exactly (stale `cpuN` directories
//! removed). Does not own: what the CPUs are ([`SysCpu::new`]) or which
//! mount is written.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{mkdirat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::launch::SysCpu;
use crate::sys::fd::open_at;

/// Where the CPUs are, beneath a /sys.
const CPU_DIR: &str = "devices/system/cpu";

/// Writes `wanted` into the /sys tree `sys` (its directories made if
/// missing); errors are one line naming the file.
pub fn write_sys_cpu(sys: BorrowedFd<'_>, wanted: &SysCpu) -> Result<(), String> {
    let dir = cpu_dir(sys).map_err(|e| format!("/sys/{CPU_DIR}: {}", e.desc()))?;
    write_cpus(dir.as_fd(), wanted)
}

/// /sys/devices/system/cpu in the tree `sys`, made if missing (a
/// sandbox launched with an empty one).
fn cpu_dir(sys: BorrowedFd<'_>) -> nix::Result<OwnedFd> {
    let mut dir = sys.try_clone_to_owned().map_err(|_| Errno::EMFILE)?;
    for name in CPU_DIR.split('/') {
        match mkdirat(Some(dir.as_raw_fd()), name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
        let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY;
        dir = open_at(Some(dir.as_fd()), Path::new(name), flags, Mode::empty())?;
    }
    Ok(dir)
}

/// Writes `wanted`'s files and makes its `cpuN` directories the only
/// ones in `dir`.
fn write_cpus(dir: BorrowedFd<'_>, wanted: &SysCpu) -> Result<(), String> {
    for (name, text) in &wanted.files {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW;
        let file = open_at(
            Some(dir),
            Path::new(name),
            flags,
            Mode::from_bits_truncate(0o444),
        )
        .map_err(|e| format!("/sys/{CPU_DIR}/{name}: {}", e.desc()))?;
        File::from(file)
            .write_all(text.as_bytes())
            .map_err(|e| format!("/sys/{CPU_DIR}/{name}: {e}"))?;
    }
    for name in cpu_dirs(dir)? {
        if !wanted.dirs.contains(&name) {
            unlinkat(
                Some(dir.as_raw_fd()),
                name.as_str(),
                UnlinkatFlags::RemoveDir,
            )
            .map_err(|e| format!("/sys/{CPU_DIR}/{name}: {}", e.desc()))?;
        }
    }
    for name in &wanted.dirs {
        match mkdirat(
            Some(dir.as_raw_fd()),
            name.as_str(),
            Mode::from_bits_truncate(0o755),
        ) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(format!("/sys/{CPU_DIR}/{name}: {}", e.desc())),
        }
    }
    Ok(())
}

/// The `cpuN` directories in `dir`.
fn cpu_dirs(dir: BorrowedFd<'_>) -> Result<Vec<String>, String> {
    let what = |e: Errno| format!("listing /sys/{CPU_DIR}: {}", e.desc());
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut list =
        nix::dir::Dir::openat(Some(dir.as_raw_fd()), ".", flags, Mode::empty()).map_err(what)?;
    let names = list
        .iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().ok().map(str::to_string))
        .filter(|n| is_cpu_dir(n))
        .collect();
    Ok(names)
}

/// `cpu` followed by digits only (not `cpufreq`, `cpuidle`).
fn is_cpu_dir(name: &str) -> bool {
    name.strip_prefix("cpu")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::is_cpu_dir;

    #[test]
    fn cpu_directories_are_cpu_and_a_number() {
        assert!(is_cpu_dir("cpu0"));
        assert!(is_cpu_dir("cpu15"));
        assert!(!is_cpu_dir("cpu"));
        assert!(!is_cpu_dir("cpufreq"));
        assert!(!is_cpu_dir("online"));
    }
}
