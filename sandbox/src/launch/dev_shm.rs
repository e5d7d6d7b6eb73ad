//! The guest's /dev/shm, where POSIX shared memory (`shm_open`) and
//! named semaphores (`sem_open`) live: by default a directory of the
//! sandbox's layer (`run`'s: the `--disk` tmpfs, the sandbox's alone);
//! for an OCI container, the one its engine gives: a bind of the tmpfs
//! the engine made (Docker's `--ipc shareable` and `--ipc container:X`,
//! the pod sandbox's shm that Kubernetes binds into every container of
//! a pod, Podman's), so that the containers binding one source share
//! their objects, or a tmpfs of the size config.json asks for (Docker's
//! private IPC with `--shm-size`).
//!
//! Owns: the choice ([`DevShm`]), opening the engine's source while the
//! host's paths still mean what the engine meant, and the mount at
//! /dev/shm. Does not own the rest of /dev (`dev_view.rs`), nor the
//! idmapped copy of the source (`idmapped.rs`, [`IdmappedSources::dev_shm`]).
//!
//! [`IdmappedSources::dev_shm`]: super::idmapped::IdmappedSources::dev_shm

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::MsFlags;
use serde::{Deserialize, Serialize};

use super::bind::{attach_copy, bind, ensure_in_root, mount_tmpfs, open_source};

type Result<T> = std::result::Result<T, String>;

/// Where /dev/shm is in the view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DevShm {
    /// A directory of the sandbox's layer, shared with no one.
    #[default]
    Layer,
    /// This host directory (the engine's shm tmpfs), bound: what the
    /// guest makes there is the other binders' too.
    Bind {
        host: PathBuf,
        read_only: bool,
        no_exec: bool,
    },
    /// A tmpfs of its own, of `size` bytes (`None`: the kernel's default,
    /// half the host's memory, as a tmpfs without `size=` natively).
    Tmpfs { size: Option<u64>, no_exec: bool },
}

impl DevShm {
    /// The MOUNT_ATTR_* flags of the engine's source besides nosuid and
    /// nodev (for its idmapped copy).
    pub(super) fn copy_attrs(&self) -> u64 {
        let (read_only, no_exec) = match self {
            DevShm::Bind {
                read_only, no_exec, ..
            } => (*read_only, *no_exec),
            _ => (false, false),
        };
        let mut attrs = 0;
        if read_only {
            attrs |= libc::MOUNT_ATTR_RDONLY;
        }
        if no_exec {
            attrs |= libc::MOUNT_ATTR_NOEXEC;
        }
        attrs
    }
}

/// The engine's directory (`O_PATH`), opened before the pivot.
pub(super) fn open_engine_source(shm: &DevShm) -> Result<Option<OwnedFd>> {
    match shm {
        DevShm::Bind { host, .. } => open_source(host, true)
            .map(Some)
            .map_err(|e| format!("/dev/shm: {}: {}", host.display(), e.desc())),
        DevShm::Layer | DevShm::Tmpfs { .. } => Ok(None),
    }
}

/// Mounts the engine's /dev/shm at /dev/shm of the view (`root`), whose
/// /dev has the directory: the idmapped copy of its source when one was
/// made (`copy`), else a bind of `src`; or a tmpfs. Nothing for
/// [`DevShm::Layer`] (`dev_view.rs` binds the layer's).
pub(super) fn mount(
    root: BorrowedFd<'_>,
    shm: &DevShm,
    src: Option<&OwnedFd>,
    copy: Option<&OwnedFd>,
) -> Result<()> {
    let guest = Path::new("/dev/shm");
    let exec_flag = |no_exec: bool| match no_exec {
        true => MsFlags::MS_NOEXEC,
        false => MsFlags::empty(),
    };
    let r = match (shm, copy, src) {
        (DevShm::Layer, _, _) => Ok(()),
        (DevShm::Bind { .. }, Some(copy), _) => attach_copy(root, copy.as_fd(), guest, true),
        (
            DevShm::Bind {
                read_only, no_exec, ..
            },
            None,
            Some(src),
        ) => {
            let mut flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | exec_flag(*no_exec);
            if *read_only {
                flags |= MsFlags::MS_RDONLY;
            }
            bind(root, src.as_fd(), guest, true, flags)
        }
        (DevShm::Bind { .. }, None, None) => Err("no source".into()),
        (DevShm::Tmpfs { size, no_exec }, _, _) => {
            let target = ensure_in_root(root, guest, true)
                .map_err(|e| format!("cannot open the mount point: {}", e.desc()))?;
            let opts = match size {
                Some(size) => format!("size={size},mode=1777"),
                None => "mode=1777".to_string(),
            };
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | exec_flag(*no_exec);
            mount_tmpfs(target.as_fd(), flags, &opts)
        }
    };
    r.map_err(|e| format!("/dev/shm: {e}"))
}
