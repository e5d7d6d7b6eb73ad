//! Making `--rw` writes durable: after the guest ends, `syncfs` on the
//! file system of each `--rw` source, so that everything the guest wrote
//! there is on disk before the supervisor exits (a `docker run -v` user
//! expects the same of a finished container).
//!
//! Owns: opening the sources before launch (as the invoker, while their
//! paths still mean what the user meant; one descriptor per file system)
//! and the flush. Runs in the supervisor, after its own seccomp filter is
//! on: `syncfs` is on `confine.rs`'s allow list.

use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use vfs::mounts::{MountKind, MountSpec};

/// One open directory per file system that holds a `--rw` source.
#[derive(Debug, Default)]
pub struct RwFlush {
    fds: Vec<(String, OwnedFd)>,
}

impl RwFlush {
    /// Opens the `--rw` sources of `mounts` (a directory itself, a file by
    /// its parent directory: opening a device or FIFO to sync it could
    /// have effects). A source that cannot be opened is skipped: the
    /// launch reports it.
    pub fn open(mounts: &[MountSpec]) -> RwFlush {
        let mut fds = Vec::new();
        let mut devices = Vec::new();
        for m in mounts.iter().filter(|m| m.kind == MountKind::ReadWrite) {
            let Some(host) = &m.host else { continue };
            let dir = match std::fs::metadata(host) {
                Ok(meta) if meta.is_dir() => host.as_path(),
                Ok(_) => host.parent().unwrap_or(Path::new("/")),
                Err(_) => continue,
            };
            let Ok(file) = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
                .open(dir)
            else {
                continue;
            };
            let Ok(meta) = file.metadata() else { continue };
            if devices.contains(&meta.dev()) {
                continue;
            }
            devices.push(meta.dev());
            fds.push((m.label(), OwnedFd::from(file)));
        }
        RwFlush { fds }
    }

    /// `syncfs` on each; one warning per failure.
    pub fn flush(&self) -> Vec<String> {
        self.fds
            .iter()
            .filter_map(|(label, fd)| {
                nix::unistd::syncfs(fd.as_raw_fd())
                    .err()
                    .map(|e| format!("{label}: flushing writes to disk: {}", e.desc()))
            })
            .collect()
    }
}
