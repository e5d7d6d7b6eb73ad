//! Which user a container's process runs as (`process.user`, `exec
//! --user`), and which host ids the container's ids are.
//!
//! As root, without `linux.uidMappings`, unless the rootfs is an
//! overlayfs mount the sandbox cannot remake over idmapped layers
//! ([`overlay_root`]: those keep the host's ids 0–65535 as themselves),
//! the runtime maps container ids
//! 0–65535 onto the `supervisor` subordinate range, as `supervisor run`
//! maps a guest's (`IdRange::Auto`: the /etc/subuid and /etc/subgid entry
//! made on first use), so no process of the container is host root; the
//! bundle's rootfs and every bind of config.json are idmapped copies
//! showing host id N as container id N (`mounts_keep_ids`,
//! `launch/idmapped.rs`), so the image's files are the container root's
//! and what it writes lands as host 0, as under runc without a user
//! namespace ([`id_range`]). Any user in that range runs as itself: init
//! or the exec helper takes its uid, gid and `additionalGids` before the
//! process executes (`launch/users.rs`) and the trap serves its file
//! calls with those ids (`trap/creds.rs`). A rootless runtime can map
//! only its own ids, so any other user is refused with one line.
//!
//! A config whose `linux.uidMappings` and `linux.gidMappings` map the
//! container's ids onto other host ids (as for runc with a user
//! namespace) gets them: container 0 onward onto host `hostID` onward, as
//! `--userns-range START:COUNT` maps a guest's ([`mapped_range`]), so the
//! container's root is `hostID` on the host, and its processes and the
//! files it makes are the mapped ids'. The sandbox maps one range, from
//! container id 0, the same for users and groups, of at least 65536 ids:
//! any other mapping is a one-line error naming what is missing, and a
//! rootless runtime (which maps only its own ids) refuses every one. A
//! mapping from host 0 is taken as none (the subordinate range above).
//!
//! Owns the check, the id count and the mapping; not the switch.

use super::config::{LinuxIdMapping, User};

use sandbox::config::IdRange;
use sandbox::launch::engine_overlay::EngineOverlay;
use sandbox::launch::subids::HostRange;
use sandbox::launch::{GuestUser, OCI_ID_COUNT};

/// The host range `linux.uidMappings` and `linux.gidMappings` map the
/// container's ids onto; `None` without mappings, or for one from host
/// 0 (then as without: no container id is host root).
pub fn mapped_range(
    uids: &[LinuxIdMapping],
    gids: &[LinuxIdMapping],
) -> Result<Option<HostRange>, String> {
    if uids.is_empty() && gids.is_empty() {
        return Ok(None);
    }
    if super::cli::rootless_caller() {
        return Err(
            "linux.uidMappings: a rootless runtime maps only its own user into the sandbox".into(),
        );
    }
    let (u, g) = match (uids, gids) {
        ([u], [g]) => (*u, *g),
        _ => {
            return Err(
                "linux.uidMappings, linux.gidMappings: the sandbox maps one range of each, from container id 0"
                    .into(),
            )
        }
    };
    if u.container_id != 0 || g.container_id != 0 {
        return Err("linux.uidMappings: the sandbox maps container ids from 0".into());
    }
    if (u.host_id, u.size) != (g.host_id, g.size) {
        return Err(
            "linux.gidMappings: the sandbox maps groups onto the same host range as users".into(),
        );
    }
    if u.host_id == 0 {
        return match u.size >= OCI_ID_COUNT {
            true => Ok(None),
            false => Err(format!(
                "linux.uidMappings: size {}: the sandbox maps at least {OCI_ID_COUNT} ids",
                u.size
            )),
        };
    }
    HostRange::parse(&format!("{}:{}", u.host_id, u.size))
        .map(Some)
        .map_err(|e| format!("linux.uidMappings: {e}"))
}

/// The container's ids (`ids.range`, `ids.count`, `ids.mounts_keep_ids`)
/// given `linux.uidMappings`' range ([`mapped_range`]): that range as
/// it is; without one, as root, the subordinate range with the host
/// sources idmapped; rootless, the runtime's own id.
pub fn id_range(mapped: Option<HostRange>) -> (IdRange, u32, bool) {
    match (mapped, super::cli::rootless_caller()) {
        (Some(range), _) => (IdRange::Host(range), range.count, false),
        (None, true) => (IdRange::Invoker, 1, false),
        (None, false) => (IdRange::Auto, OCI_ID_COUNT, true),
    }
}

