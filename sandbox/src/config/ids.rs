//! The guest's ids ([`Ids`]): which host ids its user namespace maps
//! ([`IdRange`]), the command's user, and its root's capabilities.
//!
//! Owns that part of the configuration and the capability set it gives.
//! Does not own making the namespace (`launch/`).

use serde::{Deserialize, Serialize};

use crate::launch::GuestUser;

/// The ids of the guest.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    /// How many ids the user namespace maps from the invoker's (1: the
    /// invoker's alone), with [`IdRange::Invoker`].
    pub count: u32,
    /// The command's user; `None`: the invoker's (the guest's root with
    /// a shifted range).
    pub user: Option<GuestUser>,
    /// Which host ids the user namespace maps.
    #[serde(default)]
    pub range: IdRange,
    /// With a shifted range as root: the host sources (the rootfs tree,
    /// every bind) show host id N as guest id N, each through an
    /// idmapped mount that must be made (an error names the mount
    /// otherwise), so that what the guest's root writes there is host
    /// 0's, as under runc without a user namespace: the OCI runtime's.
    /// False: a bind's owner shows as the guest's root and the tree's
    /// copy is best effort (`supervisor run`; `launch/idmapped.rs`).
    #[serde(default)]
    pub mounts_keep_ids: bool,
    /// Capabilities taken from the guest root's default set (Docker's;
    /// `launch::guest_caps`), by name (`CHOWN`, `CAP_KILL`, `ALL`).
    #[serde(default)]
    pub cap_drop: Vec<String>,
    /// Capabilities given back (only from the default set).
    #[serde(default)]
    pub cap_add: Vec<String>,
}

/// Which host ids the guest's user namespace maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdRange {
    /// The invoker's own ids at the same numbers, [`Ids::count`] of them:
    /// root's guest is host root without capabilities.
    #[default]
    Invoker,
    /// Root: guest 0–65535 onto the `supervisor` entry of /etc/subuid
    /// and /etc/subgid, added on first use. Unprivileged: guest 0 as the
    /// invoker and 1–65535 onto its own subordinate ids, or, without
    /// any, the invoker's one id (with a note on stderr).
    Auto,
    /// Root: guest 0 to COUNT-1 onto these host ids (`--userns-range`).
    Host(crate::launch::subids::HostRange),
}

impl Ids {
    /// The guest root's capabilities (bit N: capability N) after
    /// `cap_drop` and `cap_add`; a name outside the default set is a
    /// one-line error.
    pub fn caps(&self) -> Result<u64, String> {
        use crate::launch::guest_caps;
        let mask = |names: &[String]| -> Result<u64, String> {
            names
                .iter()
                .try_fold(0, |m, n| Ok(m | guest_caps::parse(n)?))
        };
        Ok(guest_caps::resolve(
            mask(&self.cap_drop)?,
            mask(&self.cap_add)?,
        ))
    }
}
