//! The served files a rewind rewrites in place: `/proc/stat`, whose
//! figures change at every read (and which `ps` rewinds twice), and, in a
//! sandbox set up before its command, its first `/proc/uptime` and
//! processes' `status`, in
//! memfds the guest can never write, so that a rewind (`lseek(fd, 0,
//! SEEK_SET)`) renders the fresh text into the same file and the kernel
//! itself then seeks. As on procfs, the fresh text is that open file
//! description's: a `dup` of it, or a forked child's copy, reads it too
//! and shares the offset. The swap of `handlers/lseek.rs` (a new sealed
//! memfd put at the guest's number) costs a memfd's creation, writing,
//! mode and seals, its reopen, the guest descriptor's flags read, an ADDFD
//! (the guest woken twice) and the old memfd's release; this costs a
//! `pwrite` (and an `ftruncate` after a shorter text).
//!
//! When: only where the guest cannot change the memfd by any means. It
//! is made without `MFD_ALLOW_SEALING` (so sealed against new seals),
//! mode 0444, and owned by the supervisor's id; a process may write it
//! only by opening it for writing (`/proc/self/fd/N`), which mode 0444
//! refuses to all but a holder of `CAP_DAC_OVERRIDE` over its owner, or by
//! changing its mode first, which only its owner can. So the supervisor's
//! id must not be one the guest's user namespace maps (`/proc/1/uid_map`
//! of the view, read once): a root supervisor mapping guest ids onto a
//! subordinate range. An unprivileged one maps its own id into the guest,
//! which could then `fchmod` the memfd: there, and wherever the map cannot
//! be read, the files stay sealed and a rewind swaps them.
//!
//! The memfd must be the supervisor's own: a worker serving a call takes
//! the caller's filesystem ids (`trap/creds.rs`), and a memfd it made
//! would be the guest's. So spares are made with the supervisor's ids:
//! [`SPARES`] for `/proc/stat` when the sandbox's handlers are (each
//! one's owner checked; a memfd's name is fixed at its creation: `stat`),
//! and, for a sandbox set up before its command (a pool's, a session's:
//! [`InPlace::warm`], on the set-up's time), more of them, some for
//! `/proc/uptime`, and [`WARM_STATUS`] for `status` (all named `status`:
//! the processes do not exist yet; the process each serves is kept beside
//! it), each opened read-only ahead ([`FILES`]). An open of one of these
//! files takes one; once they are spent, the files are sealed and swapped
//! as before.
//!
//! The supervisor keeps each such memfd open for writing (at most
//! the sum of [`FILES`]' counts a sandbox), and a rewind is recognised
//! by the (device, inode) of the guest's file against these: a kept
//! descriptor pins its inode, so a match is that very file, whatever its
//! name says.
//!
//! Owns: making these memfds, keeping them, and rewriting one. Does not
//! own: the texts (`served.rs` renders them, `rewound.rs` again), the
//! rewind's trap (`handlers/lseek.rs`), or the sealed files of every other
//! served text (`sealed.rs`).

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::stat::{fchmod, Mode};

/// How many `/proc/stat` memfds every sandbox makes ready at its start:
/// `ps` opens `/proc/stat` once, `vmstat 1` and `top` once too.
pub const SPARES: usize = 2;

/// How many `/proc/stat` memfds a sandbox set up before its command (a
/// pool's, a session's: [`InPlace::warm`]) has ready: a psutil process
/// scan opens it four times.
const WARM_STAT: usize = 4;

/// How many `status` memfds such a sandbox has ready: `ps aux` opens
/// five for its two processes (its own twice first).
const WARM_STATUS: usize = 8;

/// How many `/proc/uptime` memfds such a sandbox has ready: `ps` opens
/// it twice.
const WARM_UPTIME: usize = 2;

/// The memfd name of `/proc/stat` served in place.
const STAT: &CStr = c"stat";

