//! Ancillary data (control messages) of netstack UDP sockets: what
//! `recvmsg` reports (IP_PKTINFO, IP_TTL, IP_TOS; IPV6_PKTINFO,
//! IPV6_HOPLIMIT, IPV6_TCLASS) and what `sendmsg` may carry
//! (IPV6_HOPLIMIT, IPV6_TCLASS, IPV6_PKTINFO, IP_TTL, IP_TOS, IP_PKTINFO).
//!
//! A datagram travels between host `AF_UNIX` sockets, which carry no IP
//! header, so the per-packet metadata is derived at the receiver: the
//! destination address is the receiver's bound address (for a wildcard
//! receiver, the sender's own loopback address, which the netstack binds
//! to the address it dials); the hop limit (TTL) and traffic class (TOS)
//! are the sender's, and when they differ from the defaults (64, 0) —
//! a socket option or a per-packet control message — the serviced send
//! leaves a [`Stamp`] in [`Stamps`], found by the receive through the
//! sender's name and a fingerprint of the payload. Sends that pass the
//! filter natively (connected UDP `send`) leave none: their datagrams
//! report the defaults.
//!
//! Owns: the stamps, the kernel's `put_cmsg` layout and truncation
//! (MSG_CTRUNC) and the checks of sent control messages. Does not own:
//! guest memory (the handler reads and writes it) or the sockets.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use nix::errno::Errno;
use parking_lot::Mutex;

use crate::options::Options;

const SOL_IP: i32 = libc::IPPROTO_IP;
const SOL_IPV6: i32 = libc::IPPROTO_IPV6;
/// sizeof(struct cmsghdr) on x86_64.
const HDR: usize = 16;
/// The loopback interface's index (`lo` is the sandbox's only one).
const LO_INDEX: i32 = 1;
/// Default hop limit (TTL) and traffic class (TOS).
pub const DEFAULT_HOPS: u8 = 64;
/// Most stamps kept; the oldest go first (a receiver that never reads
/// its metadata cannot grow the store).
const MAX_STAMPS: usize = 4096;

/// CMSG_LEN.
pub const fn cmsg_len(len: usize) -> usize {
    HDR + len
}

/// CMSG_SPACE.
pub const fn cmsg_space(len: usize) -> usize {
    HDR + len.div_ceil(8) * 8
}

/// The IP-level metadata of one datagram, as the sender set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Hop limit (IPv6) or TTL (IPv4).
    pub hops: u8,
    /// Traffic class (IPv6) or TOS (IPv4).
    pub class: u8,
}

impl Default for Stamp {
    fn default() -> Self {
        Stamp {
            hops: DEFAULT_HOPS,
            class: 0,
        }
    }
}

impl Stamp {
    /// A sender's stamp from its socket options (`domain` is its family).
    pub fn of_socket(domain: i32, o: &Options) -> Stamp {
        use crate::options::classify;
        let get = |level, name| {
            let class = classify(domain, crate::Proto::Udp, level, name);
            o.get(level, name, class)
        };
        let (hops, class) = if domain == libc::AF_INET6 {
            (
                get(SOL_IPV6, libc::IPV6_UNICAST_HOPS),
                get(SOL_IPV6, libc::IPV6_TCLASS),
            )
        } else {
            (get(SOL_IP, libc::IP_TTL), get(SOL_IP, libc::IP_TOS))
        };
        Stamp {
            hops: u8::try_from(hops).unwrap_or(DEFAULT_HOPS),
            class: u8::try_from(class).unwrap_or(0),
        }
    }
}

