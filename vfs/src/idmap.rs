//! User and group ids between the guest and the host.
//!
//! The guest's user namespace maps up to two extents of ids (the kernel's
//! "INSIDE OUTSIDE COUNT" lines), the same for uids and gids up to the
//! first host id: the invoker's own id at the same number (one id, or for
//! the OCI runtime's identity range `count` ids); root's range, guest
//! 0–65535 onto an unused host range; or an unprivileged invoker's
//! subordinate range, guest 0 as the invoker and 1–65535 onto its
//! subordinate ids. A guest `chown` to an id without a mapping fails with
//! EINVAL, as it does in the kernel. (What the guest sees of other ids,
//! the overflow id 65534, the kernel shows it: every stat passes the
//! filter.) Owns the arithmetic only; no host calls.

use nix::errno::Errno;

/// The id value that means "leave unchanged" in chown.
pub const UNCHANGED: u32 = u32::MAX;

/// One line of a map: `count` ids from `inside` onto those from `outside`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub inside: u32,
    pub outside: u32,
    pub count: u32,
}

impl Extent {
    fn host_of(&self, guest: u32) -> Option<u32> {
        let off = guest.checked_sub(self.inside)?;
        (off < self.count).then(|| self.outside + off)
    }

    fn holds_host(&self, host: u32) -> bool {
        host.checked_sub(self.outside)
            .is_some_and(|o| o < self.count)
    }

    /// The kernel's map line.
    pub fn line(&self) -> String {
        format!("{} {} {}\n", self.inside, self.outside, self.count)
    }
}

/// The user namespace's uid and gid maps: one or two extents each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdMap {
    uids: [Option<Extent>; 2],
    gids: [Option<Extent>; 2],
}

impl IdMap {
    /// `uid`/`gid`: the invoker's host ids, which the guest sees unchanged
    /// (the only ids mapped).
    pub fn new(uid: u32, gid: u32) -> IdMap {
        IdMap::with_range(uid, gid, 1)
    }

    /// `count` ids from `uid` and from `gid` (at least one), each mapped
    /// to itself.
    pub fn with_range(uid: u32, gid: u32, count: u32) -> IdMap {
        let count = count.clamp(1, u32::MAX - uid.max(gid));
        let same = |id| Extent {
            inside: id,
            outside: id,
            count,
        };
        IdMap {
            uids: [Some(same(uid)), None],
            gids: [Some(same(gid)), None],
        }
    }

    /// Guest ids 0 to `count - 1` onto host uids and gids from `start`
    /// (root's range).
    pub fn shifted(start: u32, count: u32) -> IdMap {
        let count = count.clamp(1, u32::MAX - start);
        let one = Extent {
            inside: 0,
            outside: start,
            count,
        };
        IdMap {
            uids: [Some(one), None],
            gids: [Some(one), None],
        }
    }

    /// Guest 0 as the invoker (`uid`, `gid`) and guest 1 to `count` onto
    /// the subordinate ids from `sub_uid` and `sub_gid` (rootless Podman's
    /// layout).
    pub fn subordinate(uid: u32, gid: u32, sub_uid: u32, sub_gid: u32, count: u32) -> IdMap {
        let own = |id| Extent {
            inside: 0,
            outside: id,
            count: 1,
        };
        let sub = |start: u32| Extent {
            inside: 1,
            outside: start,
            count: count.clamp(1, u32::MAX - start),
        };
        IdMap {
            uids: [Some(own(uid)), Some(sub(sub_uid))],
            gids: [Some(own(gid)), Some(sub(sub_gid))],
        }
    }

