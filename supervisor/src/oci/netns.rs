//! The container's network namespace, as config.json names it: none
//! (the host's, as runc leaves a container without a `network` entry),
//! a new one, or an existing one by path (Docker's `container:X`, CNI,
//! Podman's and containerd's pod namespaces). The anchor enters it before
//! it forks the monitor, so the anchor (the container's pid, where
//! Docker's `libnetwork-setkey` hook puts the container's interface and
//! `nsenter -t` looks) and the monitor (whose host sockets carry the
//! guest's egress and its published listeners) live in it. The guest's
//! own network namespace stays the sandbox's: the netstack is its only
//! socket layer.
//!
//! Owns: reading the entry and entering the namespace. Does not own what
//! the sandbox does from it (`bundle.rs` sets the egress and publishing,
//! `sandbox::network` does them).

use std::fs::File;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::sched::{setns, unshare, CloneFlags};

use super::config::Spec;

/// Where the container's network is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetNamespace {
    /// No `network` entry: the runtime's own (the host's).
    Host,
    /// A `network` entry without a path: a new namespace, with its
    /// loopback up (runc's), which the engine may give an interface.
    New,
    /// A `network` entry with a path: that namespace.
    Path(PathBuf),
}

impl NetNamespace {
    /// The `network` entry of `spec`'s `linux.namespaces`.
    pub fn of(spec: &Spec) -> NetNamespace {
        let entry = spec
            .linux()
            .as_ref()
            .and_then(|l| l.namespaces().as_ref())
            .and_then(|ns| ns.iter().find(|n| n.typ() == "network"));
        match entry {
            None => NetNamespace::Host,
            Some(n) => match n.path().as_ref().filter(|p| !p.as_os_str().is_empty()) {
                Some(path) => NetNamespace::Path(path.clone()),
                None => NetNamespace::New,
            },
        }
    }

    /// Enters it, in the anchor before it forks the monitor (one thread).
    /// `Ok(false)`: a new namespace could not be made (a runtime without
    /// CAP_SYS_ADMIN in its user namespace): the process stays where it
    /// is, and the caller must not let the guest out from there. A path
    /// that cannot be joined is an error, as under runc.
    /// `sysctls`: config.json's `net.*` ones, written in the namespace
    /// once entered (not the host's: a container without a namespace of
    /// its own gets none, as engines refuse them there).
    pub fn enter(&self, sysctls: &[(String, String)]) -> Result<bool, String> {
        match self {
            NetNamespace::Host => Ok(true),
            NetNamespace::New => match unshare(CloneFlags::CLONE_NEWNET) {
                Ok(()) => {
                    sandbox::sys::net::set_link_up("lo").map_err(|e| {
                        format!("bringing up the container's loopback: {}", e.desc())
                    })?;
                    write_sysctls(sysctls)?;
                    Ok(true)
                }
                Err(Errno::EPERM) => Ok(false),
                Err(e) => Err(format!("creating a network namespace: {}", e.desc())),
            },
            NetNamespace::Path(path) => {
                let ns = File::open(path)
                    .map_err(|e| format!("network namespace {}: {e}", path.display()))?;
                setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| {
                    format!(
                        "joining the network namespace {}: {}",
                        path.display(),
                        e.desc()
                    )
                })?;
                write_sysctls(sysctls)?;
                Ok(true)
            }
        }
    }
}

/// config.json's `linux.sysctl` entries of the network namespace
/// (`net.*`), in the order of their names.
pub fn net_sysctls(spec: &Spec) -> Vec<(String, String)> {
    let all = spec.linux().as_ref().and_then(|l| l.sysctl().clone());
    let mut net: Vec<(String, String)> = all
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| name.starts_with("net."))
        .collect();
    net.sort();
    net
}

/// The sysctl that lets processes without CAP_NET_BIND_SERVICE bind
/// every port from it on.
const UNPRIVILEGED_PORT_START: &str = "net.ipv4.ip_unprivileged_port_start";

/// Writes `sysctls` as runc does (one that cannot be written fails the
/// container), then, unless they set it, [`UNPRIVILEGED_PORT_START`] to
/// 0 as Docker asks for its containers: the monitor publishes the
/// guest's listeners in this namespace from threads that hold no
/// capability, port 80 included (best effort: a namespace whose sysctls
/// the runtime may not write keeps its low ports the guest's alone).
fn write_sysctls(sysctls: &[(String, String)]) -> Result<(), String> {
    for (name, value) in sysctls {
        if name.contains("..") || name.contains('/') {
            return Err(format!("sysctl {name:?}: not a sysctl name"));
        }
        let path = format!("/proc/sys/{}", name.replace('.', "/"));
        std::fs::write(&path, value).map_err(|e| format!("sysctl {name}: {e}"))?;
    }
    if !sysctls.iter().any(|(n, _)| n == UNPRIVILEGED_PORT_START) {
        let path = format!("/proc/sys/{}", UNPRIVILEGED_PORT_START.replace('.', "/"));
        let _ = std::fs::write(path, "0");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::oci::config::spec_with_namespaces as spec;

    #[test]
    fn the_network_entry_says_which_namespace() {
        assert_eq!(
            NetNamespace::of(&spec(r#"[{"type": "pid"}]"#)),
            NetNamespace::Host
        );
        assert_eq!(
            NetNamespace::of(&spec(r#"[{"type": "network"}]"#)),
            NetNamespace::New
        );
        assert_eq!(
            NetNamespace::of(&spec(r#"[{"type": "network", "path": ""}]"#)),
            NetNamespace::New
        );
        assert_eq!(
            NetNamespace::of(&spec(
                r#"[{"type": "ipc"}, {"type": "network", "path": "/var/run/netns/cni-1"}]"#
            )),
            NetNamespace::Path("/var/run/netns/cni-1".into())
        );
        assert_eq!(NetNamespace::of(&Spec::default()), NetNamespace::Host);
    }
}