/// A payload's fingerprint: a hash of its first 64 bytes (so a receive
/// into a smaller buffer, which sees only a prefix, still finds it
/// unless the buffer is shorter than that).
pub fn fingerprint(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data.iter().take(64) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Stamps of sent datagrams not yet received, oldest first (a [`Stamp`],
/// or any other per-datagram mark: `crate::stack`'s "sent over IPv4").
#[derive(Debug, Default)]
pub struct Stamps<T = Stamp> {
    queue: Mutex<VecDeque<(Vec<u8>, u64, T)>>,
}

impl<T: Copy + Default> Stamps<T> {
    /// An empty store (for a `static`).
    pub const fn new() -> Stamps<T> {
        Stamps {
            queue: parking_lot::const_mutex(VecDeque::new()),
        }
    }

    /// Records the stamp of a datagram sent from the socket named `from`.
    pub fn record(&self, from: &[u8], print: u64, stamp: T) {
        let mut q = self.queue.lock();
        if q.len() >= MAX_STAMPS {
            q.pop_front();
        }
        q.push_back((from.to_vec(), print, stamp));
    }

    /// The stamp of a datagram received from `from` (the oldest that
    /// matches), removed unless `peek`; the default without one.
    pub fn take(&self, from: &[u8], print: u64, peek: bool) -> T {
        let mut q = self.queue.lock();
        let Some(at) = q.iter().position(|(f, p, _)| *p == print && f == from) else {
            return T::default();
        };
        if peek {
            return q[at].2;
        }
        q.remove(at).map_or_else(T::default, |(_, _, s)| s)
    }
}

/// Which control messages a receiving socket asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub pktinfo: bool,
    pub hops: bool,
    pub class: bool,
}

impl Wanted {
    /// From the receiving socket's stored options.
    pub fn of(domain: i32, o: &Options) -> Wanted {
        if domain == libc::AF_INET6 {
            Wanted {
                pktinfo: o.flag(SOL_IPV6, libc::IPV6_RECVPKTINFO),
                hops: o.flag(SOL_IPV6, libc::IPV6_RECVHOPLIMIT),
                class: o.flag(SOL_IPV6, libc::IPV6_RECVTCLASS),
            }
        } else {
            Wanted {
                pktinfo: o.flag(SOL_IP, libc::IP_PKTINFO),
                hops: o.flag(SOL_IP, libc::IP_RECVTTL),
                class: o.flag(SOL_IP, libc::IP_RECVTOS),
            }
        }
    }

    pub fn any(&self) -> bool {
        self.pktinfo || self.hops || self.class
    }
}

/// The control messages of one received datagram, in the kernel's
/// order, as (level, type, data). `dst` is the datagram's destination.
pub fn messages(domain: i32, want: Wanted, dst: IpAddr, stamp: Stamp) -> Vec<(i32, i32, Vec<u8>)> {
    let mut out = Vec::new();
    if domain == libc::AF_INET6 {
        let v6 = match dst {
            IpAddr::V4(a) => a.to_ipv6_mapped(),
            IpAddr::V6(a) => a,
        };
        if want.pktinfo {
            let mut d = v6.octets().to_vec();
            d.extend_from_slice(&LO_INDEX.to_ne_bytes());
            out.push((SOL_IPV6, libc::IPV6_PKTINFO, d));
        }
        if want.hops {
            let d = i32::from(stamp.hops).to_ne_bytes().to_vec();
            out.push((SOL_IPV6, libc::IPV6_HOPLIMIT, d));
        }
        if want.class {
            let d = i32::from(stamp.class).to_ne_bytes().to_vec();
            out.push((SOL_IPV6, libc::IPV6_TCLASS, d));
        }
    } else {
        let v4 = match dst {
            IpAddr::V4(a) => a.octets(),
            IpAddr::V6(a) => a.to_ipv4_mapped().map_or([127, 0, 0, 1], |a| a.octets()),
        };
        if want.pktinfo {
            let mut d = LO_INDEX.to_ne_bytes().to_vec();
            d.extend_from_slice(&v4); // ipi_spec_dst
            d.extend_from_slice(&v4); // ipi_addr
            out.push((SOL_IP, libc::IP_PKTINFO, d));
        }
        if want.hops {
            let d = i32::from(stamp.hops).to_ne_bytes().to_vec();
            out.push((SOL_IP, libc::IP_TTL, d));
        }
        if want.class {
            out.push((SOL_IP, libc::IP_TOS, vec![stamp.class]));
        }
    }
    out
}

/// Lays control messages out in `room` bytes as the kernel's `put_cmsg`
/// does: a message that does not fit is cut (its `cmsg_len` says how
/// much was written) and sets MSG_CTRUNC; less room than a header
/// writes nothing more. Returns the bytes and whether it truncated.
pub fn layout(msgs: &[(i32, i32, Vec<u8>)], room: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut left = room;
    let mut truncated = false;
    for (level, kind, data) in msgs {
        if left < HDR {
            truncated = true;
            continue;
        }
        let mut len = cmsg_len(data.len());
        if left < len {
            truncated = true;
            len = left;
        }
        let mut m = Vec::with_capacity(cmsg_space(data.len()));
        m.extend_from_slice(&(len as u64).to_ne_bytes());
        m.extend_from_slice(&level.to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(data);
        m.truncate(len);
        let step = cmsg_space(data.len()).min(left);
        m.resize(step, 0);
        out.extend_from_slice(&m);
        left -= step;
    }
    (out, truncated)
}

/// Parses the control messages of a sendmsg on a UDP socket of
/// `domain` and returns the datagram's stamp, starting from the socket's
/// own. Errors as the kernel's (EINVAL for a malformed message, a
/// value out of range, or a type it does not know).
pub fn parse_sent(domain: i32, control: &[u8], base: Stamp) -> Result<Stamp, Errno> {
    let mut stamp = base;
    each_sent(control, |level, kind, data| {
        apply(domain, level, kind, data, &mut stamp, base)
    })?;
    Ok(stamp)
}

/// Whether the control messages of a send on a TCP or UDP socket hold
/// `AF_UNIX`'s own (SCM_RIGHTS, SCM_CREDENTIALS), which
/// `__sock_cmsg_send` accepts and ignores ("semantically in SOL_UNIX"):
/// the host unix socket behind the guest's would carry them, so such a
/// send must go without them. EINVAL for a malformed header.
pub fn carries_unix(control: &[u8]) -> Result<bool, Errno> {
    let mut found = false;
    each_sent(control, |level, kind, _| {
        found |=
            level == libc::SOL_SOCKET && matches!(kind, libc::SCM_RIGHTS | libc::SCM_CREDENTIALS);
        Ok(())
    })?;
    Ok(found)
}

/// Calls `f` with (level, type, data) of each control message of a
/// send, as `for_each_cmsghdr` walks them (EINVAL for a malformed one).
fn each_sent(
    control: &[u8],
    mut f: impl FnMut(i32, i32, &[u8]) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut rest = control;
    // CMSG_FIRSTHDR is NULL below one header: no messages.
    while rest.len() >= HDR {
        let word = |at: usize| -> [u8; 4] { [rest[at], rest[at + 1], rest[at + 2], rest[at + 3]] };
        let mut l = [0u8; 8];
        l.copy_from_slice(&rest[..8]);
        let len = usize::try_from(u64::from_ne_bytes(l)).map_err(|_| Errno::EINVAL)?;
        if len < HDR || len > rest.len() {
            return Err(Errno::EINVAL);
        }
        let level = i32::from_ne_bytes(word(8));
        let kind = i32::from_ne_bytes(word(12));
        f(level, kind, &rest[HDR..len])?;
        let step = cmsg_space(len - HDR).min(rest.len());
        rest = &rest[step..];
    }
    Ok(())
}

const SO_TIMESTAMPING_NEW: i32 = 65;
const SCM_TS_OPT_ID: i32 = 81;

/// The SOL_SOCKET control messages `__sock_cmsg_send` takes on a send
/// (SO_MARK, SO_PRIORITY, SO_TIMESTAMPING old and new, SCM_TXTIME,
/// SCM_TS_OPT_ID, and `AF_UNIX`'s SCM_RIGHTS and SCM_CREDENTIALS, which
/// it ignores); any other is EINVAL.
const SOCKET_SENT: &[i32] = &[
    libc::SO_MARK,
    libc::SO_PRIORITY,
    libc::SO_TIMESTAMPING,
    SO_TIMESTAMPING_NEW,
    libc::SCM_TXTIME,
    SCM_TS_OPT_ID,
    libc::SCM_RIGHTS,
    libc::SCM_CREDENTIALS,
];

/// One sent control message.
fn apply(
    domain: i32,
    level: i32,
    kind: i32,
    data: &[u8],
    stamp: &mut Stamp,
    base: Stamp,
) -> Result<(), Errno> {
    let int = || -> Result<i32, Errno> {
        let b: [u8; 4] = data.try_into().map_err(|_| Errno::EINVAL)?;
        Ok(i32::from_ne_bytes(b))
    };
    let byte = |v: i32, default: u8| -> Result<u8, Errno> {
        match v {
            -1 => Ok(default),
            0..=255 => Ok(v as u8),
            _ => Err(Errno::EINVAL),
        }
    };
    match (level, kind) {
        (SOL_IPV6, _) if domain != libc::AF_INET6 => Ok(()),
        (SOL_IPV6, libc::IPV6_HOPLIMIT) => {
            stamp.hops = byte(int()?, base.hops)?;
            Ok(())
        }
        (SOL_IPV6, libc::IPV6_TCLASS) => {
            stamp.class = byte(int()?, base.class)?;
            Ok(())
        }
        (SOL_IPV6, libc::IPV6_PKTINFO) => check_pktinfo6(data),
        (SOL_IPV6, libc::IPV6_DONTFRAG) => int().map(drop),
        (SOL_IPV6, _) => Err(Errno::EINVAL),
        (SOL_IP, _) if domain != libc::AF_INET => Ok(()),
        (SOL_IP, libc::IP_TTL) => match int()? {
            v @ 1..=255 => {
                stamp.hops = v as u8;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        },
        (SOL_IP, libc::IP_TOS) => {
            let v = match data.len() {
                1 => i32::from(data[0]),
                _ => int()?,
            };
            stamp.class = u8::try_from(v).map_err(|_| Errno::EINVAL)?;
            Ok(())
        }
        (SOL_IP, libc::IP_PKTINFO) if data.len() == 12 => Ok(()),
        (SOL_IP, _) => Err(Errno::EINVAL),
        (libc::SOL_SOCKET, kind) if !SOCKET_SENT.contains(&kind) => Err(Errno::EINVAL),
        _ => Ok(()),
    }
}

/// IPV6_PKTINFO on a send: a source the sandbox has (`::`, `::1` or a
/// mapped loopback) on no interface or `lo`.
fn check_pktinfo6(data: &[u8]) -> Result<(), Errno> {
    let b: [u8; 20] = data.try_into().map_err(|_| Errno::EINVAL)?;
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    let ifindex = i32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
    if ifindex != 0 && ifindex != LO_INDEX {
        return Err(Errno::ENODEV);
    }
    let src = Ipv6Addr::from(a);
    let local = src.is_unspecified()
        || src.is_loopback()
        || src.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback());
    if local {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// A datagram's destination address for PKTINFO: the receiver's own
/// address, or for a wildcard receiver the sender's (the netstack binds
/// a sender to the loopback address it dials).
pub fn destination(receiver: SocketAddr, sender: Option<SocketAddr>) -> IpAddr {
    if !receiver.ip().is_unspecified() {
        return receiver.ip();
    }
    match (sender, receiver) {
        (Some(s), _) => s.ip(),
        (None, SocketAddr::V4(_)) => IpAddr::from([127, 0, 0, 1]),
        (None, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

#[cfg(test)]
mod tests;
