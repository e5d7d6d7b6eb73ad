//! The guest's `/proc/net/unix`, `tcp`, `tcp6`, `udp`, `udp6`, `icmp`,
//! `icmp6` and `netlink`, live at each open. The guest's TCP/UDP sockets are host `AF_UNIX` sockets
//! of its own network namespace (the netstack's), so its kernel lists
//! them in `unix` (with the netstack's names and token) and nothing in
//! the internet files. Served instead: `unix` without the netstack's
//! sockets (named behind its token, in its table, or held by the
//! supervisor: relays, stand-ins, the DNS stub), and the internet files
//! with one line per live netstack socket as Linux writes it — TCP
//! listeners and connections, bound UDP sockets, bound ping sockets
//! (in `icmp` and `icmp6`, as Linux lists them, not in `udp`) — with the guest's
//! addresses, the inode its descriptors show and the queues of its host
//! socket (`netstack::queues`), so netstat, `ss`
//! (whose netlink query is refused, so it reads these) and psutil see
//! the guest's servers. `netlink` is the kernel's without the sockets
//! the supervisor holds (the socket factory's `NETLINK_SOCK_DIAG` socket,
//! whose port id, once the supervisor dumps through it, is the
//! supervisor's host pid). `sockstat` is the kernel's with its
//! `sockets: used` count less the sockets the supervisor keeps in the
//! guest's namespace, and the `inuse` of its TCP, UDP and UDP-Lite lines
//! (and `sockstat6`'s) the count of the guest's own (`sockstat.rs`).
//!
//! Owns: recognising those files by the path the kernel gives them, and
//! their texts. Does not own: serving the text (`served::substitute`),
//! or the sockets' metadata (`netstack`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};

use netstack::queues::Queue;
use netstack::{addr, icmp, Meta, Proto, Stack};

use super::sockstat;

/// A served `/proc/<pid>/net/` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetFile {
    Unix,
    Tcp,
    Tcp6,
    Udp,
    Udp6,
    Icmp,
    Icmp6,
    Netlink,
    Sockstat,
    Sockstat6,
}

impl NetFile {
    pub fn memfd_name(self) -> &'static std::ffi::CStr {
        match self {
            NetFile::Unix => c"unix",
            NetFile::Tcp => c"tcp",
            NetFile::Tcp6 => c"tcp6",
            NetFile::Udp => c"udp",
            NetFile::Udp6 => c"udp6",
            NetFile::Icmp => c"icmp",
            NetFile::Icmp6 => c"icmp6",
            NetFile::Netlink => c"netlink",
            NetFile::Sockstat => c"sockstat",
            NetFile::Sockstat6 => c"sockstat6",
        }
    }

    /// Whether `path`, as the kernel names it, is a process's network
    /// directory or under it (`/proc/<pid>/net/dev`,
    /// `/proc/<pid>/task/<tid>/net`): what the kernel shows there is the
    /// guest's network namespace.
    pub fn in_net_dir(path: &str) -> bool {
        under_net_dir(path).is_some()
    }

    /// The file at `path` as the kernel names it (`/proc/<pid>/net/tcp`,
    /// `/proc/<pid>/task/<tid>/net/tcp`), if served.
    pub fn at(path: &str) -> Option<NetFile> {
        let name = under_net_dir(path)?;
        match name {
            "unix" => Some(NetFile::Unix),
            "tcp" => Some(NetFile::Tcp),
            "tcp6" => Some(NetFile::Tcp6),
            "udp" => Some(NetFile::Udp),
            "udp6" => Some(NetFile::Udp6),
            "icmp" => Some(NetFile::Icmp),
            "icmp6" => Some(NetFile::Icmp6),
            "netlink" => Some(NetFile::Netlink),
            "sockstat" => Some(NetFile::Sockstat),
            "sockstat6" => Some(NetFile::Sockstat6),
            _ => None,
        }
    }

    /// Whether this file lists the socket `meta` describes: a ping
    /// socket is `Proto::Udp` to the netstack, ICMP's to Linux.
    fn wants(self, meta: &Meta) -> bool {
        let v4 = meta.domain == libc::AF_INET;
        let v6 = meta.domain == libc::AF_INET6;
        let ping = icmp::is_ping(meta.domain, meta.protocol);
        let datagram = meta.proto == Proto::Udp;
        match self {
            NetFile::Tcp => meta.proto == Proto::Tcp && v4,
            NetFile::Tcp6 => meta.proto == Proto::Tcp && v6,
            NetFile::Udp => datagram && !ping && v4,
            NetFile::Udp6 => datagram && !ping && v6,
            NetFile::Icmp => datagram && ping && v4,
            NetFile::Icmp6 => datagram && ping && v6,
            NetFile::Unix | NetFile::Netlink | NetFile::Sockstat | NetFile::Sockstat6 => false,
        }
    }
}

