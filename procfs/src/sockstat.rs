//! The guest's `/proc/net/sockstat`: the kernel's text of the guest's
//! network namespace, whose `sockets: used` counts every socket made in
//! it, the supervisor's own there too (the netstack's spare sockets, the
//! guest side of relays, the DNS stub, the socket factory's sock_diag
//! socket: `net.rs` counts them). The guest reads the count less those,
//! what a fresh namespace of its own would show (0 before its first
//! socket). The protocol lines stay the kernel's: the guest's TCP and UDP
//! sockets are `AF_UNIX` ones of the netstack, so their `inuse` reads 0.
//!
//! Owns: that line's rewrite. Does not own: which sockets are the
//! supervisor's (`net.rs`), serving the text (`served.rs`).

/// `host` (the kernel's sockstat) with `sockets: used N` less `ours`
/// (never below 0: a socket made or closed between the two reads).
pub fn guest_sockstat(host: &str, ours: u64) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        match line
            .strip_prefix("sockets: used ")
            .and_then(|n| n.trim().parse::<u64>().ok())
        {
            Some(used) => out.push_str(&format!("sockets: used {}", used.saturating_sub(ours))),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_count_changes() {
        let host =
            "sockets: used 66\nTCP: inuse 0 orphan 0 tw 0 alloc 1 mem 0\nUDP: inuse 0 mem 234\n";
        let want =
            "sockets: used 1\nTCP: inuse 0 orphan 0 tw 0 alloc 1 mem 0\nUDP: inuse 0 mem 234\n";
        assert_eq!(guest_sockstat(host, 65), want);
        assert!(guest_sockstat(host, 70).starts_with("sockets: used 0\n"));
        assert_eq!(guest_sockstat("odd\n", 3), "odd\n");
    }
}