/// The memfd name of a process's `status` served in place: one name for
/// every process (a memfd's name is fixed at its creation, and the
/// spares are made before the processes exist); the process is kept
/// beside the memfd ([`Kept::name`]).
const STATUS: &CStr = c"status";

/// The served name of a process's `status` (`status:PID[:TID]`,
/// `tasks::ProcessFile::memfd_name`) starts so.
const STATUS_OF: &str = "status:";

/// The memfd name of `/proc/uptime` served in place.
const UPTIME: &CStr = c"uptime";

/// The files served in place, by the memfd name of their spares, and
/// how many spares a sandbox set up ahead has of each.
const FILES: [(&CStr, usize); 3] = [
    (STAT, WARM_STAT),
    (STATUS, WARM_STATUS),
    (UPTIME, WARM_UPTIME),
];

/// The memfds of one sandbox's served files a rewind rewrites.
#[derive(Debug, Default)]
pub struct InPlace {
    /// Whether the guest's user namespace leaves the supervisor's id
    /// unmapped (see the module's doc).
    allowed: bool,
    /// Memfds made with the supervisor's ids, mode 0444, empty.
    spares: Mutex<Spares>,
    kept: Mutex<Vec<Kept>>,
}

/// The empty memfds ready, by the file they will serve (as [`FILES`]).
#[derive(Debug, Default)]
struct Spares([Vec<Spare>; FILES.len()]);

/// An empty memfd open for writing; once [`InPlace::warm`] readied it,
/// also its read-only open and identity, so that serving it costs one
/// `pwrite`.
#[derive(Debug)]
struct Spare {
    mem: OwnedFd,
    opened: Option<Opened>,
}

#[derive(Debug)]
struct Opened {
    /// The memfd opened read-only (`O_RDONLY`, close-on-exec here).
    read_only: OwnedFd,
    /// (device, inode) of the memfd.
    id: (u64, u64),
}

#[derive(Debug)]
struct Kept {
    /// (device, inode) of the memfd.
    id: (u64, u64),
    /// The memfd open for writing.
    mem: OwnedFd,
    /// The name of the file it serves (`stat`, `status:2`), whose text a
    /// rewind writes.
    name: String,
    /// The length of its text (only this process writes it): a rewind
    /// cuts the memfd only after a shorter text.
    len: usize,
}

impl InPlace {
    /// For a guest whose user namespace maps ids as `uid_map` says (the
    /// view's `/proc/1/uid_map`, as this process reads it; `None` when
    /// unread). Call it with the supervisor's own ids: it makes the
    /// spares.
    pub fn new(uid_map: Option<&str>) -> InPlace {
        let euid = nix::unistd::geteuid().as_raw();
        let allowed = uid_map.is_some_and(|map| !maps(map, euid));
        let mut spares = Spares::default();
        if allowed {
            spares.0[0] = (0..SPARES).map_while(|_| spare(STAT, euid)).collect();
        }
        InPlace {
            allowed,
            spares: Mutex::new(spares),
            kept: Mutex::default(),
        }
    }

    /// For a sandbox set up before its command: makes the spares a
    /// command's first `/proc/stat`, `status` and `/proc/uptime` opens
    /// take ([`FILES`]) and opens each read-only ahead,
    /// so that an open of one costs a `pwrite`, not also the `fstat`,
    /// the reopen and its `getpid`. Call it with the supervisor's own ids.
    pub fn warm(&self) {
        if !self.allowed {
            return;
        }
        let euid = nix::unistd::geteuid().as_raw();
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        for (list, &(name, wanted)) in spares.0.iter_mut().zip(&FILES) {
            while list.len() < wanted {
                let Some(spare) = spare(name, euid) else {
                    break;
                };
                list.push(spare);
            }
            for spare in list.iter_mut() {
                spare.ready();
            }
        }
    }

