//! The IPC and UTS namespaces a sandbox joins instead of making its own
//! (`LaunchConfig::join_ipc`, `join_uts`: an OCI container naming
//! another's, as a pod's containers do). The launching process enters
//! them with `setns` before it clones init without `CLONE_NEWIPC` or
//! `CLONE_NEWUTS`, so init and the guest are born in them. It must be
//! the launching process: init, once in its new user namespace, holds no
//! capability in the namespace that owns them and could not join.
//!
//! Owns: entering them, the clone flags left, and the hostname a joined
//! UTS namespace already has (the view's /etc/hostname says it). Does
//! not own choosing them (the front-end) or the clone itself (`mod.rs`).

use std::fs::File;
use std::path::Path;

use nix::sched::{setns, CloneFlags};

/// What joining left to the launch.
pub(super) struct Joined {
    ipc: bool,
    /// The joined UTS namespace's hostname (init leaves it as it is).
    pub hostname: Option<String>,
}

impl Joined {
    /// `all` without the namespaces that were joined.
    pub fn clone_flags(&self, all: CloneFlags) -> CloneFlags {
        let mut flags = all;
        if self.ipc {
            flags.remove(CloneFlags::CLONE_NEWIPC);
        }
        if self.hostname.is_some() {
            flags.remove(CloneFlags::CLONE_NEWUTS);
        }
        flags
    }
}

/// Enters the IPC namespace at `ipc` and the UTS one at `uts` (either may
/// be absent). A path that is not such a namespace, or one this process
/// may not join, is a one-line error.
pub(super) fn enter(ipc: Option<&Path>, uts: Option<&Path>) -> Result<Joined, String> {
    if let Some(path) = ipc {
        join(path, "IPC", CloneFlags::CLONE_NEWIPC)?;
    }
    let hostname = match uts {
        Some(path) => {
            join(path, "UTS", CloneFlags::CLONE_NEWUTS)?;
            let name = nix::sys::utsname::uname()
                .map_err(|e| format!("reading the joined UTS namespace's hostname: {}", e.desc()))?
                .nodename()
                .to_string_lossy()
                .into_owned();
            Some(name)
        }
        None => None,
    };
    Ok(Joined {
        ipc: ipc.is_some(),
        hostname,
    })
}

fn join(path: &Path, what: &str, flag: CloneFlags) -> Result<(), String> {
    let ns = File::open(path).map_err(|e| format!("{what} namespace {}: {e}", path.display()))?;
    setns(ns, flag).map_err(|e| {
        format!(
            "joining the {what} namespace {}: {}",
            path.display(),
            e.desc()
        )
    })
}
