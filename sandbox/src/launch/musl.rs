//! Which commands are musl programs: those whose ELF program interpreter
//! (`PT_INTERP`) is musl's dynamic loader (`ld-musl-<arch>.so.1`).
//!
//! musl's loader reads no `/etc/ld.so.preload`; it maps what the
//! environment's `LD_PRELOAD` names and nothing else, so a musl command
//! gets the fast-reads preload only through its environment
//! (`fast_reads.rs` decides, with this module's answer).
//!
//! Owns: finding the executable a command names (the first of its
//! execvp candidates that is a regular file, resolved beneath a root with
//! `RESOLVE_IN_ROOT`, so a tree's symlink never leads out of it, or, from
//! inside a running sandbox, in the caller's own view with calls its
//! filter passes: [`Lookup`]) and
//! reading its interpreter from the ELF header, bounded and checked (the
//! file may be a stranger's). Does not own: the PATH search
//! (`exec.rs`), the environment (`fast_reads.rs`).

use std::fs::File;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::{fstat, SFlag};

use crate::sys::fd::{open_at, open_in_root, open_marked};

/// Program headers read at most; real programs have about a dozen.
const MAX_PHNUM: usize = 128;
/// The longest interpreter path read.
const MAX_INTERP: u64 = 4096;
const PT_INTERP: u32 = 3;

/// Where a command's program is looked up.
#[derive(Clone, Copy, Debug)]
pub enum Lookup<'a> {
    /// Beneath a root the caller holds open (the supervisor looking into a
    /// view or a tree): `openat2` with `RESOLVE_IN_ROOT`.
    Beneath(BorrowedFd<'a>),
    /// In the caller's own view, from inside a fenced sandbox (an exec
    /// request's helper, `exec_request.rs`), with calls its filter passes
    /// and no serviced one: an `O_PATH` open, `fstat`, and the read open
    /// made with the fast-read mark.
    OwnView,
}

impl Lookup<'_> {
    fn open(self, path: &Path, flags: OFlag) -> nix::Result<std::os::fd::OwnedFd> {
        match self {
            Lookup::Beneath(root) => open_in_root(root, path, flags),
            Lookup::OwnView if flags.contains(OFlag::O_PATH) => {
                open_at(None, path, flags, nix::sys::stat::Mode::empty())
            }
            Lookup::OwnView => open_marked(path, flags, sandbox_syscalls::policy::FAST_READ_MARK),
        }
    }
}

/// The first of `candidates` that is a regular file where `lookup` looks, with
/// the path it was found at (relative candidates taken from `workdir`,
/// or skipped without one) and the file open for reading; `None` when
/// none is, or that one cannot be read.
pub fn first_program<'a>(
    lookup: Lookup<'_>,
    candidates: impl IntoIterator<Item = &'a Path>,
    workdir: Option<&Path>,
) -> Option<(PathBuf, File)> {
    for candidate in candidates {
        let path = match (candidate.is_absolute(), workdir) {
            (true, _) => candidate.to_path_buf(),
            (false, Some(dir)) => dir.join(candidate),
            (false, None) => continue,
        };
        // O_PATH first: opening a FIFO or a device to read could block or
        // act; only a regular file is opened for reading.
        let Ok(at) = lookup.open(&path, OFlag::O_PATH) else {
            continue;
        };
        let regular = fstat(at.as_raw_fd())
            .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG);
        if regular != Ok(true) {
            continue;
        }
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        let fd = lookup.open(&path, flags).ok()?;
        return Some((path, File::from(fd)));
    }
    None
}

/// Whether an interpreter path is musl's loader: its file name starts
/// with `ld-musl-`.
pub(super) fn names_musl_loader(interp: &[u8]) -> bool {
    let name = interp.rsplit(|&b| b == b'/').next().unwrap_or(interp);
    name.starts_with(b"ld-musl-")
}

