//! SO_REUSEPORT groups: several sockets bound to one address, each with
//! SO_REUSEPORT set. The first holds the address's own name; each later
//! one a *member* name that decodes as the same address
//! (`Namer::encode_member`), recorded here under the first's name, so a
//! connect or a datagram to the address tries the group's names starting
//! at a rotating member (connections spread over the listeners, and one
//! that closes leaves the others reachable).
//!
//! Owns: the members of each group and the rotation. Does not own: the
//! rule that lets a socket join (`Stack::bind`) or the names themselves
//! (`name`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Most member names kept per address (later joins are refused).
pub const MAX_MEMBERS: usize = 64;

/// The sandbox's groups, by the address's own name.
#[derive(Debug, Default)]
pub struct Groups {
    members: Mutex<HashMap<Vec<u8>, Vec<Vec<u8>>>>,
    turn: AtomicUsize,
}

impl Groups {
    /// Records `member` under `primary`; false when the group is full.
    pub fn add(&self, primary: &[u8], member: Vec<u8>) -> bool {
        let mut map = self.members.lock();
        let list = map.entry(primary.to_vec()).or_default();
        if list.len() >= MAX_MEMBERS {
            return false;
        }
        list.push(member);
        true
    }

    /// The names to try for `primary`: the group's names, starting at the
    /// next in turn (just `primary` when it has no members).
    pub fn names(&self, primary: Vec<u8>) -> Vec<Vec<u8>> {
        let map = self.members.lock();
        let Some(members) = map.get(&primary) else {
            return vec![primary];
        };
        let mut all = Vec::with_capacity(members.len() + 1);
        all.push(primary);
        all.extend(members.iter().cloned());
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % all.len();
        all.rotate_left(start);
        all
    }

    /// Drops a member name nothing is bound to any more.
    pub fn forget(&self, member: &[u8]) {
        let mut map = self.members.lock();
        map.retain(|_, list| {
            list.retain(|m| m != member);
            !list.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_over_the_group_and_forgets() {
        let g = Groups::default();
        assert_eq!(g.names(b"a".to_vec()), vec![b"a".to_vec()]);
        assert!(g.add(b"a", b"a/rp-1".to_vec()));
        let first = g.names(b"a".to_vec());
        let second = g.names(b"a".to_vec());
        assert_eq!(first.len(), 2);
        assert_ne!(first[0], second[0]);
        g.forget(b"a/rp-1");
        assert_eq!(g.names(b"a".to_vec()), vec![b"a".to_vec()]);
    }
}
