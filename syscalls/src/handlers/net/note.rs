//! The name note: what a marked accept leaves in the guest's own memory
//! so that the guest's preload (`sandbox/guest/socket_names.c`) answers
//! the accepted connection's getsockname without a round trip (and, the
//! connection being sandbox-local, its TCP_NODELAY: `netstack::nodelay`;
//! a client learns that from its marked connect's answer instead,
//! [`super::socket`]).
//!
//! An accept or accept4 made with [`NAME_NOTE_MARK`] in its fifth
//! register (r8, which the kernel ignores for both) and a pointer in its
//! sixth (r9) gets, before the connection is installed, a [`NOTE_LEN`]
//! record written there: the host socket's inode (`u64`), the local
//! name's length (`u32`), four zero bytes, and the name as getsockname
//! encodes it (at most 28 bytes, zero-padded to 32). The name is the one
//! the netstack's table keeps for the connection ([`netstack::Stack::adopt`]),
//! so a served getsockname and the note agree by construction.
//!
//! Nothing here is trusted or read back: the write goes to memory the
//! caller named in its own process, and a bad pointer only leaves the
//! note unwritten (the write's error is dropped; the accept's answer is
//! unchanged). A guest that forges or corrupts a note misleads only
//! itself (docs/network.md, "Names without a round trip"). Does not own:
//! the accept itself ([`super::accept`]) or the preload's side.

use netstack::addr;
use netstack::stack::Adopted;

use crate::guest::{Guest, SyscallArgs};

/// The mark of an accept that asks for a note (r8). Must equal
/// `NAME_NOTE_MARK` of `sandbox/guest/socket_names.c` (a unit test in
/// `sandbox/src/launch/fast_reads.rs` compares them).
pub const NAME_NOTE_MARK: u64 = 0x6e61_6d65_5eed_c0de;

/// The note's size in bytes: inode, length, padding, 32 name bytes.
pub const NOTE_LEN: usize = 48;

/// Set in the answer of a connect marked to learn a local connection
/// (the inode of its host socket) when the connect is in progress: a
/// non-blocking one's EINPROGRESS. Must equal `IN_PROGRESS` of
/// `sandbox/guest/socket_names.c` (the unit test of `NAME_NOTE_MARK`).
pub const CONNECT_IN_PROGRESS: u64 = 1 << 62;

/// Where the call asks for its note (`None`: unmarked, or no pointer).
pub(crate) fn requested(c: &SyscallArgs) -> Option<u64> {
    (c.args[4] == NAME_NOTE_MARK && c.args[5] != 0).then_some(c.args[5])
}

/// The note of `conn`, a connection of a socket of `domain`.
pub fn encode(domain: i32, conn: &Adopted) -> [u8; NOTE_LEN] {
    let name = addr::encode(domain, conn.local);
    let n = name.len().min(NOTE_LEN - 16);
    let mut note = [0u8; NOTE_LEN];
    note[..8].copy_from_slice(&conn.inode.to_ne_bytes());
    note[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
    note[16..16 + n].copy_from_slice(&name[..n]);
    note
}

/// Writes the note where the guest asked; a failed write is dropped.
pub(crate) fn leave(g: &dyn Guest, at: Option<u64>, domain: i32, conn: &Adopted) {
    if let Some(ptr) = at {
        // The guest's own memory: a bad pointer costs it its note only.
        let _ = g.write_mem(ptr, &encode(domain, conn));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_holds_the_inode_and_the_name() {
        let conn = Adopted {
            peer: "[::1]:40000".parse().unwrap(),
            local: "[::1]:8080".parse().unwrap(),
            inode: 0x1234_5678_9abc,
        };
        let note = encode(libc::AF_INET6, &conn);
        assert_eq!(note[..8], 0x1234_5678_9abc_u64.to_ne_bytes());
        assert_eq!(note[8..12], 28u32.to_ne_bytes());
        assert_eq!(note[16..44], addr::encode(libc::AF_INET6, conn.local)[..]);
        assert_eq!(note[44..], [0; 4]);
        let v4 = Adopted {
            local: "127.0.0.1:80".parse().unwrap(),
            ..conn
        };
        let note = encode(libc::AF_INET, &v4);
        assert_eq!(note[8..12], 16u32.to_ne_bytes());
        assert_eq!(note[32..], [0; 16]);
    }
}
