//! The kernel's list of `AF_UNIX` sockets in the netstack's network
//! namespace (`/proc/<pid>/net/unix`, see [`crate::sockets`]): which netstack names are bound (for the
//! wildcard-versus-specific conflicts the kernel cannot see in names),
//! and which socket inodes still exist (to garbage-collect metadata).
//!
//! Owns: reading and parsing the list, and the conflict rule between two
//! bound addresses of one port. Does not own: binding.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;

use crate::addr;
use crate::name::{Named, Namer, Proto};

/// (inode, abstract name without the NUL, if any) of every unix socket.
fn entries(text: &str) -> impl Iterator<Item = (u64, Option<&str>)> {
    text.lines().skip(1).filter_map(|line| {
        let mut f = line.split_whitespace();
        let inode = f.nth(6)?.parse().ok()?;
        let name = f.next().and_then(|p| p.strip_prefix('@'));
        Some((inode, name))
    })
}

/// Inodes of every unix socket in `listing` that still exists, or `None`
/// when the list cannot be read (then nothing is collected).
pub fn live_inodes(listing: &Path) -> Option<HashSet<u64>> {
    let text = std::fs::read_to_string(listing).ok()?;
    Some(entries(&text).map(|(i, _)| i).collect())
}

/// (inode, decoded name) of this sandbox's bound sockets of `proto` on `port`.
/// `listing` is the namespace's `/proc/<pid>/net/unix`.
pub fn bound_on(listing: &Path, namer: &Namer, proto: Proto, port: u16) -> Vec<(u64, Named)> {
    let text = std::fs::read_to_string(listing).unwrap_or_default();
    entries(&text)
        .filter_map(|(inode, name)| Some((inode, namer.decode(name?.as_bytes())?)))
        .filter(|(_, n)| n.proto == proto && n.addr.port() == port)
        .collect()
}

/// Whether binding `new` is refused because `old` holds the same port:
/// the same address; a wildcard of the same family and anything of that
/// family; `::` without IPV6_V6ONLY and any IPv4 address (Linux's rule,
/// without SO_REUSEADDR's exceptions for sockets that do not listen).
pub fn conflicts(new: &Named, old: &Named) -> bool {
    let (a, b) = (addr::canonical(new.addr), addr::canonical(old.addr));
    if a.port() != b.port() || new.proto != old.proto {
        return false;
    }
    match (a.is_ipv4(), b.is_ipv4()) {
        (true, true) | (false, false) => {
            a.ip() == b.ip() || addr::is_wildcard(a) || addr::is_wildcard(b)
        }
        (true, false) => covers_v4(b, old.v6only),
        (false, true) => covers_v4(a, new.v6only),
    }
}

/// `::` without IPV6_V6ONLY takes every IPv4 address of its port too.
fn covers_v4(v6: SocketAddr, v6only: bool) -> bool {
    addr::is_wildcard(v6) && !v6only
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(a: &str, v6only: bool) -> Named {
        Named {
            proto: Proto::Tcp,
            addr: a.parse().unwrap(),
            v6only,
        }
    }

    #[test]
    fn linux_conflicts() {
        assert!(conflicts(
            &n("127.0.0.1:80", false),
            &n("127.0.0.1:80", false)
        ));
        assert!(conflicts(
            &n("127.0.0.1:80", false),
            &n("0.0.0.0:80", false)
        ));
        assert!(conflicts(
            &n("0.0.0.0:80", false),
            &n("127.0.0.2:80", false)
        ));
        assert!(!conflicts(
            &n("127.0.0.1:80", false),
            &n("127.0.0.2:80", false)
        ));
        assert!(!conflicts(
            &n("127.0.0.1:80", false),
            &n("127.0.0.1:81", false)
        ));
        assert!(conflicts(&n("[::]:80", false), &n("0.0.0.0:80", false)));
        assert!(!conflicts(&n("[::]:80", true), &n("0.0.0.0:80", false)));
        assert!(conflicts(&n("127.0.0.1:80", false), &n("[::]:80", false)));
        assert!(!conflicts(&n("127.0.0.1:80", false), &n("[::1]:80", false)));
        assert!(conflicts(&n("[::1]:80", false), &n("[::]:80", true)));
    }

    #[test]
    fn parses_proc_net_unix() {
        let text = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 4242 @sbx-t/tcp/127.0.0.1/80\n\
            0000000000000000: 00000002 00000000 00000000 0002 01 4243\n\
            0000000000000000: 00000002 00000000 00000000 0001 01 4244 /run/x.sock\n";
        let e: Vec<_> = entries(text).collect();
        assert_eq!(e[0], (4242, Some("sbx-t/tcp/127.0.0.1/80")));
        assert_eq!(e[1], (4243, None));
        assert_eq!(e[2], (4244, None));
    }
}