/// The interpreter path `PT_INTERP` names in a 64-bit little-endian ELF
/// file, without its NUL; `None` for any other file or a malformed one.
pub(super) fn interpreter(file: &File) -> Option<Vec<u8>> {
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // \x7fELF, ELFCLASS64, ELFDATA2LSB.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let phoff = u64::from_le_bytes(header[32..40].try_into().ok()?);
    let phentsize = usize::from(u16::from_le_bytes(header[54..56].try_into().ok()?));
    let phnum = usize::from(u16::from_le_bytes(header[56..58].try_into().ok()?));
    if phentsize < 56 || phnum > MAX_PHNUM {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.read_exact_at(&mut table, phoff).ok()?;
    for ph in table.chunks_exact(phentsize) {
        if u32::from_le_bytes(ph[..4].try_into().ok()?) != PT_INTERP {
            continue;
        }
        let offset = u64::from_le_bytes(ph[8..16].try_into().ok()?);
        let size = u64::from_le_bytes(ph[32..40].try_into().ok()?);
        if size == 0 || size > MAX_INTERP {
            return None;
        }
        let mut interp = vec![0u8; usize::try_from(size).ok()?];
        file.read_exact_at(&mut interp, offset).ok()?;
        let end = interp.iter().position(|&b| b == 0).unwrap_or(interp.len());
        interp.truncate(end);
        return Some(interp);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    /// A minimal ELF64 header and one PT_INTERP program header naming
    /// `interp`.
    fn elf_with_interp(interp: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 64 + 56];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[32..40].copy_from_slice(&64u64.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&1u16.to_le_bytes());
        let ph = &mut f[64..];
        ph[..4].copy_from_slice(&PT_INTERP.to_le_bytes());
        ph[8..16].copy_from_slice(&120u64.to_le_bytes());
        ph[32..40].copy_from_slice(&(interp.len() as u64 + 1).to_le_bytes());
        f.extend_from_slice(interp);
        f.push(0);
        f
    }

    /// Whether the first of `candidates` that is a regular file beneath
    /// `root` is a musl program. Relative candidates are taken from
    /// `workdir`, or skipped without one. A candidate that cannot be read
    /// (absent, not executable by us, not ELF) is passed over as execve
    /// would pass over an absent one, or ends the search.
    fn is_musl_program<'a>(
        root: BorrowedFd<'_>,
        candidates: impl IntoIterator<Item = &'a Path>,
        workdir: Option<&Path>,
    ) -> bool {
        first_program(Lookup::Beneath(root), candidates, workdir)
            .and_then(|(_, file)| interpreter(&file))
            .is_some_and(|i| names_musl_loader(&i))
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn reads_the_interpreter() {
        let f = file_of(&elf_with_interp(b"/lib/ld-musl-x86_64.so.1"));
        assert_eq!(interpreter(&f).unwrap(), b"/lib/ld-musl-x86_64.so.1");
        assert!(names_musl_loader(b"/lib/ld-musl-x86_64.so.1"));
        assert!(!names_musl_loader(b"/lib64/ld-linux-x86-64.so.2"));
    }

    #[test]
    fn malformed_files_have_none() {
        assert_eq!(interpreter(&file_of(b"#!/bin/sh\n")), None);
        let mut bad = elf_with_interp(b"/lib/ld-musl-x86_64.so.1");
        bad[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(interpreter(&file_of(&bad)), None);
        let mut huge = elf_with_interp(b"x");
        huge[64 + 32..64 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(interpreter(&file_of(&huge)), None);
        let mut many = elf_with_interp(b"x");
        many[56..58].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(interpreter(&file_of(&many)), None);
    }

    #[test]
    fn finds_the_first_regular_candidate_in_the_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("bin")).unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::fs::write(
            root.path().join("bin/prog"),
            elf_with_interp(b"/lib/ld-musl-x86_64.so.1"),
        )
        .unwrap();
        // A symlink out of the tree resolves beneath it.
        std::os::unix::fs::symlink("/bin/prog", root.path().join("sub/link")).unwrap();
        let dir = File::open(root.path()).unwrap();
        let fd = dir.as_fd();
        fn paths(p: &[&'static str]) -> Vec<&'static Path> {
            p.iter().map(|s| Path::new(*s)).collect()
        }
        assert!(is_musl_program(
            fd,
            paths(&["/nowhere/prog", "/bin/prog"]),
            None
        ));
        assert!(is_musl_program(fd, paths(&["/sub/link"]), None));
        assert!(is_musl_program(
            fd,
            paths(&["prog"]),
            Some(Path::new("/bin"))
        ));
        assert!(!is_musl_program(fd, paths(&["prog"]), None));
        // A directory is passed over, as execve passes over it.
        assert!(!is_musl_program(fd, paths(&["/sub"]), None));
    }
}
