//! The sandbox's answers for the /proc/sys files that would tell of the
//! host: the open files, inodes and dentries counted host-wide, the
//! host kernel's taint, and the limits the kernel sized from the host's
//! memory (`threads-max`, `file-max`, the epoll and inotify watch
//! maxima, and vm's `min_free_kbytes`, `user_reserve_kbytes` and
//! `admin_reserve_kbytes`), sized instead from `--memory` and `--pids`.
//!
//! Owns: which /proc/sys files are served ([`SysFile`]), their texts,
//! and the [`SysBaseline`] the host-wide counters are relative to. Does
//! not own: recognising or serving them (`served.rs`), counting the
//! sandbox's descriptors (`tasks::open_files`), or the /proc/sys
//! files a namespace already makes the sandbox's (`kernel/hostname`,
//! `kernel/ns_last_pid`, `kernel/pid_max`).

use std::ffi::CStr;

/// A /proc/sys file served rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysFile {
    /// `fs/file-nr`: the sandbox's open descriptors, 0 free, file-max.
    FileNr,
    /// `fs/file-max`: sized from the memory limit as the kernel sizes it.
    FileMax,
    /// `fs/inode-nr` and `fs/dentry-state`: what the host's counts grew
    /// by since the sandbox started (at least 0).
    InodeNr,
    DentryState,
    /// `kernel/tainted`: 0 (the host kernel's taint tells of its modules
    /// and faults).
    Tainted,
    /// `kernel/threads-max`: sized from the memory limit as the kernel
    /// sizes it, and at most `--pids`.
    ThreadsMax,
    /// `fs/epoll/max_user_watches` and `fs/inotify/max_user_watches`:
    /// the kernel makes them proportional to its memory (4% and 1% of it
    /// over a watch's size); scaled to the memory limit.
    EpollWatches,
    InotifyWatches,
    /// `vm/min_free_kbytes`, `vm/user_reserve_kbytes` and
    /// `vm/admin_reserve_kbytes`: the kernel sizes them from its memory at
    /// boot; under a memory limit, its formulas for that much.
    MinFree,
    UserReserve,
    AdminReserve,
}

/// Every served /proc/sys file, as the kernel names it (`SysFile::at`
/// knows each).
#[cfg(test)]
pub const SERVED: &[&str] = &[
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/file-max",
    "/proc/sys/fs/inode-nr",
    "/proc/sys/fs/dentry-state",
    "/proc/sys/kernel/tainted",
    "/proc/sys/kernel/threads-max",
    "/proc/sys/fs/epoll/max_user_watches",
    "/proc/sys/fs/inotify/max_user_watches",
    "/proc/sys/vm/min_free_kbytes",
    "/proc/sys/vm/user_reserve_kbytes",
    "/proc/sys/vm/admin_reserve_kbytes",
];

impl SysFile {
    /// The served file at `path` (as the kernel names a descriptor).
    pub fn at(path: &str) -> Option<SysFile> {
        let file = match path.strip_prefix("/proc/sys/")? {
            "fs/file-nr" => SysFile::FileNr,
            "fs/file-max" => SysFile::FileMax,
            "fs/inode-nr" => SysFile::InodeNr,
            "fs/dentry-state" => SysFile::DentryState,
            "kernel/tainted" => SysFile::Tainted,
            "kernel/threads-max" => SysFile::ThreadsMax,
            "fs/epoll/max_user_watches" => SysFile::EpollWatches,
            "fs/inotify/max_user_watches" => SysFile::InotifyWatches,
            "vm/min_free_kbytes" => SysFile::MinFree,
            "vm/user_reserve_kbytes" => SysFile::UserReserve,
            "vm/admin_reserve_kbytes" => SysFile::AdminReserve,
            _ => return None,
        };
        Some(file)
    }

    /// The name of the memfd that serves it.
    pub fn memfd_name(self) -> &'static CStr {
        match self {
            SysFile::FileNr => c"file-nr",
            SysFile::FileMax => c"file-max",
            SysFile::InodeNr => c"inode-nr",
            SysFile::DentryState => c"dentry-state",
            SysFile::Tainted => c"tainted",
            SysFile::ThreadsMax => c"threads-max",
            SysFile::EpollWatches | SysFile::InotifyWatches => c"max_user_watches",
            SysFile::MinFree => c"min_free_kbytes",
            SysFile::UserReserve => c"user_reserve_kbytes",
            SysFile::AdminReserve => c"admin_reserve_kbytes",
        }
    }
}

/// The host's inode and dentry counts when the sandbox started.
#[derive(Debug, Default)]
pub struct SysBaseline {
    pub inode_nr: String,
    pub dentry_state: String,
}

/// What the texts are sized from: the guest's limits and, for file-nr,
/// its open descriptors.
pub struct Sizes {
    pub memory_limit: Option<u64>,
    /// The host's memory (MemTotal, bytes), for the watch maxima.
    pub host_memory: Option<u64>,
    pub pids: Option<u64>,
    pub open_files: u64,
}

