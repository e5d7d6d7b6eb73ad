//! User and group ids between the guest and the host.
//!
//! The guest's user namespace maps the invoker's uid (and gid) to itself:
//! one id, or (the OCI runtime as root) a range of ids from it, each at
//! the same number inside and out. A guest `chown` to an id without a
//! mapping fails with EINVAL, as it does in the kernel. (What the guest
//! sees of other ids, the overflow id 65534, the kernel shows it: every
//! stat passes the filter.) Owns the arithmetic only; no host calls.

use nix::errno::Errno;

/// The id value that means "leave unchanged" in chown.
pub const UNCHANGED: u32 = u32::MAX;

/// The identity mapping of the sandbox's user namespace: `count` ids
/// from `uid` (and from `gid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdMap {
    uid: u32,
    gid: u32,
    count: u32,
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
        IdMap { uid, gid, count }
    }

    /// How many ids are mapped (1: the invoker's alone).
    pub fn count(&self) -> u32 {
        self.count
    }

    fn mapped(&self, host: u32, first: u32) -> bool {
        host >= first && host - first < self.count
    }

    /// A guest uid for chown: `UNCHANGED` stays, the mapped id maps to
    /// itself, anything else is EINVAL.
    pub fn uid_to_host(&self, guest: u32) -> Result<u32, Errno> {
        self.host_id(guest, self.uid)
    }

    /// A guest gid for chown, as [`IdMap::uid_to_host`].
    pub fn gid_to_host(&self, guest: u32) -> Result<u32, Errno> {
        self.host_id(guest, self.gid)
    }

    fn host_id(&self, guest: u32, first: u32) -> Result<u32, Errno> {
        if guest == UNCHANGED || self.mapped(guest, first) {
            Ok(guest)
        } else {
            Err(Errno::EINVAL)
        }
    }
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
}
