//! The guest's `/proc/net/sockstat` and `sockstat6`: the kernel's text of the guest's
//! network namespace, whose `sockets: used` counts every socket made in
//! it, the supervisor's own there too (the netstack's spare sockets, the
//! guest side of relays, the DNS stub, the socket factory's sock_diag
//! socket: `net.rs` counts them). The guest reads the count less those,
//! what a fresh namespace of its own would show (0 before its first
//! socket). The guest's TCP and UDP sockets are `AF_UNIX` ones of the
//! netstack, which the kernel's `TCP:`, `UDP:` and `UDPLITE:` lines do
//! not count: their `inuse` is the guest's own count (`net.rs`
//! counts them, [`InUse`]), and so is that of sockstat6's `TCP6:`,
//! `UDP6:` and `UDPLITE6:` for its IPv6 sockets. The other figures stay the kernel's: `alloc`,
//! `orphan` and `mem` are the host's, as in any namespace; `tw` and the
//! `RAW` and `FRAG` lines are the sandbox namespace's.
//!
//! Owns: those lines' rewrite. Does not own: which sockets are the
//! supervisor's, or which the guest's count (`net.rs`), serving the text
//! (`served.rs`).

/// The guest's sockets each protocol line counts as in use, as Linux
/// counts them (`sock_prot_inuse_get` of the IPv4 protocols): TCP
/// sockets that listen or are connected, UDP and UDP-Lite sockets that
/// are bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InUse {
    pub tcp: u64,
    pub udp: u64,
    pub udplite: u64,
}

/// `host` (the kernel's sockstat) with `sockets: used N` less `ours`
/// (never below 0: a socket made or closed between the two reads), and
/// the `inuse` of the TCP, UDP and UDP-Lite lines `in_use`'s.
pub fn guest_sockstat(host: &str, ours: u64, in_use: InUse) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        if let Some(used) = line
            .strip_prefix("sockets: used ")
            .and_then(|n| n.trim().parse::<u64>().ok())
        {
            out.push_str(&format!("sockets: used {}", used.saturating_sub(ours)));
        } else {
            out.push_str(&with_in_use(line, in_use, ""));
        }
        out.push('\n');
    }
    out
}

/// `host` (the kernel's sockstat6) with the `inuse` of its TCP6, UDP6
/// and UDPLITE6 lines `in_use`'s (the guest's IPv6 sockets).
pub fn guest_sockstat6(host: &str, in_use: InUse) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        out.push_str(&with_in_use(line, in_use, "6"));
        out.push('\n');
    }
    out
}

/// A protocol line with its `inuse` figure the guest's, when it is the
/// TCP, UDP or UDP-Lite one (their names followed by `suffix`: "6" in
/// sockstat6); any other line as it is.
fn with_in_use(line: &str, in_use: InUse, suffix: &str) -> String {
    let proto = line.split_once(": inuse ").map(|(proto, _)| proto);
    let count = match proto.and_then(|p| p.strip_suffix(suffix)) {
        Some("TCP") => in_use.tcp,
        Some("UDP") => in_use.udp,
        Some("UDPLITE") => in_use.udplite,
        _ => return line.to_owned(),
    };
    let mut fields: Vec<String> = line.split(' ').map(str::to_owned).collect();
    // "PROTO:", "inuse", N, ...: the figure is the third field.
    match fields.get_mut(2) {
        Some(n) if n.parse::<u64>().is_ok() => *n = count.to_string(),
        _ => return line.to_owned(),
    }
    fields.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_and_the_in_use_figures_change() {
        let host = "sockets: used 66\nTCP: inuse 0 orphan 0 tw 0 alloc 1 mem 0\n\
                    UDP: inuse 0 mem 234\nUDPLITE: inuse 0\nRAW: inuse 0\n\
                    FRAG: inuse 0 memory 0\n";
        let want = "sockets: used 1\nTCP: inuse 5 orphan 0 tw 0 alloc 1 mem 0\n\
                    UDP: inuse 2 mem 234\nUDPLITE: inuse 1\nRAW: inuse 0\n\
                    FRAG: inuse 0 memory 0\n";
        let in_use = InUse {
            tcp: 5,
            udp: 2,
            udplite: 1,
        };
        assert_eq!(guest_sockstat(host, 65, in_use), want);
        let none = InUse::default();
        assert!(guest_sockstat(host, 70, none).starts_with("sockets: used 0\n"));
        assert_eq!(guest_sockstat("odd\n", 3, in_use), "odd\n");
        assert_eq!(
            guest_sockstat("TCP: inuse x\n", 0, in_use),
            "TCP: inuse x\n"
        );
        assert_eq!(
            guest_sockstat("TCP6: inuse 0\n", 0, in_use),
            "TCP6: inuse 0\n"
        );
    }

    #[test]
    fn sockstat6_takes_the_ipv6_figures() {
        let host = "TCP6: inuse 0\nUDP6: inuse 0\nUDPLITE6: inuse 0\nRAW6: inuse 0\n\
                    FRAG6: inuse 0 memory 0\n";
        let want = "TCP6: inuse 3\nUDP6: inuse 2\nUDPLITE6: inuse 1\nRAW6: inuse 0\n\
                    FRAG6: inuse 0 memory 0\n";
        let in_use = InUse {
            tcp: 3,
            udp: 2,
            udplite: 1,
        };
        assert_eq!(guest_sockstat6(host, in_use), want);
        assert_eq!(guest_sockstat6("TCP: inuse 0\n", in_use), "TCP: inuse 0\n");
    }
}
