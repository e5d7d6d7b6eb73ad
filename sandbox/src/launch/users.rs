//! Who the guest's processes run as: the main process and each exec
//! helper's process take a [`GuestUser`] (setgroups, setresgid,
//! setresuid, as runc does) and then drop every capability, before they
//! execute anything.
//!
//! Only when the user namespace maps a range of ids (root's shifted
//! range, a subordinate range, the OCI runtime's) does init keep
//! CAP_SETUID and CAP_SETGID (in the sandbox's user namespace:
//! `privs.rs`) for its children to switch with, and with shifted ids the
//! guest root's set, which a child that stays root keeps
//! ([`set_guest_caps`]); init never runs guest code and is not dumpable.
//! Otherwise init holds no capability and only the sandbox's own user
//! exists. Owns the switch; not the id maps (`userns.rs`) or the guest's
//! credentials as the trap sees them (`trap/creds.rs`).
//!
//! [`LaunchConfig::id_count`]: super::LaunchConfig::id_count

use std::sync::atomic::{AtomicU64, Ordering};

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

/// The capabilities a guest process that is root after [`become_user`]
/// keeps (0: none). Set by init before it starts any child; its children
/// (the main process shares its memory, exec helpers are forks) read it.
static GUEST_CAPS: AtomicU64 = AtomicU64::new(0);

/// In init, before any child: the guest root's capability set.
pub fn set_guest_caps(mask: u64) {
    GUEST_CAPS.store(mask, Ordering::Relaxed);
}

/// In init, with shifted ids, once the view's host sources are open (as
/// the invoker) and before anything is made in the view: takes guest root's
/// ids, so that init and everything it starts is the range's first host
/// id, never host root (a process keeps the host ids it was cloned with
/// until it changes them; the new namespace shows host root's as the
/// overflow id). Init keeps its capabilities in the namespace: the
/// kernel gives a process that becomes its namespace's root its permitted
/// set as effective. `keep_groups`: keep the supplementary groups (an
/// unprivileged invoker's, which its guest root shares: the supervisor,
/// which cannot take other groups, then acts for it as itself).
pub fn become_namespace_root(keep_groups: bool) -> Result<(), String> {
    let err = |what: &str, e: Errno| format!("taking the guest root's ids ({what}): {}", e.desc());
    if !keep_groups {
        setgroups(&[]).map_err(|e| err("setgroups", e))?;
    }
    let root_gid = Gid::from_raw(0);
    setresgid(root_gid, root_gid, root_gid).map_err(|e| err("setresgid", e))?;
    let root = Uid::from_raw(0);
    setresuid(root, root, root).map_err(|e| err("setresuid", e))?;
    // The kernel clears the death signal on a change of ids: set it again,
    // so that init still dies with the supervisor.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| err("death signal", e))?;
    // The id change made us non-dumpable, which gives our /proc files to
    // the owner of our memory's namespace, the host's root: init must
    // still write its own (timens_offsets). It becomes non-dumpable for
    // good before any guest process exists (`init.rs`).
    nix::sys::prctl::set_dumpable(true).map_err(|e| err("dumpable", e))
}

/// Longest list of supplementary groups (the kernel's NGROUPS_MAX).
const MAX_GROUPS: usize = 65536;

/// In a freshly forked child of init (or of a helper), before anything
/// it does is serviced: takes `user` if given, then keeps the guest
/// root's set if it is root, and drops every capability otherwise
/// (no_new_privs, the bounding set and, without a set, the locked
/// securebits keep exec from granting any back).
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
    match nix::unistd::getuid().is_root() {
        true => caps::set_only(GUEST_CAPS.load(Ordering::Relaxed)),
        false => caps::clear_all(),
    }
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