    /// A memfd serving the file named `name` (`stat`, `uptime`, or a
    /// process's `status:PID[:TID]`) with `data`, kept to be rewritten in place,
    /// opened read-only with `extra` open flags; `None` when this sandbox
    /// does not rewrite that file in place or its spares of it are spent
    /// (the caller seals one instead).
    pub fn file(&self, name: &CStr, data: &[u8], extra: i32) -> Option<Result<OwnedFd, Errno>> {
        if !self.allowed {
            return None;
        }
        let name = name.to_str().ok()?;
        let of = memfd_name_of(name)?;
        let spare = {
            let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
            let at = FILES.iter().position(|f| f.0 == of)?;
            spares.0[at].pop()?
        };
        Some(self.make(spare, name, data, extra))
    }

    fn make(&self, spare: Spare, name: &str, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
        let Spare { mem, opened } = spare;
        // A spare is empty: the text needs no cut after it.
        write_over(&mem, data)?;
        let (fd, id) = match opened {
            Some(opened) if extra == 0 => (opened.read_only, opened.id),
            _ => {
                let st = vfs::sys::fstat(mem.as_fd())?;
                let fd = super::own_fds::reopen(mem.as_fd(), libc::O_RDONLY | extra)?;
                (fd, (st.st_dev, st.st_ino))
            }
        };
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.push(Kept {
            id,
            mem,
            name: name.to_owned(),
            len: data.len(),
        });
        Ok(fd)
    }

    /// Whether a memfd named `memfd_name` may be one of these (the
    /// names their memfds are made with).
    pub fn may_be(memfd_name: &str) -> bool {
        FILES
            .iter()
            .any(|f| f.0.to_bytes() == memfd_name.as_bytes())
    }

    /// Rewrites the kept memfd that `file` (the guest's, whose memfd is
    /// named `memfd_name`) is, with the text `text` gives for the name of
    /// the file it serves (`stat`, `uptime`, `status:2`; `Ok(None)`: keep the text it
    /// has); `None` when `file` is none of them.
    pub fn rewrite(
        &self,
        memfd_name: &str,
        file: &OwnedFd,
        text: impl FnOnce(&str) -> Result<Option<String>, Errno>,
    ) -> Option<Result<(), Errno>> {
        if !self.allowed || !Self::may_be(memfd_name) {
            return None;
        }
        let st = vfs::sys::fstat(file.as_fd()).ok()?;
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let file = kept.iter_mut().find(|k| {
            k.id == (st.st_dev, st.st_ino)
                && memfd_name_of(&k.name).is_some_and(|n| n.to_bytes() == memfd_name.as_bytes())
        })?;
        Some(text(&file.name).and_then(|text| match text {
            Some(text) => file.write(text.as_bytes()),
            None => Ok(()),
        }))
    }
}

impl Kept {
    /// Writes `data` over the text, cut after it when it is shorter (a
    /// `pwrite`, and an `ftruncate` then only).
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        // Unknown until the write is done: a failed one may leave more.
        let before = std::mem::replace(&mut self.len, usize::MAX);
        write_over(&self.mem, data)?;
        if data.len() < before {
            nix::unistd::ftruncate(&self.mem, data.len() as libc::off_t)?;
        }
        self.len = data.len();
        Ok(())
    }
}

/// The memfd name a file named `name` (`stat`, `uptime`, a process's
/// `status:PID[:TID]`) is served in place under; `None` for a file not
/// served in place.
fn memfd_name_of(name: &str) -> Option<&'static CStr> {
    match name.starts_with(STATUS_OF) {
        true => Some(STATUS),
        false => FILES
            .iter()
            .map(|f| f.0)
            .find(|&n| n != STATUS && n.to_bytes() == name.as_bytes()),
    }
}

impl Spare {
    /// Opens the memfd read-only now, and takes its identity.
    fn ready(&mut self) {
        if self.opened.is_some() {
            return;
        }
        let Ok(st) = vfs::sys::fstat(self.mem.as_fd()) else {
            return;
        };
        if let Ok(read_only) = super::own_fds::reopen(self.mem.as_fd(), libc::O_RDONLY) {
            let id = (st.st_dev, st.st_ino);
            self.opened = Some(Opened { read_only, id });
        }
    }
}

