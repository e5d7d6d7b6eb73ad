//! The socket handlers: the guest's `AF_INET`/`AF_INET6` sockets are
//! host `AF_UNIX` sockets of the [`netstack::Stack`]; every call that
//! carries or reports an address, or a TCP/IP-level option, is serviced
//! here, and data calls run natively on the host socket.
//!
//! Owns: decoding the socket calls' arguments and guest structures
//! (`sockaddr`, `msghdr`, option values), telling a netstack socket from
//! the guest's own (not in the table: CONTINUE), blocking on the guest's
//! behalf without losing signals ([`wait`]), and the errnos the guest
//! sees. Does not own: names, binding rules or egress (`netstack`).
//!
//! Families: [`socket`] (socket, bind, connect; a socket the guest's
//! preload made itself, [`adopt`]), [`accept`], [`names`]
//! (getsockname, getpeername, getsockopt, setsockopt), [`dgram`]
//! (sendto, recvfrom with addresses), [`msg`] (sendmsg, recvmsg) and
//! their control messages ([`ancil`]); the note a marked accept leaves
//! for the guest's preload ([`note`]); egress TCP connects in the
//! background ([`dial`]), as are non-blocking loopback connects to a full
//! backlog ([`backlog`]).

pub(crate) mod accept;
pub mod adopt;
mod ancil;
mod backlog;
pub(crate) mod dgram;
mod dial;
mod gate;
pub(crate) mod mmsg;
pub(crate) mod msg;
pub(crate) mod names;
pub mod note;
pub(crate) mod socket;
mod wait;

use std::net::SocketAddr;

use netstack::stack::Sock;
use netstack::{addr, Stack};
use nix::errno::Errno;

use crate::guest::{Guest, Reply};
use crate::Context;

/// A socket handler's answer.
pub(crate) type Res = Result<Reply, Errno>;

/// The guest's `fd` if it is a netstack socket; `None` (answer CONTINUE:
/// the kernel runs the call, and reports a bad descriptor itself) for
/// anything else.
pub(crate) fn ours(ctx: &Context, g: &dyn Guest, fd: i32) -> Option<Sock> {
    let dup = g.dup_fd(fd).ok()?;
    ctx.net.identify(dup)
}

/// Reads a guest address of `len` bytes (the kernel's bounds: EINVAL
/// beyond `sockaddr_storage`).
pub(crate) fn read_sockaddr(g: &dyn Guest, ptr: u64, len: u32) -> Result<Vec<u8>, Errno> {
    let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
    if len > addr::MAX_LEN {
        return Err(Errno::EINVAL);
    }
    let mut buf = vec![0u8; len];
    if len > 0 {
        g.read_mem(ptr, &mut buf)?;
    }
    Ok(buf)
}

