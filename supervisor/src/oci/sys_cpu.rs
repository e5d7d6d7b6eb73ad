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
//! Owns that rewrite. Does not own what the CPUs are (`sandbox::guest_proc::outside`'s
//! reader of the cgroup, `SysCpu`'s layout) or the other files the guest
//! reads its CPUs from (served live by the handlers).

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;

use nix::sched::{setns, CloneFlags};
use nix::sys::statfs::{fstatfs, TMPFS_MAGIC};

use super::child::in_child;
use super::console::is_sandbox_init;
use super::state::Record;
use sandbox::guest_proc::limits::guest_cpus;
use sandbox::guest_proc::{outside, write_sys_cpu};
use sandbox::launch::SysCpu;
use sandbox::sys::mount_tree::{clone_mount, make_writable};

/// Rewrites the sandbox's /sys/devices/system/cpu to the container's
/// CPUs now. Nothing to do for a container without a cpu cgroup (a
/// rootless one) or whose sandbox is gone.
pub fn follow_update(record: &Record) -> Result<(), String> {
    let Some(read) = outside::cpus_reader(&record.cgroup.outside()) else {
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
    match in_child(|| rewrite_in_sandbox(record.init_pid, &wanted)) {
        // The sandbox ended since the check (its namespaces went with
        // init): nothing to do, as for one gone before.
        Err(_) if !is_sandbox_init(record.pid, record.init_pid) => Ok(()),
        r => r.map_err(|e| format!("showing the container its CPUs in /sys: {e}")),
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
    write_sys_cpu(sys.as_fd(), wanted)
}
