//! Which file systems are the host's: those whose device a mount of the
//! supervisor's own mount table (the host's, `/proc/self/mountinfo`)
//! names, but the view's root — the sandbox's layer, or an OCI
//! container's root file system, which is that container's alone.
//!
//! The sandbox's layer, its overlays of /etc, its procfs and `--tmpfs`
//! mounts exist only in the sandbox's mount namespace, so the host's table
//! does not name them. What the host does name is shared with the host and
//! every other sandbox: /usr and the other read-only binds, `--ro` and
//! `--rw` mounts, the device nodes of /dev, a redirected stdout.
//!
//! Owns only this decision, for `setid` (no set-id programs made there)
//! and `notify` (no watching others' reads there), and the cache of the
//! host's devices behind it. The host mounts and unmounts while a sandbox
//! runs, and a read of the table costs about 65 µs (a watcher adding
//! inotify watches on a tree asks once per directory), so the devices are
//! kept with the open table they were read from: the kernel marks such a
//! descriptor `POLLPRI` once the mount table has changed since it was
//! opened or last polled, and only then is the table read again (one
//! `poll` otherwise, about 1 µs).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use parking_lot::Mutex;

/// The supervisor's own mount table: the host's.
static HOST: Mounts = Mounts::at("/proc/self/mountinfo");

/// Whether the file system of device `dev` is the host's. `root_dev`: the
/// device of the view's root, never counted as the host's. A table that
/// cannot be read counts every other file system as the host's.
pub(super) fn is_hosts(dev: u64, root_dev: u64) -> bool {
    dev != root_dev && HOST.name(dev)
}

/// One mount table (a `mountinfo` file) and what was last read of it.
struct Mounts {
    path: &'static str,
    last: Mutex<Option<Table>>,
}

/// A reading of the table: the descriptor it was read through, polled for
/// changes since, and the devices it named.
struct Table {
    file: File,
    devices: Vec<(u64, u64)>,
}

impl Mounts {
    const fn at(path: &'static str) -> Self {
        Mounts {
            path,
            last: parking_lot::const_mutex(None),
        }
    }

    /// Whether the table names device `dev`, read again if it changed
    /// since the last reading; true when it cannot be read.
    fn name(&self, dev: u64) -> bool {
        let want = (u64::from(libc::major(dev)), u64::from(libc::minor(dev)));
        let mut last = self.last.lock();
        if last.as_ref().is_none_or(|t| t.changed()) {
            *last = self.read();
        }
        last.as_ref().is_none_or(|t| t.devices.contains(&want))
    }

    /// A fresh reading, or None when the table cannot be read (or is
    /// empty, as no real table is). Opened before it is read, so that a
    /// change during the read marks the new descriptor.
    fn read(&self) -> Option<Table> {
        let mut file = File::open(self.path).ok()?;
        let mut text = String::with_capacity(16 << 10);
        file.read_to_string(&mut text).ok()?;
        let devices = devices(&text);
        (!devices.is_empty()).then_some(Table { file, devices })
    }
}

impl Table {
    /// Whether the mount table changed since this reading (an error of
    /// the poll counts as a change).
    fn changed(&self) -> bool {
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLPRI)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => fds[0]
                .revents()
                .is_none_or(|r| r.intersects(PollFlags::POLLPRI | PollFlags::POLLERR)),
            Err(_) => true,
        }
    }
}

/// The devices `mountinfo` names: each line's third field, `major:minor`.
fn devices(mountinfo: &str) -> Vec<(u64, u64)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (major, minor) = line.split(' ').nth(2)?.split_once(':')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    const TABLE: &str = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                         30 22 0:26 / /tmp rw shared:5 - tmpfs tmpfs rw\n";

    #[test]
    fn the_devices_a_table_names() {
        assert_eq!(devices(TABLE), [(254, 0), (0, 26)]);
        assert!(devices("garbage\n\n1 2\n1 2 x:y\n").is_empty());
    }

    #[test]
    fn the_view_s_root_is_never_the_hosts() {
        let st = std::fs::metadata("/").unwrap();
        assert!(is_hosts(st.dev(), 0), "the supervisor's / is the host's");
        assert!(!is_hosts(st.dev(), st.dev()));
        assert!(!is_hosts(libc::makedev(4095, 1 << 19), 0));
    }

    #[test]
    fn an_unreadable_table_counts_all_as_the_hosts() {
        let missing = Mounts::at("/proc/self/no-such-table");
        assert!(missing.name(libc::makedev(4095, 1 << 19)));
    }

    /// A mount made and removed after a reading is seen both times. In a
    /// thread of its own mount namespace (`thread-self`: `/proc/self` is
    /// the process's), as root only.
    #[test]
    fn a_change_of_the_table_is_read_again() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: mounting needs root");
            return;
        }
        std::thread::spawn(|| {
            use nix::mount::{mount, umount, MsFlags};
            use nix::sched::{unshare, CloneFlags};
            unshare(CloneFlags::CLONE_NEWNS).unwrap();
            let none: Option<&str> = None;
            mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let mounts = Mounts::at("/proc/thread-self/mountinfo");
            let before = std::fs::metadata(dir.path()).unwrap().dev();
            assert!(mounts.name(before));
            mount(
                Some("tmpfs"),
                dir.path(),
                Some("tmpfs"),
                MsFlags::empty(),
                none,
            )
            .unwrap();
            let made = std::fs::metadata(dir.path()).unwrap().dev();
            assert!(mounts.name(made), "a mount made after the first reading");
            umount(dir.path()).unwrap();
            assert!(!mounts.name(made), "a mount gone since the last reading");
            let unchanged = mounts.last.lock().as_ref().map(|t| t.changed());
            assert_eq!(unchanged, Some(false));
        })
        .join()
        .unwrap();
    }
}
