//! /proc and /sys as the guest sees them: only the sandbox's processes
//! and its own global figures (`isolation`), `/proc/self` naming the
//! caller, the direct route of a read by a clean path answering as the
//! general one (`direct`), the ids in `status` and `loginuid` as the
//! guest's own (`ids`), read opens with `O_NOATIME` (`noatime`),
//! readers that rewind an open file (`rewind`; without a round trip
//! where no served file can be the one rewound: `linked_rewinds`),
//! races against the kernel's
//! own /proc, the survey of every file for host-only facts (`survey`,
//! with `survey.py` and `survey/checks.rs`), the CPU accounting of
//! /proc/stat (`procstat`) and what the guest reads of its limits
//! (`sysinfo`; of its memory in `free` and /proc/meminfo: `meminfo`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod direct;
mod ids;
mod isolation;
mod linked_rewinds;
mod meminfo;
mod noatime;
mod proc_self;
mod procstat;
mod race;
mod rewind;
mod survey;
mod sysinfo;