/// The kernel's `access_ok` for a data buffer: EFAULT up front when
/// `len` bytes at `ptr` reach past user space (a kernel address), before
/// anything is sent or a datagram taken off the queue. The bound is
/// the 5-level-paging one when the CPU has LA57 (a 4-level kernel's
/// addresses past its own bound then fault at the copy instead).
pub(crate) fn user_range(ptr: u64, len: usize) -> Result<(), Errno> {
    static END: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let end = *END.get_or_init(|| {
        let la57 = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains(" la57"));
        if la57 {
            0x00ff_ffff_ffff_f000
        } else {
            0x7fff_ffff_f000
        }
    });
    match ptr.checked_add(len as u64) {
        Some(last) if last <= end => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// The family of a guest address (None when shorter than its field).
pub(crate) fn family_of(bytes: &[u8]) -> Option<i32> {
    bytes
        .get(..2)
        .map(|b| i32::from(u16::from_ne_bytes([b[0], b[1]])))
}

/// A UDP IPv6 socket (not a ping socket): `udpv6_sendmsg`'s and
/// `__ip6_datagram_connect`'s address rules apply to it.
pub(crate) fn is_udp6(s: &Sock) -> bool {
    s.meta.domain == libc::AF_INET6 && s.meta.is_udp()
}

/// An IPv4 address given to a UDP IPv6 socket: the kernel hands such a
/// connect or send to IPv4's (v4-mapped).
pub(crate) fn v4_on_udp6(s: &Sock, bytes: &[u8]) -> bool {
    is_udp6(s) && family_of(bytes) == Some(libc::AF_INET)
}

/// The family a guest address given to `s` is read as: a UDP IPv6
/// socket takes an `AF_INET` one as IPv4's (its source then v4-mapped),
/// unless it is v6-only, which refuses it with `v6only` (a connect's
/// EAFNOSUPPORT, a send's ENETUNREACH).
pub(crate) fn address_domain(s: &Sock, bytes: &[u8], v6only: Errno) -> Result<i32, Errno> {
    if !v4_on_udp6(s, bytes) {
        return Ok(s.meta.domain);
    }
    if s.meta.v6only() {
        return Err(v6only);
    }
    Ok(libc::AF_INET)
}

/// Whether the host socket behind `s` has a peer (a stream connected, a
/// datagram socket associated; a dial's stand-in has one).
pub(crate) fn host_connected(s: &Sock) -> bool {
    use std::os::fd::AsRawFd;
    nix::sys::socket::getpeername::<nix::sys::socket::UnixAddr>(s.fd.as_raw_fd()).is_ok()
}

/// The kernel autobinds a datagram socket before its protocol looks at
/// a connect's or a send's address (`inet_dgram_connect`,
/// `inet_send_prepare`): a UDP socket gets its port then, and keeps it
/// when the call fails. Ping sockets bind at their send (`icmp`).
pub(crate) fn autobind_udp(ctx: &Context, g: &dyn Guest, s: &Sock) -> Result<(), Errno> {
    if !s.meta.is_udp() {
        return Ok(());
    }
    crate::handlers::live(g)?;
    stack(ctx).autobind_port(s)
}

/// A datagram send without an address (sendmsg without a name, an
/// empty send): fine when the socket has a peer; otherwise EDESTADDRREQ,
/// as `udp_sendmsg` and `ping_v4_sendmsg` answer, after the port that
/// `inet_send_prepare` binds first (UDP). The host socket would say
/// ENOTCONN.
pub(crate) fn has_destination(ctx: &Context, g: &dyn Guest, s: &Sock) -> Result<(), Errno> {
    if stack(ctx).peer_addr(s).is_ok() {
        return Ok(());
    }
    autobind_udp(ctx, g, s)?;
    Err(Errno::EDESTADDRREQ)
}

/// Reads the `int` an address-length pointer holds (EFAULT, EINVAL when
/// negative).
pub(crate) fn read_len(g: &dyn Guest, ptr: u64) -> Result<usize, Errno> {
    usize::try_from(read_int(g, ptr)?).map_err(|_| Errno::EINVAL)
}

/// Reads the 4-byte `int` at `ptr` in guest memory (EFAULT).
pub(crate) fn read_int(g: &dyn Guest, ptr: u64) -> Result<i32, Errno> {
    let mut b = [0u8; 4];
    g.read_mem(ptr, &mut b)?;
    Ok(i32::from_ne_bytes(b))
}

/// Writes an address as the kernel does: at most `room` bytes of it, and
/// its full length to `len_ptr`.
pub(crate) fn write_sockaddr(
    g: &dyn Guest,
    ptr: u64,
    len_ptr: u64,
    room: usize,
    bytes: &[u8],
) -> Result<(), Errno> {
    let n = room.min(bytes.len());
    let len = (bytes.len() as u32).to_ne_bytes();
    g.write_mems(&[(ptr, &bytes[..n]), (len_ptr, &len)])
}

/// The guest's address, decoded for a socket of `domain` and made
/// canonical; `None` for `AF_UNSPEC`.
pub(crate) fn guest_addr(
    g: &dyn Guest,
    domain: i32,
    ptr: u64,
    len: u32,
) -> Result<Option<SocketAddr>, Errno> {
    parse_addr(domain, &read_sockaddr(g, ptr, len)?)
}

/// A guest address already read (`read_sockaddr`), for a socket of
/// `domain`, canonical (`None`: AF_UNSPEC).
pub(crate) fn parse_addr(domain: i32, bytes: &[u8]) -> Result<Option<SocketAddr>, Errno> {
    Ok(addr::parse(domain, bytes)?.map(addr::canonical))
}

/// An IPv4 destination from a v6-only socket is unreachable, as in
/// Linux; an IPv6 one from a UDP IPv6 socket whose source is v4-mapped is
/// EAFNOSUPPORT ([`Stack::check_source`]).
pub(crate) fn check_family(ctx: &Context, s: &Sock, dst: SocketAddr) -> Result<(), Errno> {
    if s.meta.domain == libc::AF_INET6 && dst.is_ipv4() && s.meta.v6only() {
        return Err(Errno::ENETUNREACH);
    }
    if is_udp6(s) {
        stack(ctx).check_source(s, dst)?;
    }
    Ok(())
}

/// The guest descriptor's status flags include O_NONBLOCK.
pub(crate) fn nonblocking(s: &Sock) -> bool {
    use std::os::fd::AsRawFd;
    nix::fcntl::fcntl(s.fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .is_ok_and(|fl| fl & libc::O_NONBLOCK != 0)
}

/// The stack of a context (for the families' brevity).
pub(crate) fn stack(ctx: &Context) -> &Stack {
    &ctx.net
}