/// What follows a process's network directory in `path`, as the kernel
/// names it: `""` for `/proc/<pid>/net` itself, `"tcp"` for
/// `/proc/<pid>/task/<tid>/net/tcp`; `None` outside such a directory.
fn under_net_dir(path: &str) -> Option<&str> {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (pid, rest) = path.strip_prefix("/proc/")?.split_once('/')?;
    if !numeric(pid) {
        return None;
    }
    let rest = match rest.strip_prefix("task/") {
        Some(task) => {
            let (tid, rest) = task.split_once('/')?;
            numeric(tid).then_some(rest)?
        }
        None => rest,
    };
    match rest.strip_prefix("net")? {
        "" => Some(""),
        below => below.strip_prefix('/'),
    }
}

/// One line of the kernel's `/proc/net/unix`.
struct UnixLine<'a> {
    text: &'a str,
    listening: bool,
    connected: bool,
    inode: u64,
    path: Option<&'a str>,
}

/// The lines after the header of a `/proc/net/unix` text.
fn unix_lines(text: &str) -> impl Iterator<Item = UnixLine<'_>> {
    text.lines().skip(1).filter_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
        Some(UnixLine {
            text: line,
            listening: flags & 0x0001_0000 != 0,
            connected: *f.get(5)? == "03",
            inode: f.get(6)?.parse().ok()?,
            path: f.get(7).copied(),
        })
    })
}

/// What the texts need besides the kernel's own.
pub struct Sources<'a> {
    pub net: &'a Stack,
    /// The sandbox namespace's unix listing (the netstack's view).
    pub listing: String,
    /// Socket inodes the supervisor holds.
    pub held: HashSet<u64>,
    /// The netstack sockets' owner as the guest sees it.
    pub uid: u32,
    /// The namespace's unix sockets' queues by inode (`Stack::queues`).
    pub queues: HashMap<u64, Queue>,
    /// Whether the supervisor holds the namespace's sock_diag socket
    /// (`Stack::holds_diag`; asked for `sockstat` only).
    pub diag: bool,
}

/// The text of `file`, whose kernel text (the guest's namespace) is `host`.
pub fn text(file: NetFile, host: &str, src: &Sources<'_>) -> String {
    match file {
        NetFile::Unix => guest_unix(host, src),
        NetFile::Netlink => guest_netlink(host, &src.held),
        NetFile::Sockstat => {
            let in_use = in_use(src, [NetFile::Tcp, NetFile::Udp]);
            sockstat::guest_sockstat(host, supervisors_sockets(src), in_use)
        }
        NetFile::Sockstat6 => {
            sockstat::guest_sockstat6(host, in_use(src, [NetFile::Tcp6, NetFile::Udp6]))
        }
        _ => inet(file, src),
    }
}

