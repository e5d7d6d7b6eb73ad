//! A pod's shared loopback. Containers whose config.json names one
//! network namespace by path (a Kubernetes pod's containers and its pause
//! container, Docker's `--network container:X`) talk over 127.0.0.1, so
//! their guests must share one loopback of the netstack. Each container's
//! netstack names its sockets behind a token, in its sandbox's network
//! namespace (docs/network.md, "Names"); a container that joins another's
//! network namespace takes that container's token and has its socket
//! factory make its sockets in that container's sandbox's namespace
//! (`SandboxConfig::net.shared_loopback`): the names are then one set, and
//! a listener of either guest is the other's too, with the kernel's own
//! EADDRINUSE between them. The first container's sandbox must outlive
//! the others (a pod's pause container does; its init's
//! `/proc/<pid>/net/unix` lists the shared names).
//!
//! Owns: choosing the token and finding the container whose loopback a
//! new one shares (a running container of the same runtime root whose
//! anchor lives in the network namespace the new one names). Does not
//! own the sharing itself (`sandbox::launch_hooks`, the socket factory).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::netns::NetNamespace;
use super::state::{list_ids, Record};

/// The loopback a container's guest uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loopback {
    /// The netstack's token (its names are `sbx-<token>/...`).
    pub token: String,
    /// The host pid of the init of the sandbox whose network namespace
    /// holds the names.
    pub init: i32,
}

/// A token for a container's own loopback.
pub fn fresh_token() -> String {
    format!("{:016x}", netstack::name::random_u64())
}

/// The loopback of a running container under `root` whose anchor lives
/// in the network namespace `network` names, if it is one named by path.
pub fn shared_by(root: &Path, network: &NetNamespace) -> Option<Loopback> {
    let NetNamespace::Path(path) = network else {
        return None;
    };
    let wanted = namespace_id(path)?;
    list_ids(root)
        .iter()
        .filter_map(|id| Record::load(root, id).ok().flatten())
        .filter(Record::monitor_alive)
        .find(|r| {
            namespace_id(&Path::new("/proc").join(r.pid.to_string()).join("ns/net")) == Some(wanted)
        })
        .and_then(|r| r.loopback)
}

/// A namespace file's identity (device and inode).
pub(super) fn namespace_id(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}
