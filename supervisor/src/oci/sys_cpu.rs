//! A running container's /sys/devices/system/cpu following `update`:
//! `online`, `possible`, `present` and the `cpuN` directories are what
//! glibc's `sysconf(_SC_NPROCESSORS_ONLN)` (so Python's `os.cpu_count()`)
//! and `_SC_NPROCESSORS_CONF` (`nproc --all`) count. The sandbox's /sys
//! is a tmpfs of its own written at create (`launch/view.rs`), mounted
//! read-only; `update` rewrites it to the container's CPUs now (its
//! quota over its period, rounded up, at most the host's; the host's
//! without a quota), as the launch would have written them.
//!
//! How: a child process enters the mount namespace of the sandbox's
//! init (pid checked to be the anchor's grandchild), takes a detached
//! copy of the /sys mount (`open_tree`), clears the copy's read-only
//! flag, and writes through it. The guest's own mount stays read-only
//! and nothing new appears in its namespace; the copy goes with the child.
//!
//! Owns that rewrite. Does not own what the CPUs are (`guest_view.rs`'s
//! reader of the cgroup, `SysCpu`'s layout) or the other files the guest
//! reads its CPUs from (served live by the handlers).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::{setns, CloneFlags};
use nix::sys::stat::{mkdirat, Mode};
use nix::sys::statfs::{fstatfs, TMPFS_MAGIC};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{unlinkat, UnlinkatFlags};

use super::console::is_sandbox_init;
use super::state::Record;
use crate::guest_view::guest_cpus;
use crate::launch::SysCpu;
use crate::sys::fd::open_at;
use crate::sys::mount_tree::{clone_mount, make_writable};
use crate::sys::process::{fork_single_threaded, Forked};

/// Where the CPUs are, beneath the sandbox's /sys.
const CPU_DIR: &str = "devices/system/cpu";

/// Rewrites the sandbox's /sys/devices/system/cpu to the container's
/// CPUs now. Nothing to do for a container without a cpu cgroup (a
/// rootless one) or whose sandbox is gone.
pub fn follow_update(record: &Record) -> Result<(), String> {
    let Some(read) = super::guest_view::cpus_reader(&record.cgroup) else {
        return Ok(());
    };
    let cpus = read().ok_or("reading the container's cpu quota")?;
    if !is_sandbox_init(record.pid, record.init_pid) {
        return Ok(());
    }
    let limited = (cpus != u64::MAX)
        .then(|| guest_cpus(Some(cpus as f64)))
        .flatten();
    let wanted = SysCpu::new(limited, Path::new("/sys/devices/system/cpu"));
    in_child(|| rewrite_in_sandbox(record.init_pid, &wanted))
        .map_err(|e| format!("showing the container its CPUs in /sys: {e}"))
}

/// Runs `work` in a forked child (which enters another mount
/// namespace); its error comes back on a pipe.
fn in_child(work: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let (from_child, to_parent) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {}", e.desc()))?;
    match fork_single_threaded().map_err(|e| format!("fork: {}", e.desc()))? {
        Forked::Child => {
            drop(from_child);
            let code = match work() {
                Ok(()) => 0,
                Err(e) => {
                    let _ = File::from(to_parent).write_all(e.as_bytes());
                    1
                }
            };
            crate::sys::process::exit_now(code)
        }
        Forked::Parent(child) => {
            drop(to_parent);
            let mut message = String::new();
            let _ = File::from(from_child)
                .take(4096)
                .read_to_string(&mut message);
            match waitpid(child, None) {
                Ok(WaitStatus::Exited(_, 0)) => Ok(()),
                _ if !message.is_empty() => Err(message),
                other => Err(format!("the writer ended: {other:?}")),
            }
        }
    }
}

/// In the child: enters init's mount namespace and writes `wanted`
/// through a writable detached copy of its /sys.
fn rewrite_in_sandbox(init: i32, wanted: &SysCpu) -> Result<(), String> {
    let ns = File::open(format!("/proc/{init}/ns/mnt"))
        .map_err(|e| format!("the sandbox's mount namespace: {e}"))?;
    setns(ns, CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("entering the sandbox's mount namespace: {}", e.desc()))?;
    let sys = clone_mount(c"/sys").map_err(|e| format!("copying /sys: {}", e.desc()))?;
    // The view's own tmpfs, never the root file system's directory.
    let fs = fstatfs(&sys).map_err(|e| format!("/sys: {}", e.desc()))?;
    if fs.filesystem_type() != TMPFS_MAGIC {
        return Err("/sys is not the sandbox's tmpfs".into());
    }
    make_writable(sys.as_fd()).map_err(|e| format!("/sys: {}", e.desc()))?;
    let dir = cpu_dir(sys.as_fd()).map_err(|e| format!("/sys/{CPU_DIR}: {}", e.desc()))?;
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