/// `host` (`/proc/net/netlink`, the inode last on each line) without
/// the sockets in `held`: the supervisor's, which the guest never sees.
pub fn guest_netlink(host: &str, held: &HashSet<u64>) -> String {
    let mut out = String::new();
    for (i, line) in host.lines().enumerate() {
        let inode = line.split_whitespace().last().and_then(|v| v.parse().ok());
        if i > 0 && inode.is_some_and(|n: u64| held.contains(&n)) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `host` without the netstack's sockets.
fn guest_unix(host: &str, src: &Sources<'_>) -> String {
    let mut out = String::new();
    if let Some(header) = host.lines().next() {
        out.push_str(header);
        out.push('\n');
    }
    let netstack = |l: &UnixLine<'_>| {
        l.path
            .and_then(|p| p.strip_prefix('@'))
            .is_some_and(|p| src.net.namer.owns(p.as_bytes()))
            || src.held.contains(&l.inode)
            || src.net.table.get(l.inode).is_some()
    };
    for line in unix_lines(host).filter(|l| !netstack(l)) {
        out.push_str(line.text);
        out.push('\n');
    }
    out
}

/// How many sockets of the guest's namespace are the supervisor's: the
/// unix sockets it holds that stand for no guest socket (the spares of
/// the netstack's pool, relays, stand-ins, the DNS stub), and the
/// socket factory's sock_diag socket, which no listing shows.
fn supervisors_sockets(src: &Sources<'_>) -> u64 {
    let held = unix_lines(&src.listing)
        .filter(|l| src.held.contains(&l.inode) && src.net.table.get(l.inode).is_none())
        .count();
    held as u64 + u64::from(src.diag)
}

/// The guest's sockets Linux's sockstat (IPv4: `[Tcp, Udp]`) or
/// sockstat6 (`[Tcp6, Udp6]`) counts as in use: those the `tcp` and
/// `udp` file list (TCP listeners and connections, bound UDP sockets; a
/// ping socket is ICMP's), and each connection waiting in a listener's
/// queue (on Linux a socket from its handshake on; here the listener's
/// host socket's queue, `Sources::queues`).
fn in_use(src: &Sources<'_>, [tcp, udp]: [NetFile; 2]) -> sockstat::InUse {
    let mut n = sockstat::InUse::default();
    for e in entries(tcp, src) {
        let waiting = if e.state == LISTEN { e.queues.1 } else { 0 };
        n.tcp += 1 + u64::from(waiting);
    }
    for e in entries(udp, src) {
        match e.protocol {
            libc::IPPROTO_UDP => n.udp += 1,
            libc::IPPROTO_UDPLITE => n.udplite += 1,
            _ => {}
        }
    }
    n
}

/// TCP states as `/proc/net/tcp` numbers them.
const ESTABLISHED: u8 = 0x01;
const CLOSE: u8 = 0x07;
const LISTEN: u8 = 0x0A;

/// One internet socket line's facts.
struct Entry {
    local: SocketAddr,
    remote: SocketAddr,
    state: u8,
    inode: u64,
    /// `tx_queue`, `rx_queue`.
    queues: (u32, u32),
    /// The protocol number the guest's socket() named (or its default).
    protocol: i32,
}

/// The first line of the kernel's `/proc/net/tcp`, `tcp6`, `udp`,
/// `udp6`, `icmp` and `icmp6` (`tcp4_seq_show`, `tcp6_seq_show`,
/// `udp4_seq_show`, `ping_v4_seq_show`, `IPV6_SEQ_DGRAM_HEADER`; the IPv4
/// files pad theirs as their lines), unchanged since Linux 3.0; `None`
/// for the other files.
pub fn inet_header(file: NetFile) -> Option<String> {
    const COLUMNS: &str = "st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
    const V6: &str =
        "  sl  local_address                         remote_address                       ";
    let line = match file {
        NetFile::Tcp => format!(
            "{:149}",
            format!("  sl  local_address rem_address   {COLUMNS}")
        ),
        NetFile::Tcp6 => format!("{V6} {COLUMNS}"),
        NetFile::Udp => format!(
            "{:127}",
            format!("   sl  local_address rem_address   {COLUMNS} ref pointer drops")
        ),
        NetFile::Icmp => format!(
            "{:127}",
            format!("  sl  local_address rem_address   {COLUMNS} ref pointer drops")
        ),
        NetFile::Udp6 | NetFile::Icmp6 => format!("{V6} {COLUMNS} ref pointer drops"),
        NetFile::Unix | NetFile::Netlink | NetFile::Sockstat | NetFile::Sockstat6 => return None,
    };
    Some(line)
}

/// The kernel's header and a line per live netstack socket of `file`'s
/// transport and family.
fn inet(file: NetFile, src: &Sources<'_>) -> String {
    let mut out = inet_header(file).unwrap_or_default();
    out.push('\n');
    let v6 = matches!(file, NetFile::Tcp6 | NetFile::Udp6 | NetFile::Icmp6);
    for (i, e) in entries(file, src).iter().enumerate() {
        let line = match file {
            NetFile::Tcp | NetFile::Tcp6 => tcp_line(i, e, src.uid, v6),
            _ => udp_line(i, e, src.uid, v6),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn entries(file: NetFile, src: &Sources<'_>) -> Vec<Entry> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for l in unix_lines(&src.listing) {
        let Some(meta) = src.net.table.get(l.inode) else {
            continue;
        };
        if !file.wants(&meta) || !seen.insert(l.inode) {
            continue;
        }
        let named = l
            .path
            .and_then(|p| p.strip_prefix('@'))
            .and_then(|p| src.net.namer.decode(p.as_bytes()));
        let Some(local) = meta.local.or(named.map(|n| n.addr)) else {
            continue;
        };
        let remote = meta.peer.unwrap_or_else(|| addr::unspecified(meta.domain));
        let state = match (meta.proto, l.listening, l.connected) {
            (Proto::Tcp, true, _) => LISTEN,
            (Proto::Tcp, false, true) => ESTABLISHED,
            // A bound TCP socket that neither listens nor is connected
            // is in no table Linux lists.
            (Proto::Tcp, false, false) => continue,
            (Proto::Udp, _, _) if meta.peer.is_some() => ESTABLISHED,
            (Proto::Udp, _, _) => CLOSE,
        };
        out.push(Entry {
            local,
            remote,
            state,
            inode: l.inode,
            queues: queues(meta.proto, state, l.inode, &src.queues),
            protocol: meta.protocol,
        });
    }
    // Linux walks the listening sockets first.
    out.sort_by_key(|e| e.state != LISTEN);
    out
}

/// `tx_queue` and `rx_queue` of the netstack socket `inode` from its
/// host socket's: a listener's rx is its accept queue (TCP's
/// `sk_ack_backlog`; tx 0, as Linux writes for a listener); a
/// connection's rx the bytes unread in its receive queue and its tx the
/// bytes it wrote that its peer has not read (which `AF_UNIX` moves to the
/// peer's receive queue at once: TCP counts a byte on the sender's line
/// until the peer's kernel acknowledges it, then on the receiver's); a UDP
/// socket's rx the first queued datagram's bytes (what SIOCINQ answers;
/// Linux's line shows the queue's memory) and tx 0 (a loopback datagram
/// leaves the send queue at its send).
fn queues(proto: Proto, state: u8, inode: u64, all: &HashMap<u64, Queue>) -> (u32, u32) {
    let Some(own) = all.get(&inode) else {
        return (0, 0);
    };
    match (proto, state) {
        (Proto::Tcp, ESTABLISHED) => {
            let unread = own.peer.and_then(|p| all.get(&p)).map_or(0, |p| p.rx);
            (unread, own.rx)
        }
        _ => (0, own.rx),
    }
}

/// An address as the kernel prints it: the network-order words read as
/// native integers, in hex, then the port.
fn hex_addr(a: SocketAddr, v6: bool) -> String {
    let words: Vec<u32> = match (a.ip(), v6) {
        (IpAddr::V4(ip), false) => vec![u32::from_ne_bytes(ip.octets())],
        (IpAddr::V4(ip), true) => hex_words(ip.to_ipv6_mapped().octets()),
        (IpAddr::V6(ip), true) => hex_words(ip.octets()),
        (IpAddr::V6(ip), false) => {
            let v4 = ip.to_ipv4_mapped().map_or([0; 4], |v| v.octets());
            vec![u32::from_ne_bytes(v4)]
        }
    };
    let mut s = String::new();
    for w in words {
        let _ = write!(s, "{w:08X}");
    }
    let _ = write!(s, ":{:04X}", a.port());
    s
}

fn hex_words(o: [u8; 16]) -> Vec<u32> {
    o.chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A `/proc/net/tcp[6]` line (`tcp4_seq_show`, `tcp6_seq_show`): no
/// timers; the IPv4 file pads lines to 149 columns.
fn tcp_line(i: usize, e: &Entry, uid: u32, v6: bool) -> String {
    let tail = match e.state {
        LISTEN => "100 0 0 10 0",
        _ => "20 4 30 10 -1",
    };
    let rest = format!("1 0000000000000000 {tail}");
    sock_line(&format!("{i:4}"), e, uid, v6, &rest, 149)
}

/// A `/proc/net/udp[6]` or `icmp[6]` line (`udp4_format_sock`,
/// `ping_v4_format_sock`, `ip6_dgram_sock_seq_show`: the same columns);
/// the IPv4 files pad lines to 127 columns.
fn udp_line(i: usize, e: &Entry, uid: u32, v6: bool) -> String {
    sock_line(&format!("{i:5}"), e, uid, v6, "2 0000000000000000 0", 127)
}

/// The columns the TCP and UDP files share: slot, local and remote
/// address, state, queues, empty timers, uid, timeout 0 and inode;
/// then `rest` (reference count onward). IPv4 lines are padded to `pad`.
fn sock_line(slot: &str, e: &Entry, uid: u32, v6: bool, rest: &str, pad: usize) -> String {
    let line = format!(
        "{slot}: {} {} {:02X} {:08X}:{:08X} 00:00000000 00000000 {uid:5} {:8} {} {rest}",
        hex_addr(e.local, v6),
        hex_addr(e.remote, v6),
        e.state,
        e.queues.0,
        e.queues.1,
        0,
        e.inode,
    );
    match v6 {
        true => line,
        false => format!("{line:<pad$}"),
    }
}

/// The socket inodes among the descriptors of the calling process.
pub fn held_sockets() -> HashSet<u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return HashSet::new();
    };
    dir.filter_map(|e| {
        let link = std::fs::read_link(e.ok()?.path()).ok()?;
        let s = link.to_str()?;
        s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    })
    .collect()
}

/// The netstack sockets' owner as a process whose `uid_map` is `map`
/// sees it, the supervisor's euid being `euid`: the supervisor's own id
/// where the map has it (the invoker's, as the guest's main process has
/// it), else the guest's root. Under a range of ids as root the
/// supervisor (host root) has no id inside; the sockets are then the
/// sandbox's owner's, the guest's root, whose programs natively see
/// their own uid 0 in this column (`ss -e`, psutil's `uids`).
pub fn socket_owner(map: &str, euid: u32) -> u32 {
    inside_uid(map, euid).unwrap_or(0)
}

/// `uid` (the host's) inside the namespace whose `uid_map` is `map`, if
/// it has one.
fn inside_uid(map: &str, uid: u32) -> Option<u32> {
    map.lines()
        .filter_map(|l| {
            let f: Vec<u32> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            match f.as_slice() {
                [inside, outside, count] => Some((*inside, *outside, *count)),
                _ => None,
            }
        })
        .find(|(_, outside, count)| uid >= *outside && uid - outside < *count)
        .map(|(inside, outside, _)| inside + (uid - outside))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The headers are the running kernel's, byte for byte.
    #[test]
    fn inet_headers_are_the_kernels() {
        for (file, name) in [
            (NetFile::Tcp, "tcp"),
            (NetFile::Tcp6, "tcp6"),
            (NetFile::Udp, "udp"),
            (NetFile::Udp6, "udp6"),
            (NetFile::Icmp, "icmp"),
            (NetFile::Icmp6, "icmp6"),
        ] {
            let Ok(text) = std::fs::read_to_string(format!("/proc/net/{name}")) else {
                continue;
            };
            let kernel = text.lines().next().unwrap_or_default();
            assert_eq!(inet_header(file).as_deref(), Some(kernel), "{name}");
        }
        assert_eq!(inet_header(NetFile::Unix), None);
    }

    #[test]
    fn paths_and_addresses() {
        assert_eq!(NetFile::at("/proc/12/net/tcp6"), Some(NetFile::Tcp6));
        assert_eq!(NetFile::at("/proc/1/task/3/net/unix"), Some(NetFile::Unix));
        assert_eq!(NetFile::at("/proc/5/net/netlink"), Some(NetFile::Netlink));
        assert_eq!(NetFile::at("/proc/net/tcp"), None);
        assert_eq!(NetFile::at("/proc/1/net/dev"), None);
        for inside in [
            "/proc/1/net",
            "/proc/7/net/dev",
            "/proc/7/task/8/net/fib_trie",
        ] {
            assert!(NetFile::in_net_dir(inside), "{inside}");
        }
        for outside in [
            "/proc/net",
            "/proc/self/net/dev",
            "/proc/1/netstat",
            "/proc/1/task/x/net",
            "/sys/net",
        ] {
            assert!(!NetFile::in_net_dir(outside), "{outside}");
        }
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(hex_addr(a, false), "0100007F:1F90");
        let b: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(hex_addr(b, true), "00000000000000000000000001000000:0050");
        assert_eq!(inside_uid("0 1001 1\n", 1001), Some(0));
        assert_eq!(inside_uid("0 0 4294967295\n", 1001), Some(1001));
        assert_eq!(inside_uid("0 1001 1\n", 5), None);
        assert_eq!(socket_owner("0 196608 65536\n", 0), 0);
        assert_eq!(socket_owner("0 1001 1\n1 100000 65535\n", 1001), 0);
        assert_eq!(socket_owner("0 0 4294967295\n", 1001), 1001);
        assert_eq!(socket_owner("65534 65534 1\n", 65534), 65534);
    }

    #[test]
    fn netlink_without_the_held_sockets() {
        let head = "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode";
        let kernel =
            "0000000005c7e69e 4   0          00000000 0        0        0     2        0        17";
        let ours =
            "00000000dd23f7fb 4   6878       00000000 0        0        0     2        0        42";
        let host = format!("{head}\n{kernel}\n{ours}\n");
        let held: HashSet<u64> = [42, 7].into();
        assert_eq!(guest_netlink(&host, &held), format!("{head}\n{kernel}\n"));
        assert_eq!(guest_netlink(&host, &HashSet::new()), host);
    }

    #[test]
    fn queues_as_tcp_and_udp_count_them() {
        let q = |rx, peer| Queue { rx, peer };
        let all: HashMap<u64, Queue> = [
            (1, q(2, None)),
            (2, q(0, Some(3))),
            (3, q(500, Some(2))),
            (4, q(100, None)),
        ]
        .into();
        // A listener: its accept queue; tx 0.
        assert_eq!(queues(Proto::Tcp, LISTEN, 1, &all), (0, 2));
        // A writer whose peer has not read: its tx is the peer's unread.
        assert_eq!(queues(Proto::Tcp, ESTABLISHED, 2, &all), (500, 0));
        assert_eq!(queues(Proto::Tcp, ESTABLISHED, 3, &all), (0, 500));
        // UDP: the first datagram's bytes, tx 0; a socket the dump missed: 0.
        assert_eq!(queues(Proto::Udp, CLOSE, 4, &all), (0, 100));
        assert_eq!(queues(Proto::Tcp, ESTABLISHED, 9, &all), (0, 0));
    }
}
