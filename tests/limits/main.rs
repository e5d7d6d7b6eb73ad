//! The limits, each provoked for real (memory, pids, timeout, CPU time,
//! output, disk, descriptors; the report's reason and the exit code), and
//! the trap's workers serving from the guest's cpu cgroup under `--cpus`.
//!
//! Not here: what the guest reads of its limits in /proc and /sys
//! (`tests/procfs/`), and the whole-process leftovers checks, which
//! need a test binary of their own (`tests/leftovers/`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod cpu_group;
mod provoked;