/// Why the container keeps the host's ids (0–65535 onto themselves, as
/// without a user namespace) when it would get the subordinate range:
/// its rootfs is an overlayfs mount (Docker's overlay2) of which the
/// sandbox cannot make its own overlay of idmapped layers
/// (`launch/engine_overlay.rs`): the engine's mount has the index on
/// (a second overlay of its upper directory is refused), its options
/// are not understood, or a trial remake (`EngineOverlay::try_remake`,
/// `read_only` as the container's root will be) fails, for whatever
/// reason the kernel gives (a trial of the same key that passed on this
/// boot, recorded in `state_root`, is not made again:
/// `overlay_trial.rs`). `None`: not root, a mapping given, another file
/// system, or an overlay the sandbox remakes over idmapped layers.
pub fn overlay_root(
    rootfs: &std::path::Path,
    mapped: Option<HostRange>,
    read_only: bool,
    state_root: &std::path::Path,
) -> Option<String> {
    if mapped.is_some() || super::cli::rootless_caller() {
        return None;
    }
    let why = match EngineOverlay::of(rootfs) {
        Ok(None) => return None,
        Ok(Some(overlay)) => match overlay.refusal() {
            Some(refused) => refused,
            None => match trial(&overlay, read_only, state_root) {
                Ok(()) => return None,
                Err(e) => format!("remaking its overlay over idmapped layers failed: {e}"),
            },
        },
        Err(e) => e,
    };
    Some(format!(
        "root file system {}: {why}, so the container's ids are the host's (its root is host root without capabilities)",
        rootfs.display()
    ))
}

/// [`EngineOverlay::try_remake`] with the ids the container would get
/// (`IdRange::Auto`: root's subordinate range), unless one of the same
/// key passed on this boot (`overlay_trial.rs`, recorded in the
/// runtime's `state_root`).
fn trial(
    overlay: &EngineOverlay,
    read_only: bool,
    state_root: &std::path::Path,
) -> Result<(), String> {
    let range = sandbox::launch::subids::root_range()?;
    let count = OCI_ID_COUNT.min(range.count);
    super::overlay_trial::remake_passes(state_root, overlay, range, count, read_only)
}

/// The identity map of [`overlay_root`]: container ids 0–65535 as the
/// same host ids.
pub fn host_ids() -> (IdRange, u32, bool) {
    (IdRange::Invoker, OCI_ID_COUNT, false)
}

/// The spec's user as the process's (`None`: the runtime's own, the
/// rootless case), or why it cannot be.
pub fn from_spec(user: &User) -> Result<Option<GuestUser>, String> {
    resolve(GuestUser {
        uid: user.uid(),
        gid: user.gid(),
        groups: user.additional_gids().clone().unwrap_or_default(),
    })
}

/// `user` if the sandbox can run it; `None` for the rootless runtime's
/// own ids.
pub fn resolve(user: GuestUser) -> Result<Option<GuestUser>, String> {
    if super::cli::rootless_caller() {
        let (uid, gid) = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        return match (user.uid == uid, user.gid == gid) {
            (true, true) => Ok(None),
            (false, _) => Err(format!(
                "user {}: a rootless runtime maps only its own user ({uid}) into the sandbox",
                user.uid
            )),
            (true, false) => Err(format!(
                "group {}: a rootless runtime maps only its own group ({gid}) into the sandbox",
                user.gid
            )),
        };
    }
    check_range(&user)?;
    Ok(Some(user))
}

/// Every id within the mapped range.
fn check_range(user: &GuestUser) -> Result<(), String> {
    let last = OCI_ID_COUNT - 1;
    let outside = |what: &str, id: u32| format!("{what} {id}: the sandbox maps ids 0-{last} only");
    if user.uid >= OCI_ID_COUNT {
        return Err(outside("user", user.uid));
    }
    match std::iter::once(&user.gid)
        .chain(&user.groups)
        .find(|g| **g >= OCI_ID_COUNT)
    {
        Some(g) => Err(outside("group", *g)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range() {
        let user = |uid, gid, groups: &[u32]| GuestUser {
            uid,
            gid,
            groups: groups.to_vec(),
        };
        assert!(check_range(&user(1000, 1000, &[10, 65535])).is_ok());
        assert!(check_range(&user(65536, 0, &[])).is_err());
        assert!(check_range(&user(0, 65536, &[])).is_err());
        assert!(check_range(&user(0, 0, &[1 << 20])).is_err());
    }
}