/// The kernel's NR_FILE, file-max's least value.
const NR_FILE: u64 = 8192;
/// The kernel's THREAD_SIZE (x86-64, 16 KiB) times 8: threads-max is
/// memory / (8 * THREAD_SIZE), so that thread stacks take at most 1/8.
const THREAD_MEM: u64 = 16 * 1024 * 8;
/// The kernel's MIN_THREADS.
const MIN_THREADS: u64 = 20;
/// The bounds the kernel keeps inotify's max_user_watches in.
const INOTIFY_WATCHES: (u64, u64) = (8192, 1_048_576);
/// The bounds of min_free_kbytes the kernel sizes (`calculate_min_free_kbytes`).
const MIN_FREE_KB: (u64, u64) = (128, 262_144);
/// The most the kernel reserves for users (128 MiB) and for the
/// administrator (8 MiB), in KiB: a 32nd of memory up to these.
const USER_RESERVE_KB: u64 = 131_072;
const ADMIN_RESERVE_KB: u64 = 8192;

/// The text of `file`, given the host's text `host`.
pub fn text(file: SysFile, host: &str, base: &SysBaseline, sizes: &Sizes) -> String {
    let values = numbers(host);
    let first = values.first().copied().unwrap_or(0);
    match file {
        SysFile::FileNr => {
            let max = file_max(values.get(2).copied().unwrap_or(0), sizes);
            format!("{}\t0\t{max}\n", sizes.open_files)
        }
        SysFile::FileMax => format!("{}\n", file_max(first, sizes)),
        SysFile::InodeNr => tabbed(&grown(&values, &numbers(&base.inode_nr), &[])),
        // age_limit, want_pages and the spare field are settings, not counts.
        SysFile::DentryState => tabbed(&grown(&values, &numbers(&base.dentry_state), &[2, 3, 5])),
        SysFile::Tainted => "0\n".to_owned(),
        SysFile::ThreadsMax => {
            let by_memory = sizes
                .memory_limit
                .map(|m| (m / THREAD_MEM).max(MIN_THREADS));
            let limit = [Some(first), by_memory, sizes.pids]
                .into_iter()
                .flatten()
                .min();
            format!("{}\n", limit.unwrap_or(first))
        }
        SysFile::EpollWatches => format!("{}\n", scaled(first, sizes, (0, u64::MAX))),
        SysFile::InotifyWatches => format!("{}\n", scaled(first, sizes, INOTIFY_WATCHES)),
        SysFile::MinFree | SysFile::UserReserve | SysFile::AdminReserve => {
            let sized = sizes.memory_limit.map(|m| vm_reserve(file, m / 1024));
            format!("{}\n", sized.unwrap_or(first))
        }
    }
}

/// What the kernel sizes a vm reserve to for `kb` KiB of memory:
/// min_free_kbytes is sqrt(16 * kb) within its bounds, the user and
/// admin reserves a 32nd of it up to their caps.
fn vm_reserve(file: SysFile, kb: u64) -> u64 {
    match file {
        SysFile::MinFree => kb
            .saturating_mul(16)
            .isqrt()
            .clamp(MIN_FREE_KB.0, MIN_FREE_KB.1),
        SysFile::UserReserve => (kb / 32).min(USER_RESERVE_KB),
        _ => (kb / 32).min(ADMIN_RESERVE_KB),
    }
}

/// The host's `host` value of a maximum proportional to memory, scaled to
/// the memory limit (kept within `bounds`, at most the host's).
fn scaled(host: u64, sizes: &Sizes, bounds: (u64, u64)) -> u64 {
    let (Some(limit), Some(total)) = (sizes.memory_limit, sizes.host_memory) else {
        return host;
    };
    if total == 0 {
        return host;
    }
    let v = u128::from(host) * u128::from(limit) / u128::from(total);
    let v = u64::try_from(v).unwrap_or(u64::MAX);
    v.clamp(bounds.0, bounds.1.max(bounds.0)).min(host)
}

/// file-max: the host's, or under a memory limit the kernel's own sizing
/// for that much memory (a tenth of it in KiB, at least NR_FILE).
fn file_max(host: u64, sizes: &Sizes) -> u64 {
    match sizes.memory_limit {
        Some(m) => host.min((m / 1024 / 10).max(NR_FILE)),
        None => host,
    }
}

/// `now` less `then`, field by field (at least 0), but the fields at
/// `kept` as they are now.
fn grown(now: &[u64], then: &[u64], kept: &[usize]) -> Vec<u64> {
    now.iter()
        .enumerate()
        .map(|(i, v)| match then.get(i) {
            Some(old) if !kept.contains(&i) => v.saturating_sub(*old),
            _ if kept.contains(&i) => *v,
            _ => 0,
        })
        .collect()
}

