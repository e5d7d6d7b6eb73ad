//! The view's /sys: its only content is `devices/system/cpu`, a
//! [`SysCpu`] layout (`online`, `possible`, `present`, the `cpuN`
//! directories) of the CPUs the guest may use, written into a /sys tree
//! given as a descriptor: once when the view is built (the engine's
//! `launch/view.rs`, a fresh tmpfs) and again when an OCI `update`
//! changes the container's CPUs (the OCI front-end, through a writable
//! copy of that mount).
//!
//! Owns: the layout ([`SysCpu::new`]) and that layout on disk, made
//! exactly (stale `cpuN` directories removed). Does not own: how many
//! CPUs the guest may use (`limits.rs`, `outside.rs`) or which mount is
//! written.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{mkdirat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// The view's only /sys content, `devices/system/cpu`: the CPUs the guest
/// may use, as glibc counts them (`online` for `_SC_NPROCESSORS_ONLN`, the
/// `cpuN` directories for `_SC_NPROCESSORS_CONF`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysCpu {
    /// `online`, `possible`, `present` and their contents.
    pub files: Vec<(&'static str, String)>,
    /// The `cpuN` directories (empty).
    pub dirs: Vec<String>,
}

/// The files of /sys/devices/system/cpu the view shows.
const SYS_CPU_FILES: [&str; 3] = ["online", "possible", "present"];

impl SysCpu {
    /// `cpus` CPUs (0 to N-1), or the host's (`host`:
    /// /sys/devices/system/cpu) when the guest has no cpu limit.
    pub fn new(cpus: Option<usize>, host: &Path) -> SysCpu {
        match cpus {
            Some(n) => {
                let n = n.max(1);
                let list = if n == 1 {
                    "0\n".to_string()
                } else {
                    format!("0-{}\n", n - 1)
                };
                SysCpu {
                    files: SYS_CPU_FILES.iter().map(|f| (*f, list.clone())).collect(),
                    dirs: (0..n).map(|i| format!("cpu{i}")).collect(),
                }
            }
            None => {
                let files = SYS_CPU_FILES
                    .iter()
                    .filter_map(|f| Some((*f, fs::read_to_string(host.join(f)).ok()?)))
                    .collect();
                let mut dirs: Vec<(u64, String)> = fs::read_dir(host)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| {
                        let name = e.file_name().into_string().ok()?;
                        let n = name.strip_prefix("cpu")?.parse().ok()?;
                        Some((n, name))
                    })
                    .collect();
                dirs.sort();
                SysCpu {
                    files,
                    dirs: dirs.into_iter().map(|d| d.1).collect(),
                }
            }
        }
    }
}

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
        dir = open_at(dir.as_fd(), name, flags, Mode::empty())?;
    }
    Ok(dir)
}

/// Writes `wanted`'s files and makes its `cpuN` directories the only
/// ones in `dir`.
fn write_cpus(dir: BorrowedFd<'_>, wanted: &SysCpu) -> Result<(), String> {
    for (name, text) in &wanted.files {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW;
        let file = open_at(dir, name, flags, Mode::from_bits_truncate(0o444))
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

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
fn open_at(dir: BorrowedFd<'_>, name: &str, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
    let name = CString::new(name).map_err(|_| Errno::EINVAL)?;
    let flags = (flags | OFlag::O_CLOEXEC).bits();
    vfs::sys::openat(dir, &name, flags, mode.bits())
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
    use std::fs;
    use std::path::Path;

    use super::{is_cpu_dir, SysCpu};

    #[test]
    fn cpu_directories_are_cpu_and_a_number() {
        assert!(is_cpu_dir("cpu0"));
        assert!(is_cpu_dir("cpu15"));
        assert!(!is_cpu_dir("cpu"));
        assert!(!is_cpu_dir("cpufreq"));
        assert!(!is_cpu_dir("online"));
    }

    #[test]
    fn sys_cpu() {
        let one = SysCpu::new(Some(1), Path::new("/nonexistent"));
        assert_eq!(one.files[0], ("online", "0\n".to_string()));
        assert_eq!(one.dirs, ["cpu0"]);
        let three = SysCpu::new(Some(3), Path::new("/nonexistent"));
        assert_eq!(three.files.len(), 3);
        assert!(three.files.iter().all(|f| f.1 == "0-2\n"));
        assert_eq!(three.dirs, ["cpu0", "cpu1", "cpu2"]);
        let host = SysCpu::new(None, Path::new("/sys/devices/system/cpu"));
        let online = fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        assert_eq!(
            host.files
                .iter()
                .find(|f| f.0 == "online")
                .map(|f| f.1.clone()),
            Some(online).filter(|o| !o.is_empty())
        );
        assert!(host.dirs.contains(&"cpu0".to_string()));
        assert!(!host.dirs.iter().any(|d| d == "cpufreq" || d == "cpuidle"));
    }
}