    /// The uid map's extents.
    pub fn uid_extents(&self) -> impl Iterator<Item = Extent> + '_ {
        self.uids.iter().flatten().copied()
    }

    /// The gid map's extents.
    pub fn gid_extents(&self) -> impl Iterator<Item = Extent> + '_ {
        self.gids.iter().flatten().copied()
    }

    /// How many ids are mapped (1: the invoker's alone).
    pub fn count(&self) -> u32 {
        self.uid_extents().map(|e| e.count).sum()
    }

    /// A guest uid for chown: `UNCHANGED` stays, a mapped id maps to its
    /// host id, anything else is EINVAL.
    pub fn uid_to_host(&self, guest: u32) -> Result<u32, Errno> {
        host_id(&self.uids, guest)
    }

    /// A guest gid for chown, as [`IdMap::uid_to_host`].
    pub fn gid_to_host(&self, guest: u32) -> Result<u32, Errno> {
        host_id(&self.gids, guest)
    }

    /// Whether host uid `uid` and host gid `gid` both have a guest id:
    /// the kernel's condition for a namespaced capability to act on an
    /// inode (`privileged_wrt_inode_uidgid`).
    pub fn holds_host(&self, uid: u32, gid: u32) -> bool {
        let held = |map: &[Option<Extent>; 2], id| map.iter().flatten().any(|e| e.holds_host(id));
        held(&self.uids, uid) && held(&self.gids, gid)
    }
}

fn host_id(map: &[Option<Extent>; 2], guest: u32) -> Result<u32, Errno> {
    if guest == UNCHANGED {
        return Ok(guest);
    }
    map.iter()
        .flatten()
        .find_map(|e| e.host_of(guest))
        .ok_or(Errno::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_one_id() {
        let m = IdMap::new(1000, 100);
        assert_eq!(m.uid_to_host(1000), Ok(1000));
        assert_eq!(m.uid_to_host(UNCHANGED), Ok(UNCHANGED));
        assert_eq!(m.uid_to_host(0), Err(Errno::EINVAL));
        assert_eq!(m.gid_to_host(100), Ok(100));
        assert_eq!(m.gid_to_host(1000), Err(Errno::EINVAL));
        let root = IdMap::new(0, 0);
        assert_eq!(root.uid_to_host(0), Ok(0));
        assert_eq!(root.uid_to_host(1000), Err(Errno::EINVAL));
    }

    #[test]
    fn maps_a_range() {
        let m = IdMap::with_range(0, 0, 65536);
        assert_eq!(m.count(), 65536);
        assert_eq!(m.uid_to_host(0), Ok(0));
        assert_eq!(m.uid_to_host(1000), Ok(1000));
        assert_eq!(m.gid_to_host(65535), Ok(65535));
        assert_eq!(m.uid_to_host(65536), Err(Errno::EINVAL));
        assert_eq!(m.gid_to_host(65536), Err(Errno::EINVAL));
        assert_eq!(IdMap::with_range(5, 5, 0).count(), 1);
        assert_eq!(IdMap::with_range(u32::MAX - 1, 0, 10).count(), 1);
    }

    #[test]
    fn shifts_a_range() {
        let m = IdMap::shifted(200_000, 65536);
        assert_eq!(m.count(), 65536);
        assert_eq!(m.uid_to_host(0), Ok(200_000));
        assert_eq!(m.gid_to_host(65534), Ok(265_534));
        assert_eq!(m.uid_to_host(65536), Err(Errno::EINVAL));
        assert!(m.holds_host(200_000, 265_535));
        assert!(!m.holds_host(0, 200_000));
        assert!(!m.holds_host(200_000, 0));
        assert_eq!(m.uid_extents().next().unwrap().line(), "0 200000 65536\n");
    }

    #[test]
    fn subordinate_range() {
        let m = IdMap::subordinate(1000, 100, 100_000, 300_000, 65536);
        assert_eq!(m.count(), 65537);
        assert_eq!(m.uid_to_host(0), Ok(1000));
        assert_eq!(m.gid_to_host(0), Ok(100));
        assert_eq!(m.uid_to_host(1), Ok(100_000));
        assert_eq!(m.gid_to_host(65534), Ok(365_533));
        assert!(m.holds_host(1000, 100));
        assert!(!m.holds_host(0, 100));
    }
}
