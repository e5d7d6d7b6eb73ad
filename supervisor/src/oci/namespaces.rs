//! The IPC, UTS and pid entries of config.json's `linux.namespaces`
//! (the network one is `netns.rs`'s). An entry without a path, or none at
//! all, leaves the sandbox its own namespace, as every sandbox has (an
//! engine's "host" IPC or UTS mode, no entry, is not given the host's:
//! the sandbox is the isolation). An entry with a path joins that
//! namespace (`SandboxConfig::join`), as runc does: a pod's containers
//! name the pause container's, Docker's `--ipc container:X` names X's
//! pid's. Our container's pid is its anchor, which lives in its
//! sandbox's IPC and UTS namespaces (`anchor.rs`), so the path names
//! that sandbox's: the guests then share SysV shared memory and
//! semaphores, and one hostname. A path that is not one of our
//! sandboxes' (a runc container's, a bind-mounted namespace file) is
//! joined all the same: the guest holds no capability in a namespace its
//! own user namespace does not own, so it gets what the engine asked for
//! (SysV objects by their modes, the hostname to read) and nothing more.
//!
//! A pid entry's path is not joined: the anchor, whose pid the engine
//! names, is in the host's pid namespace (a rootless anchor in one of its
//! own), and a guest in it would see and signal every host process; nor
//! can a sandbox's init join another sandbox's pid namespace and still
//! mount its own /proc (that namespace's user namespace is not its own).
//! The sandbox keeps its own pid namespace.
//!
//! `create` opens the joined namespaces' files itself ([`pin`]) and
//! names them to the monitor as `/proc/self/fd/N`: the monitor may see
//! another /proc (a rootless anchor mounts its own pid namespace's, where
//! the engine's `/proc/PID` is another process or none), and a pid the
//! engine named cannot be reused in between.
//!
//! Owns: reading those entries and pinning their files. Does not own
//! joining (the engine's `launch/joined.rs`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use sandbox::config::JoinedNamespaces;

use super::config::Spec;

/// The IPC and UTS namespaces `spec` names by path.
pub fn joined(spec: &Spec) -> JoinedNamespaces {
    JoinedNamespaces {
        ipc: path_of(spec, "ipc"),
        uts: path_of(spec, "uts"),
    }
}

/// Opens each namespace `join` names and names it again by the open
/// descriptor (`/proc/self/fd/N`), which the forked anchor and monitor
/// inherit; the files must stay open until the anchor is forked. One
/// that cannot be opened fails `create` with one line.
pub fn pin(join: &mut JoinedNamespaces) -> Result<Vec<File>, String> {
    let mut files = Vec::new();
    for (what, path) in [("ipc", &mut join.ipc), ("uts", &mut join.uts)] {
        let Some(p) = path.as_mut() else {
            continue;
        };
        let file = File::open(&*p).map_err(|e| format!("{what} namespace {}: {e}", p.display()))?;
        *p = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        files.push(file);
    }
    Ok(files)
}

/// The path of the `typ` entry, when it has a non-empty one.
fn path_of(spec: &Spec, typ: &str) -> Option<PathBuf> {
    let namespaces = spec.linux().as_ref()?.namespaces().as_ref()?;
    let entry = namespaces.iter().find(|n| n.typ() == typ)?;
    entry
        .path()
        .as_ref()
        .filter(|p| !p.as_os_str().is_empty())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::oci::config::spec_with_namespaces as spec;

    #[test]
    fn ipc_and_uts_paths_are_joined_and_pid_ones_are_not() {
        let none = JoinedNamespaces::default();
        assert_eq!(joined(&Spec::default()), none);
        assert_eq!(
            joined(&spec(r#"[{"type": "ipc"}, {"type": "uts", "path": ""}]"#)),
            none
        );
        let pod = spec(
            r#"[{"type": "pid", "path": "/proc/7/ns/pid"},
                {"type": "ipc", "path": "/proc/7/ns/ipc"},
                {"type": "uts", "path": "/proc/7/ns/uts"},
                {"type": "network", "path": "/proc/7/ns/net"}]"#,
        );
        assert_eq!(
            joined(&pod),
            JoinedNamespaces {
                ipc: Some("/proc/7/ns/ipc".into()),
                uts: Some("/proc/7/ns/uts".into()),
            }
        );
    }
}
