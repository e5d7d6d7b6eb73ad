//! The global /proc files the view covers, so that the kernel's own
//! procfs holds no host fact behind a file the sandbox serves.
//!
//! Opens and path stats are resolved by the VFS and then CONTINUEd: the
//! kernel redoes the lookup in the guest's mount namespace. A guest that
//! swaps a symlink of its own (or rewrites the path from another thread)
//! between the two lookups gets the kernel's file, not ours. So the view
//! binds a read-only file of its own over each global file the handlers
//! serve (the engine's `launch/proc_mount.rs`): a dodged open reads an empty file (or,
//! for `/proc/cmdline`, the same one empty line as served). The handlers
//! recognise a cover by its device (the view's /sys tmpfs, where the
//! cover files were made) and the path the kernel gives the descriptor,
//! and read the host's text the served file is made from in the
//! supervisor's own /proc: these files are global, the same in every
//! namespace.
//!
//! Owns what the view's /proc mount hides or protects: which files are
//! covered and with what text ([`proc_covers`], [`wants_cover`]), which
//! of its directories are masked ([`MASKED_PROC_DIRS`]) and which parts
//! are bound read-only ([`READ_ONLY_PROC`]); telling a cover's mount in
//! a mount table ([`is_cover`]) and reading the host's text of a covered
//! file ([`read_host`]). Does not own: the mounts (the engine's
//! `launch/proc_mount.rs`, which makes every mount of the view from
//! these), recognising and serving the files
//! (`served.rs`), or the per-process files (mount tables, `status`,
//! `net/*`), which a bind made at start-up cannot cover (see
//! docs/procfs.md, "What a dodged open still reaches").

use nix::errno::Errno;

use super::masked::{CMDLINE, MASKED};

/// The global files served whatever the limits (besides the masked ones
/// and `/proc/cmdline`).
const ALWAYS: &[&str] = &[
    "/proc/stat",
    "/proc/vmstat",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/inode-nr",
    "/proc/sys/fs/dentry-state",
    "/proc/sys/kernel/tainted",
];

/// The files served rewritten under a memory limit (without one they
/// are the host's, which a dodge then learns nothing more from).
const UNDER_MEMORY: &[&str] = &[
    "/proc/meminfo",
    "/proc/sys/fs/file-max",
    "/proc/sys/kernel/threads-max",
    "/proc/sys/fs/epoll/max_user_watches",
    "/proc/sys/fs/inotify/max_user_watches",
    "/proc/sys/vm/min_free_kbytes",
    "/proc/sys/vm/user_reserve_kbytes",
    "/proc/sys/vm/admin_reserve_kbytes",
];

/// Directories of the host's procfs that tell of its devices, disks,
/// interrupts and load (`/proc/fs/ext4/vda`, `/proc/irq/*/smp_affinity`,
/// PCI ids, the host's pressure stall figures, the kernel's debug
/// messages switched on by a write to `dynamic_debug/control`) and that no program in a
/// sandbox needs: an empty read-only directory over each (files of the
/// same kind read as empty: `masked.rs`).
pub const MASKED_PROC_DIRS: &[&str] = &[
    "acpi",
    "asound",
    "bus",
    "fs",
    "irq",
    "pressure",
    "scsi",
    "dynamic_debug",
];

/// Parts of procfs the guest may read but never change, each bound
/// read-only over itself (as docker's `readonlyPaths`):
/// - `sys`: a sysctl checks only that the writer's uid is the host's
///   root, and root's sandbox maps its root to the host's (with no
///   capability), so a writable /proc/sys would let its guest set
///   `kernel.core_pattern` (a program the kernel runs as the host's root
///   when a process dumps core), `kernel.modprobe`, `vm.drop_caches`...;
/// - `sysrq-trigger`: a write is a magic SysRq key (reboot, crash), for
///   whoever may open it, its owner included;
/// - `latency_stats` and `mtrr`, the other top-level files their owner
///   may write;
/// - `sysvipc`, `tty` and `driver`: directories of host-wide entries, whose
///   mode a `chmod` by their owner changes in every procfs on the host.
///
/// A name this kernel lacks is skipped.
pub const READ_ONLY_PROC: &[&str] = &[
    "sys",
    "sysrq-trigger",
    "latency_stats",
    "mtrr",
    "sysvipc",
    "tty",
    "driver",
];

