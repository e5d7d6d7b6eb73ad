//! The guest's file system ([`FsConfig`]): its mounts, its root, its
//! /dev/shm, what is masked or read-only, and its writable layer.
//!
//! Owns that part of the configuration's shape. Does not own building the
//! view (`launch/`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vfs::mounts::MountSpec;

use super::text;
use crate::launch::DevShm;

/// The guest's file system.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Bind and tmpfs mounts, in the order given (applied parents first).
    #[serde(with = "text::mounts")]
    pub mounts: Vec<MountSpec>,
    /// This tree (an unpacked image), not the host's directories, as `/`.
    pub rootfs: Option<PathBuf>,
    /// The guest writes to `rootfs` itself, not to an overlay over it.
    pub rootfs_in_place: bool,
    /// The guest's `/` is read-only (the OCI runtime's `root.readonly`,
    /// `docker run --read-only`); the mounts on it keep their own modes.
    #[serde(default)]
    pub root_read_only: bool,
    /// The guest's /dev/shm: the layer's (`run`), or the OCI engine's
    /// bind or tmpfs, shared by the containers of a pod.
    #[serde(default)]
    pub dev_shm: DevShm,
    /// Paths hidden once every mount is in place.
    pub masks: Vec<PathBuf>,
    /// Paths made read-only once every mount is in place.
    pub read_only: Vec<PathBuf>,
    /// The host's /usr, /bin, /sbin, /lib and /lib64 as overlays.
    pub writable_system: bool,
    /// Size of the writable layer in bytes.
    pub disk: u64,
}