/// An empty memfd named `name`, mode 0444, when it is owned by `euid`.
fn spare(name: &CStr, euid: u32) -> Option<Spare> {
    let mem = memfd_create(name, MemFdCreateFlag::MFD_CLOEXEC).ok()?;
    fchmod(mem.as_raw_fd(), Mode::from_bits_truncate(0o444)).ok()?;
    let st = vfs::sys::fstat(mem.as_fd()).ok()?;
    (st.st_uid == euid).then_some(Spare { mem, opened: None })
}

/// Writes `data` over `mem`'s text from its start.
fn write_over(mem: &OwnedFd, data: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < data.len() {
        let rest = data.get(done..).unwrap_or_default();
        match nix::sys::uio::pwrite(mem, rest, done as libc::off_t) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether the `uid_map` text maps host id `id` (its second column, with
/// the third's count).
fn maps(uid_map: &str, id: u32) -> bool {
    uid_map.lines().any(|line| {
        let mut f = line.split_whitespace().skip(1).map(str::parse::<u64>);
        match (f.next(), f.next()) {
            (Some(Ok(first)), Some(Ok(count))) => (first..first + count).contains(&u64::from(id)),
            // A line not understood: taken as mapping it.
            _ => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_maps_are_read_by_their_host_ids() {
        assert!(maps("0 100000 65536\n", 100_000));
        assert!(maps("0 100000 65536\n", 165_535));
        assert!(!maps("0 100000 65536\n", 0));
        assert!(!maps("0 100000 65536\n", 165_536));
        assert!(maps("1000 1000 1\n", 1000));
        assert!(maps("0 0 4294967295\n", 0));
        assert!(maps("garbage\n", 0));
        assert!(!maps("", 0));
        let me = nix::unistd::geteuid().as_raw();
        assert!(!InPlace::new(None).allowed);
        assert!(!InPlace::new(Some(&format!("0 {me} 1\n"))).allowed);
    }

    fn text_of(fd: &OwnedFd) -> String {
        let mut buf = vec![0u8; 256];
        let n = nix::sys::uio::pread(fd, &mut buf, 0).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn a_kept_file_is_rewritten_for_every_holder_and_none_can_write_it() {
        let me = nix::unistd::geteuid().as_raw();
        let other = me.wrapping_add(100_000);
        let in_place = InPlace::new(Some(&format!("0 {other} 65536\n")));
        assert!(in_place.allowed);
        let fd = in_place.file(c"stat", b"cpu 1 2\n", 0).unwrap().unwrap();
        let dup = fd.try_clone().unwrap();
        assert_eq!(text_of(&fd), "cpu 1 2\n");
        let longer = |_: &str| Ok(Some("cpu 10 20\nbtime 5\n".to_owned()));
        assert_eq!(in_place.rewrite("stat", &fd, longer), Some(Ok(())));
        assert_eq!(text_of(&dup), "cpu 10 20\nbtime 5\n");
        let shorter = |_: &str| Ok(Some("cpu 3\n".to_owned()));
        assert_eq!(in_place.rewrite("stat", &dup, shorter), Some(Ok(())));
        assert_eq!(text_of(&fd), "cpu 3\n");
        // Another name, or another file: not ours to rewrite.
        assert!(in_place.rewrite("vmstat", &fd, shorter).is_none());
        let plain: OwnedFd = std::fs::File::open("/proc/self/stat").unwrap().into();
        assert!(in_place.rewrite("stat", &plain, shorter).is_none());
        // Read-only, mode 0444, and no seal can be added to it.
        assert_eq!(nix::unistd::write(&fd, b"x"), Err(Errno::EBADF));
        let st = vfs::sys::fstat(fd.as_fd()).unwrap();
        assert_eq!(st.st_mode & 0o7777, 0o444);
        let seal = nix::fcntl::FcntlArg::F_ADD_SEALS(nix::fcntl::SealFlag::F_SEAL_WRITE);
        assert_eq!(nix::fcntl::fcntl(fd.as_raw_fd(), seal), Err(Errno::EPERM));
        // Another name is sealed; once the spares are spent, so is stat.
        assert!(in_place.file(c"vmstat", b"", 0).is_none());
        for _ in 1..SPARES {
            in_place.file(c"stat", b"", 0).unwrap().unwrap();
        }
        assert!(in_place.file(c"stat", b"", 0).is_none());
        assert_eq!(in_place.rewrite("stat", &fd, shorter), Some(Ok(())));
        // No status or uptime spares but in a warmed sandbox.
        assert!(in_place.file(c"status:2", b"Name:\tps\n", 0).is_none());
        assert!(in_place.file(c"uptime", b"1.00 2.00\n", 0).is_none());
    }

    #[test]
    fn a_warmed_sandbox_serves_its_first_statuses_in_place() {
        let me = nix::unistd::geteuid().as_raw();
        let other = me.wrapping_add(100_000);
        let in_place = InPlace::new(Some(&format!("0 {other} 65536\n")));
        in_place.warm();
        let fd = in_place
            .file(c"status:2", b"Name:\tps\n", 0)
            .unwrap()
            .unwrap();
        let other_fd = in_place
            .file(c"status:1", b"Name:\tinit\n", libc::O_NONBLOCK)
            .unwrap()
            .unwrap();
        let flags = nix::fcntl::fcntl(other_fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(
            flags & (libc::O_ACCMODE | libc::O_NONBLOCK),
            libc::O_RDONLY | libc::O_NONBLOCK
        );
        assert_eq!(text_of(&fd), "Name:\tps\n");
        let mut link = [0u8; 64];
        let n = vfs::sys::fd_path(fd.as_fd(), &mut link).unwrap();
        assert_eq!(&link[..n], b"/memfd:status (deleted)");
        // A rewind is told which process the memfd serves.
        let mut asked = String::new();
        let fresh = |name: &str| {
            asked = name.to_owned();
            Ok(Some("Name:\tps\nState:\tR\n".to_owned()))
        };
        assert_eq!(in_place.rewrite("status", &fd, fresh), Some(Ok(())));
        assert_eq!(asked, "status:2");
        assert_eq!(text_of(&fd), "Name:\tps\nState:\tR\n");
        // A process gone: the text stays.
        assert_eq!(in_place.rewrite("status", &fd, |_| Ok(None)), Some(Ok(())));
        assert_eq!(text_of(&fd), "Name:\tps\nState:\tR\n");
        // Another memfd name is not this file.
        assert!(in_place.rewrite("stat", &fd, |_| Ok(None)).is_none());
        assert_eq!(nix::unistd::write(&fd, b"x"), Err(Errno::EBADF));
        // Only served names take spares; once spent, statuses are sealed.
        assert!(in_place.file(c"status", b"", 0).is_none());
        for _ in 2..WARM_STATUS {
            in_place.file(c"status:3", b"", 0).unwrap().unwrap();
        }
        assert!(in_place.file(c"status:3", b"", 0).is_none());
        for _ in 0..WARM_STAT {
            in_place.file(c"stat", b"cpu 1\n", 0).unwrap().unwrap();
        }
        assert!(in_place.file(c"stat", b"", 0).is_none());
        let up = in_place
            .file(c"uptime", b"1.00 2.00\n", 0)
            .unwrap()
            .unwrap();
        let again = |_: &str| Ok(Some("1.01 2.02\n".to_owned()));
        assert_eq!(in_place.rewrite("uptime", &up, again), Some(Ok(())));
        assert_eq!(text_of(&up), "1.01 2.02\n");
        for _ in 1..WARM_UPTIME {
            in_place.file(c"uptime", b"", 0).unwrap().unwrap();
        }
        assert!(in_place.file(c"uptime", b"", 0).is_none());
    }
}