fn numbers(text: &str) -> Vec<u64> {
    text.split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect()
}

/// Values as the kernel prints these files: tab-separated, one line.
fn tabbed(values: &[u64]) -> String {
    let words: Vec<String> = values.iter().map(u64::to_string).collect();
    format!("{}\n", words.join("\t"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(memory_limit: Option<u64>, pids: Option<u64>) -> Sizes {
        Sizes {
            memory_limit,
            host_memory: Some(24 << 30),
            pids,
            open_files: 12,
        }
    }

    #[test]
    fn counts_are_the_sandboxs() {
        let base = SysBaseline {
            inode_nr: "1000\t10\n".to_owned(),
            dentry_state: "5000\t4000\t45\t0\t300\t0\n".to_owned(),
        };
        let none = sizes(None, None);
        let t = |f, host: &str, s: &Sizes| text(f, host, &base, s);
        assert_eq!(
            t(SysFile::FileNr, "718\t0\t2466193\n", &none),
            "12\t0\t2466193\n"
        );
        assert_eq!(t(SysFile::InodeNr, "1200\t5\n", &none), "200\t0\n");
        assert_eq!(
            t(SysFile::DentryState, "5100\t4100\t45\t0\t290\t0\n", &none),
            "100\t100\t45\t0\t0\t0\n"
        );
        assert_eq!(t(SysFile::Tainted, "16384\n", &none), "0\n");
        assert_eq!(t(SysFile::ThreadsMax, "192731\n", &none), "192731\n");
        assert_eq!(t(SysFile::FileMax, "2466193\n", &none), "2466193\n");
    }

    #[test]
    fn limits_size_the_kernels_maxima() {
        let base = SysBaseline::default();
        let mem = sizes(Some(256 << 20), None);
        let t = |f, host: &str, s: &Sizes| text(f, host, &base, s);
        assert_eq!(t(SysFile::ThreadsMax, "192731\n", &mem), "2048\n");
        assert_eq!(t(SysFile::FileMax, "2466193\n", &mem), "26214\n");
        assert_eq!(
            t(SysFile::FileNr, "718\t0\t2466193\n", &mem),
            "12\t0\t26214\n"
        );
        assert_eq!(
            t(SysFile::FileMax, "2466193\n", &sizes(Some(1 << 20), None)),
            "8192\n"
        );
        let both = sizes(Some(256 << 20), Some(64));
        assert_eq!(t(SysFile::ThreadsMax, "192731\n", &both), "64\n");
        assert_eq!(
            t(SysFile::ThreadsMax, "100\n", &sizes(Some(1 << 40), None)),
            "100\n"
        );
        assert_eq!(t(SysFile::ThreadsMax, "\n", &sizes(None, None)), "0\n");
        let quarter = sizes(Some(6 << 30), None);
        assert_eq!(t(SysFile::EpollWatches, "5491533\n", &quarter), "1372883\n");
        assert_eq!(t(SysFile::InotifyWatches, "192536\n", &quarter), "48134\n");
        assert_eq!(t(SysFile::InotifyWatches, "192536\n", &mem), "8192\n");
        assert_eq!(
            t(SysFile::InotifyWatches, "192536\n", &none_limit()),
            "192536\n"
        );
        // 256 MiB: sqrt(16 * 262144) KiB, and a 32nd of it (8 MiB).
        assert_eq!(t(SysFile::MinFree, "67584\n", &mem), "2048\n");
        assert_eq!(t(SysFile::UserReserve, "100409\n", &mem), "8192\n");
        assert_eq!(t(SysFile::AdminReserve, "8192\n", &mem), "8192\n");
        assert_eq!(t(SysFile::MinFree, "67584\n", &none_limit()), "67584\n");
        let tiny = sizes(Some(1 << 20), None);
        assert_eq!(t(SysFile::MinFree, "67584\n", &tiny), "128\n");
        assert_eq!(t(SysFile::UserReserve, "100409\n", &tiny), "32\n");
        let huge = sizes(Some(1 << 40), None);
        assert_eq!(t(SysFile::MinFree, "67584\n", &huge), "131072\n");
        assert_eq!(t(SysFile::UserReserve, "100409\n", &huge), "131072\n");
    }

    fn none_limit() -> Sizes {
        sizes(None, None)
    }

    #[test]
    fn served_paths() {
        assert_eq!(SysFile::at("/proc/sys/fs/file-nr"), Some(SysFile::FileNr));
        assert_eq!(
            SysFile::at("/proc/sys/kernel/tainted"),
            Some(SysFile::Tainted)
        );
        assert_eq!(
            SysFile::at("/proc/sys/vm/min_free_kbytes"),
            Some(SysFile::MinFree)
        );
        assert_eq!(SysFile::at("/proc/sys/kernel/hostname"), None);
        assert_eq!(SysFile::at("/tmp/sys/fs/file-nr"), None);
    }
}
