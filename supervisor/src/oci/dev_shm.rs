//! config.json's /dev/shm mount, as the sandbox's [`DevShm`]: engines
//! give a container's /dev/shm as a bind of a tmpfs they made (Docker's
//! `--ipc shareable` and `--ipc container:X`, a Kubernetes pod's sandbox
//! shm, Podman's) or as a tmpfs of `--shm-size`; the sandbox then binds
//! that source, or mounts a tmpfs of that size, so that POSIX shared
//! memory and named semaphores are shared between the containers that
//! bind one source (docs/oci.md, "/dev/shm").
//!
//! Honoured only where config.json asks for an IPC namespace (its own or
//! one by path): without an `ipc` entry (`--ipc host`, Kubernetes'
//! `hostIPC`) the engine binds the host's /dev/shm, and the sandbox keeps
//! its own, as it keeps its own IPC namespace then (`namespaces.rs`).
//!
//! Owns: reading that mount. Does not own mounting it (the engine's
//! `launch/dev_shm.rs`), nor the rest of config.json's mounts
//! (`bundle.rs`, which skips every /dev destination).

use std::path::Path;

use sandbox::launch::DevShm;

use super::config::{Mount, Spec};
use super::mount_kind::{classify, OciMountKind};

/// The destination this module reads.
const DEV_SHM: &str = "/dev/shm";

/// The /dev/shm that `spec` gives: its last mount at /dev/shm, or the
/// sandbox's own (the layer's) when it has none, asks for no IPC
/// namespace, or gives one of another kind (then with a warning).
pub fn from_spec(spec: &Spec) -> (DevShm, Option<String>) {
    let Some(m) = spec
        .mounts()
        .as_ref()
        .and_then(|ms| ms.iter().rev().find(|m| is_dev_shm(m)))
    else {
        return (DevShm::Layer, None);
    };
    if !asks_for_ipc_namespace(spec) {
        return (DevShm::Layer, None);
    }
    match translate(m) {
        Ok(shm) => (shm, None),
        Err(warning) => (DevShm::Layer, Some(warning)),
    }
}

fn is_dev_shm(m: &Mount) -> bool {
    // Lexically: "/dev/shm/" and "/dev//shm" are the same place.
    let components: Vec<_> = m.destination().components().collect();
    components == Path::new(DEV_SHM).components().collect::<Vec<_>>()
}

/// Whether `linux.namespaces` has an `ipc` entry (with a path or not).
fn asks_for_ipc_namespace(spec: &Spec) -> bool {
    let namespaces = spec.linux().as_ref().and_then(|l| l.namespaces().as_ref());
    namespaces.is_some_and(|ns| ns.iter().any(|n| n.typ() == "ipc"))
}

/// A bind of an absolute source, or a tmpfs with its `size=`
/// ([`classify`]); `Err` a warning for anything else.
fn translate(m: &Mount) -> Result<DevShm, String> {
    match classify(m) {
        OciMountKind::Tmpfs { size, no_exec } => {
            let size =
                match size {
                    Some(s) => Some(vfs::mounts::parse_size(&s).map_err(|e| {
                        format!("mount on {DEV_SHM}: {e}; the sandbox's own is used")
                    })?),
                    None => None,
                };
            Ok(DevShm::Tmpfs { size, no_exec })
        }
        OciMountKind::Bind {
            source: host,
            read_only,
            no_exec,
        } => {
            if !host.is_absolute() {
                return Err(format!(
                    "mount on {DEV_SHM}: source {:?} is not an absolute path; the sandbox's own is used",
                    host.display().to_string()
                ));
            }
            Ok(DevShm::Bind {
                host,
                read_only,
                no_exec,
            })
        }
        OciMountKind::Other { typ } => Err(format!(
            "mount of type {typ:?} on {DEV_SHM} is not supported; the sandbox's own is used"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(namespaces: &str, mounts: &str) -> Spec {
        let json = format!(r#"{{"linux": {{"namespaces": {namespaces}}}, "mounts": {mounts}}}"#);
        serde_json::from_str(&json).expect("a test's spec")
    }

    const IPC: &str = r#"[{"type": "ipc"}]"#;

    #[test]
    fn dockers_private_ipc_is_a_tmpfs_of_its_size() {
        let s = spec(
            IPC,
            r#"[{"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
                "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]}]"#,
        );
        let want = DevShm::Tmpfs {
            size: Some(64 << 20),
            no_exec: true,
        };
        assert_eq!(from_spec(&s), (want, None));
        let s = spec(IPC, r#"[{"destination": "/dev/shm/", "type": "tmpfs"}]"#);
        let want = DevShm::Tmpfs {
            size: None,
            no_exec: false,
        };
        assert_eq!(from_spec(&s), (want, None));
    }

    #[test]
    fn a_shared_shm_is_bound() {
        let s = spec(
            r#"[{"type": "ipc", "path": "/proc/7/ns/ipc"}]"#,
            r#"[{"destination": "/dev/shm", "type": "bind",
                 "source": "/var/lib/e/containers/a/mounts/shm",
                 "options": ["rbind", "nosuid", "noexec", "nodev"]},
                {"destination": "/dev/shm", "source": "/run/pod/shm",
                 "options": ["rbind", "ro"]}]"#,
        );
        let want = DevShm::Bind {
            host: "/run/pod/shm".into(),
            read_only: true,
            no_exec: false,
        };
        assert_eq!(from_spec(&s), (want, None));
    }

    #[test]
    fn host_ipc_and_no_mount_keep_the_sandboxs_own() {
        let host_shm = r#"[{"destination": "/dev/shm", "type": "bind", "source": "/dev/shm",
                            "options": ["rbind"]}]"#;
        assert_eq!(from_spec(&spec("[]", host_shm)), (DevShm::Layer, None));
        let other = r#"[{"destination": "/dev/mqueue", "type": "mqueue"}]"#;
        assert_eq!(from_spec(&spec(IPC, other)), (DevShm::Layer, None));
    }

    #[test]
    fn what_cannot_be_honoured_is_a_warning() {
        for mounts in [
            r#"[{"destination": "/dev/shm", "type": "bind", "source": "shm"}]"#,
            r#"[{"destination": "/dev/shm", "type": "tmpfs", "options": ["size=lots"]}]"#,
            r#"[{"destination": "/dev/shm", "type": "9p", "source": "x"}]"#,
        ] {
            let (shm, warning) = from_spec(&spec(IPC, mounts));
            assert_eq!(shm, DevShm::Layer);
            let warning = warning.expect("a warning");
            assert!(warning.starts_with("mount"), "{warning}");
            assert!(warning.contains("/dev/shm"), "{warning}");
        }
    }
}