/// The limits the sandbox has, which decide the files served rewritten,
/// and whether the guest's reads of the kernel's procfs are fenced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limited {
    pub memory: bool,
    pub pids: bool,
    pub cpus: bool,
    /// The guest's Landlock domain refuses it every native read of the
    /// kernel's procfs but /proc/sys and /proc/sysvipc (`fence.rs`): a
    /// dodge to a global file fails, and only some need their covers
    /// ([`covered_when_fenced`]).
    pub fenced: bool,
}

/// Every file the view covers under `limits` (its path as the guest
/// names it) and the text of its cover. The view skips a path the
/// kernel lacks, and one nobody but the host's root may read (mode 0400:
/// `kpageflags`, `slabinfo`, ...), which the guest cannot open anyway.
pub fn proc_covers(limits: Limited) -> impl Iterator<Item = (&'static str, &'static [u8])> {
    let empty: &'static [u8] = b"";
    let memory = UNDER_MEMORY.iter().filter(move |_| limits.memory);
    let pids = ["/proc/sys/kernel/threads-max"]
        .iter()
        .filter(move |_| limits.pids && !limits.memory);
    let cpus = ["/proc/cpuinfo"].iter().filter(move |_| limits.cpus);
    let files = MASKED
        .iter()
        .chain(ALWAYS)
        .chain(memory)
        .chain(pids)
        .chain(cpus);
    let cmdline = std::iter::once(("/proc/cmdline", CMDLINE.as_bytes()));
    files.map(move |p| (*p, empty)).chain(cmdline)
}

/// Whether the view binds a cover over the covered file `path` (one of
/// [`proc_covers`]), whose procfs stat tells `mode` and `size`: only
/// when others may read it (a file only the host's root may read, mode
/// 0400, the guest cannot open anyway), and when the guest's reads are
/// `fenced`, only when it still needs one ([`covered_when_fenced`]).
pub fn wants_cover(path: &str, mode: u32, size: u64, fenced: bool) -> bool {
    let readable = mode & 0o004 != 0;
    readable && (!fenced || covered_when_fenced(path, size))
}

/// Whether the covered file `path`, whose procfs stat tells `size`, still
/// needs its cover when the guest's reads are fenced: a file of /proc/sys
/// (read natively), or one whose path stat (which passes the filter)
/// tells a size that a read of the served file does not give
/// (`/proc/cmdline`'s is the length of the host's command line on recent
/// kernels, `config.gz`'s its own).
fn covered_when_fenced(path: &str, size: u64) -> bool {
    path.starts_with("/proc/sys/") || size != 0
}

/// Whether `point`, a mount point of a guest's mount table, is a cover.
pub fn is_cover(point: &str) -> bool {
    let all = Limited {
        memory: true,
        pids: true,
        cpus: true,
        fenced: false,
    };
    proc_covers(all).any(|(p, _)| p == point)
}

/// The host's text of the global /proc file `path`, read in the
/// supervisor's own procfs (invalid UTF-8 replaced).
pub fn read_host(path: &str) -> Result<String, Errno> {
    if !path.starts_with("/proc/") || path.contains("/..") {
        return Err(Errno::ENOENT);
    }
    let file = std::fs::File::open(path)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    super::sealed::read_all(file.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proc_sys::SysFile;

    #[test]
    fn every_served_sys_file_is_covered() {
        for p in crate::proc_sys::SERVED {
            assert!(SysFile::at(p).is_some(), "{p}");
            assert!(is_cover(p));
        }
        assert!(is_cover("/proc/cmdline") && is_cover("/proc/kcore"));
        assert!(!is_cover("/proc/self/mountinfo") && !is_cover("/proc"));
        let none = proc_covers(Limited::default()).count();
        let pids = Limited {
            pids: true,
            ..Limited::default()
        };
        assert_eq!(proc_covers(pids).count(), none + 1);
        assert!(!proc_covers(Limited::default()).any(|(p, _)| p == "/proc/meminfo"));
    }

    #[test]
    fn fenced_covers_are_sys_files_and_sized_ones() {
        assert!(covered_when_fenced("/proc/sys/fs/file-nr", 0));
        assert!(covered_when_fenced("/proc/cmdline", 553));
        assert!(!covered_when_fenced("/proc/stat", 0));
        assert!(!covered_when_fenced("/proc/interrupts", 0));
    }

    #[test]
    fn host_text_is_read_only_under_proc() {
        assert!(read_host("/proc/loadavg").is_ok_and(|t| !t.is_empty()));
        assert_eq!(read_host("/etc/passwd"), Err(Errno::ENOENT));
        assert_eq!(read_host("/proc/../etc/passwd"), Err(Errno::ENOENT));
    }
}
