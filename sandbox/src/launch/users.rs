//! Who the guest's processes run as: the main process and each exec
//! helper's process take a [`GuestUser`] (setgroups, setresgid,
//! setresuid, as runc does) and then drop every capability, before they
//! execute anything.
//!
//! Only when the user namespace maps a range of ids ([`LaunchConfig::id_count`]
//! above 1, the OCI runtime as root) does init keep CAP_SETUID and
//! CAP_SETGID (in the sandbox's user namespace: `privs.rs`) for its
//! children to switch with; it never runs guest code and is not dumpable.
//! Otherwise init holds no capability and only the sandbox's own user
//! exists. Owns the switch; not the id maps (`userns.rs`) or the guest's
//! credentials as the trap sees them (`trap/creds.rs`).
//!
//! [`LaunchConfig::id_count`]: super::LaunchConfig::id_count

use nix::errno::Errno;
use nix::unistd::{setgroups, setresgid, setresuid, Gid, Uid};
use serde::{Deserialize, Serialize};

use crate::sys::caps;

/// How many ids the OCI runtime, as root, maps: container 0–65535 onto
/// the same host ids (see docs/oci.md, "Users").
pub const OCI_ID_COUNT: u32 = 65536;

/// Capabilities init keeps when users switch: CAP_SETGID (6) and
/// CAP_SETUID (7).
pub const SETID_CAPS: u64 = (1 << 6) | (1 << 7);

/// A process's user: uid, gid and supplementary groups (OCI's
/// `process.user` with `additionalGids`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestUser {
    pub uid: u32,
    pub gid: u32,
    #[serde(default)]
    pub groups: Vec<u32>,
}

/// Longest list of supplementary groups (the kernel's NGROUPS_MAX).
const MAX_GROUPS: usize = 65536;

/// In a freshly forked child of init (or of a helper), before anything
/// it does is serviced: takes `user` if given, then drops every
/// capability (no_new_privs and the locked securebits keep exec from
/// granting any back).
pub fn become_user(user: Option<&GuestUser>) -> Result<(), Errno> {
    if let Some(u) = user {
        if u.groups.len() > MAX_GROUPS {
            return Err(Errno::EINVAL);
        }
        let groups: Vec<Gid> = u.groups.iter().map(|&g| Gid::from_raw(g)).collect();
        setgroups(&groups)?;
        let gid = Gid::from_raw(u.gid);
        setresgid(gid, gid, gid)?;
        let uid = Uid::from_raw(u.uid);
        setresuid(uid, uid, uid)?;
    }
    caps::clear_all()
}

#[cfg(test)]
mod tests {
    use super::GuestUser;

    #[test]
    fn request_form() {
        let u: GuestUser = serde_json::from_str(r#"{"uid":1000,"gid":100}"#).unwrap();
        assert_eq!((u.uid, u.gid, u.groups.len()), (1000, 100, 0));
        let u: GuestUser = serde_json::from_str(r#"{"uid":1,"gid":2,"groups":[3,4]}"#).unwrap();
        assert_eq!(u.groups, vec![3, 4]);
    }
}
