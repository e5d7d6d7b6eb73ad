//! The served file a rewind rewrites in place: `/proc/stat`, whose
//! figures change at every read (and which `ps` rewinds twice), in a
//! memfd the guest can never write, so that a rewind (`lseek(fd, 0, SEEK_SET)`)
//! renders the fresh text into the same file and the kernel itself then
//! seeks. As on procfs, the fresh text is that open file description's:
//! a `dup` of it, or a forked child's copy, reads it too and shares the
//! offset. The swap of `handlers/lseek.rs` (a new sealed memfd put at the
//! guest's number) costs a memfd's creation, writing, mode and seals, its
//! reopen, the guest descriptor's flags read, an ADDFD (the guest woken
//! twice) and the old memfd's release; this costs a `pwrite` and an
//! `ftruncate`.
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
//! would be the guest's. So [`SPARES`] of them are made with the
//! supervisor's ids when the sandbox's handlers are (each one's owner
//! checked; a memfd's name is fixed at its creation: `stat`), and an
//! open of `/proc/stat` takes one;
//! once they are spent, the files are sealed and swapped as before.
//!
//! The supervisor keeps each such memfd open for writing (at most
//! [`SPARES`] a sandbox), and a rewind is recognised by the (device, inode) of the guest's file
//! against these: a kept descriptor pins its inode, so a match is that
//! very file, whatever its name says.
//!
//! Owns: making these memfds, keeping them, and rewriting one. Does not
//! own: the texts (`served.rs` renders them), the rewind's trap
//! (`handlers/lseek.rs`), or the sealed files of every other served text
//! (`sealed.rs`).

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::stat::{fchmod, Mode};

/// How many memfds a sandbox makes ready at its start: `ps` opens
/// `/proc/stat` once, `vmstat 1` and `top` once too.
pub const SPARES: usize = 2;

/// The memfd name of the file served in place.
const NAME: &CStr = c"stat";

/// The memfds of one sandbox's served files a rewind rewrites.
#[derive(Debug, Default)]
pub struct InPlace {
    /// Whether the guest's user namespace leaves the supervisor's id
    /// unmapped (see the module's doc).
    allowed: bool,
    /// Memfds made with the supervisor's ids, mode 0444, empty.
    spares: Mutex<Vec<OwnedFd>>,
    kept: Mutex<Vec<Kept>>,
}

#[derive(Debug)]
struct Kept {
    /// (device, inode) of the memfd.
    id: (u64, u64),
    /// The memfd open for writing.
    mem: OwnedFd,
    /// Its memfd name (`stat`).
    name: String,
}

impl InPlace {
    /// For a guest whose user namespace maps ids as `uid_map` says (the
    /// view's `/proc/1/uid_map`, as this process reads it; `None` when
    /// unread). Call it with the supervisor's own ids: it makes the
    /// spares.
    pub fn new(uid_map: Option<&str>) -> InPlace {
        let euid = nix::unistd::geteuid().as_raw();
        let allowed = uid_map.is_some_and(|map| !maps(map, euid));
        let spares = match allowed {
            true => (0..SPARES).map_while(|_| spare(euid)).collect(),
            false => Vec::new(),
        };
        InPlace {
            allowed,
            spares: Mutex::new(spares),
            kept: Mutex::default(),
        }
    }

    /// A memfd named `name` holding `data`, kept to be rewritten in place,
    /// opened read-only with `extra` open flags; `None` when this sandbox
    /// does not rewrite in place or its spares are spent (the caller
    /// seals one instead).
    pub fn file(&self, name: &CStr, data: &[u8], extra: i32) -> Option<Result<OwnedFd, Errno>> {
        if !self.allowed || name != NAME {
            return None;
        }
        let mem = self
            .spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()?;
        Some(self.make(mem, name, data, extra))
    }

    fn make(&self, mem: OwnedFd, name: &CStr, data: &[u8], extra: i32) -> Result<OwnedFd, Errno> {
        write_text(&mem, data)?;
        let st = vfs::sys::fstat(mem.as_fd())?;
        let fd = super::own_fds::reopen(mem.as_fd(), libc::O_RDONLY | extra)?;
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let name = name.to_string_lossy().into_owned();
        kept.push(Kept {
            id: (st.st_dev, st.st_ino),
            mem,
            name,
        });
        Ok(fd)
    }

    /// Rewrites with `text()` the kept memfd named `name` that `file` (the
    /// guest's) is; `None` when `file` is none of them.
    pub fn rewrite(
        &self,
        name: &str,
        file: &OwnedFd,
        text: impl FnOnce() -> Result<String, Errno>,
    ) -> Option<Result<(), Errno>> {
        if !self.allowed {
            return None;
        }
        let st = vfs::sys::fstat(file.as_fd()).ok()?;
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let mem = kept
            .iter()
            .find(|k| k.id == (st.st_dev, st.st_ino) && k.name == name)?;
        Some(text().and_then(|text| write_text(&mem.mem, text.as_bytes())))
    }
}

/// An empty memfd named as the file it serves ([`NAME`]), mode 0444,
/// when it is owned by `euid`.
fn spare(euid: u32) -> Option<OwnedFd> {
    let mem = memfd_create(NAME, MemFdCreateFlag::MFD_CLOEXEC).ok()?;
    fchmod(mem.as_raw_fd(), Mode::from_bits_truncate(0o444)).ok()?;
    let st = vfs::sys::fstat(mem.as_fd()).ok()?;
    (st.st_uid == euid).then_some(mem)
}

/// Writes `data` over `mem`'s text from its start, and cuts it there.
fn write_text(mem: &OwnedFd, data: &[u8]) -> Result<(), Errno> {
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
    nix::unistd::ftruncate(mem, data.len() as libc::off_t)
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
        let longer = || Ok("cpu 10 20\nbtime 5\n".to_owned());
        assert_eq!(in_place.rewrite("stat", &fd, longer), Some(Ok(())));
        assert_eq!(text_of(&dup), "cpu 10 20\nbtime 5\n");
        let shorter = || Ok("cpu 3\n".to_owned());
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
    }
}
