//! What the guest is shown of /proc and /sys from the supervisor's side:
//! the figures of its limits that the /proc handlers serve
//! (`limits.rs`; for limits enforced outside the run, read from their
//! cgroup: `outside.rs`), the view's /proc mount with its covers and masks
//! (`proc_mount.rs`), and the /sys/devices/system/cpu layout
//! (`sys_cpu.rs`).
//!
//! Owns those. Does not own the texts of the /proc files the guest
//! reads (the `sandbox_syscalls` crate's handlers) or the rest of the
//! view (`launch/`).

pub mod limits;
pub mod outside;
pub(crate) mod proc_mount;
pub mod sys_cpu;

pub use limits::{GuestView, Reading};
pub use sys_cpu::write_sys_cpu;
