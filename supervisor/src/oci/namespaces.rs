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
//! A pid entry's path is resolved, not joined as it is: the anchor, whose
//! pid the engine names (`/proc/PID/ns/pid`), is in the host's pid
//! namespace, and a guest there would see and signal every host process.
//! So the path must name a running container of the same runtime root,
//! by its anchor's pid or by its sandbox's pid namespace itself
//! ([`joined_pid`]); the new sandbox is then born in that sandbox's pid
//! namespace and user namespace (the engine's `launch/joined.rs`), and
//! any other path (the host's, a runc container's) fails `create` with
//! one line. A rootless runtime refuses: its sandboxes' user namespaces
//! are children of its own, which may not join them.
//!
//! `create` opens the joined namespaces' files itself ([`pin`]) and
//! names them to the monitor as `/proc/self/fd/N`: the monitor may see
//! another /proc (a rootless anchor mounts its own pid namespace's, where
//! the engine's `/proc/PID` is another process or none), and a pid the
//! engine named cannot be reused in between.
//!
//! Owns: reading those entries, finding the sandbox a pid entry names,
//! and pinning their files. Does not own joining (the engine's
//! `launch/joined.rs`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sandbox::config::{JoinedNamespaces, JoinedPid};

use super::config::Spec;
use super::loopback::namespace_id;
use super::state::{list_ids, Record};

/// The IPC and UTS namespaces `spec` names by path (the pid one is
/// [`joined_pid`]'s).
pub fn joined(spec: &Spec) -> JoinedNamespaces {
    JoinedNamespaces {
        ipc: path_of(spec, "ipc"),
        uts: path_of(spec, "uts"),
        pid: None,
    }
}

/// The pid namespace `spec` names by path, as the sandbox of a running
/// container under `root` whose anchor the path names, or whose
/// sandbox's pid namespace it is; with that sandbox's user namespace and
/// its maps. Any other path is an error.
pub fn joined_pid(root: &Path, spec: &Spec) -> Result<Option<JoinedPid>, String> {
    let Some(path) = path_of(spec, "pid") else {
        return Ok(None);
    };
    let shown = path.display();
    if super::cli::rootless_caller() || super::cli::anchor_in_own_pid_namespace() {
        return Err(format!(
            "pid namespace {shown}: a rootless runtime does not join another container's pid namespace"
        ));
    }
    let wanted = std::fs::metadata(&path)
        .map(|m| (m.dev(), m.ino()))
        .map_err(|e| format!("pid namespace {shown}: {e}"))?;
    let ns_of = |pid: i32| namespace_id(&Path::new("/proc").join(pid.to_string()).join("ns/pid"));
    let names = |r: &Record| {
        let by_anchor = anchor_of(&path) == Some(r.pid) && ns_of(r.pid) == Some(wanted);
        r.init_pid > 0 && (by_anchor || ns_of(r.init_pid) == Some(wanted))
    };
    let Some(record) = list_ids(root)
        .iter()
        .filter_map(|id| Record::load(root, id).ok().flatten())
        .filter(Record::monitor_alive)
        .find(names)
    else {
        return Err(format!(
            "pid namespace {shown}: not a running container of this runtime's; a container joins \
             only another container's sandbox, never the host's pid namespace"
        ));
    };
    let init = Path::new("/proc").join(record.init_pid.to_string());
    let read = |name: &str| {
        std::fs::read_to_string(init.join(name))
            .map_err(|e| format!("pid namespace {shown}: reading its sandbox's {name}: {e}"))
    };
    Ok(Some(JoinedPid {
        pid: init.join("ns/pid"),
        user: init.join("ns/user"),
        uid_map: read("uid_map")?,
        gid_map: read("gid_map")?,
    }))
}

/// The PID of a path `/proc/PID/ns/pid`.
fn anchor_of(path: &Path) -> Option<i32> {
    let rest = path.strip_prefix("/proc").ok()?;
    let mut parts = rest.iter();
    let pid = parts.next()?.to_str()?.parse().ok()?;
    let tail: Vec<_> = parts.collect();
    (tail == ["ns", "pid"]).then_some(pid)
}

/// Opens each namespace `join` names and names it again by the open
/// descriptor (`/proc/self/fd/N`), which the forked anchor and monitor
/// inherit; the files must stay open until the anchor is forked. One
/// that cannot be opened fails `create` with one line.
pub fn pin(join: &mut JoinedNamespaces) -> Result<Vec<File>, String> {
    let mut files = Vec::new();
    let (pid, user) = match join.pid.as_mut() {
        Some(p) => (Some(&mut p.pid), Some(&mut p.user)),
        None => (None, None),
    };
    let named = [("ipc", join.ipc.as_mut()), ("uts", join.uts.as_mut())];
    for (what, path) in named.into_iter().chain([("pid", pid), ("user", user)]) {
        let Some(p) = path else {
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
    fn ipc_and_uts_paths_are_read_here_and_pid_ones_by_joined_pid() {
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
                pid: None,
            }
        );
    }

    #[test]
    fn an_anchors_pid_is_read_from_its_namespace_path() {
        assert_eq!(anchor_of(Path::new("/proc/42/ns/pid")), Some(42));
        assert_eq!(anchor_of(Path::new("/proc/42/ns/net")), None);
        assert_eq!(anchor_of(Path::new("/proc/self/ns/pid")), None);
        assert_eq!(anchor_of(Path::new("/run/netns/x")), None);
    }
}
