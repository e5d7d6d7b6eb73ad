//! `--publish [HOSTIP:]HOSTPORT:GUESTPORT[/udp]`: a guest listener made
//! reachable from the host, the way a notebook front end outside talks to
//! a kernel inside.
//!
//! A [`Publisher`] binds the host socket (TCP or UDP; HOSTIP defaults to
//! 127.0.0.1, so nothing is exposed beyond the host unless asked). For TCP
//! each accepted connection gets a thread that asks the integration's
//! `connect_guest(guest_port, proto)` for a socket connected to the
//! guest's listener and relays (relay.rs). For UDP each host peer address
//! is a session with its own guest socket, ended after [`UDP_IDLE`]
//! without replies; at most [`MAX_UDP_SESSIONS`] at once.
//!
//! Owns parsing the spec, the host socket and the per-connection relays.
//! Does not own reaching the guest (the closure).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::socket::{recv, send, shutdown, MsgFlags, Shutdown};

use crate::relay::{relay_stream, wait};
use crate::rules::Proto;

/// A UDP session with no datagram from the guest for this long ends.
pub const UDP_IDLE: Duration = Duration::from_secs(120);
/// UDP sessions (distinct host peers) at once; datagrams of more are dropped.
pub const MAX_UDP_SESSIONS: usize = 256;
/// Where the host side listens when the spec names no address.
pub const DEFAULT_HOST_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// One `--publish` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishSpec {
    /// Where the host side listens.
    pub host: SocketAddr,
    /// The guest port connections are forwarded to.
    pub guest_port: u16,
    pub proto: Proto,
}

impl FromStr for PublishSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<PublishSpec, String> {
        parse_spec(s.trim()).map_err(|why| format!("publish {s:?}: {why}"))
    }
}

impl fmt::Display for PublishSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.host, self.guest_port, self.proto)
    }
}

fn parse_spec(s: &str) -> Result<PublishSpec, String> {
    let (ports, proto) = match s.rsplit_once('/') {
        Some((p, "tcp")) => (p, Proto::Tcp),
        Some((p, "udp")) => (p, Proto::Udp),
        Some((_, other)) => return Err(format!("{other:?} is not tcp or udp")),
        None => (s, Proto::Tcp),
    };
    let (host_ip, rest) = split_host_ip(ports)?;
    let (host_port, guest_port) = rest
        .split_once(':')
        .ok_or("expected [HOSTIP:]HOSTPORT:GUESTPORT")?;
    Ok(PublishSpec {
        host: SocketAddr::new(host_ip, port(host_port)?),
        guest_port: port(guest_port)?,
        proto,
    })
}

/// Splits off the host address: `[V6]:`, `V4:` before two more fields, or
/// none (the default).
fn split_host_ip(s: &str) -> Result<(IpAddr, &str), String> {
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest
            .split_once("]:")
            .ok_or("expected [IPV6]:HOSTPORT:GUESTPORT")?;
        let ip = ip
            .parse::<std::net::Ipv6Addr>()
            .map_err(|_| format!("{ip:?} is not an IPv6 address"))?;
        return Ok((IpAddr::V6(ip), after));
    }
    match s.matches(':').count() {
        0 | 1 => Ok((DEFAULT_HOST_IP, s)),
        2 => {
            let (ip, rest) = s.split_once(':').unwrap_or_default();
            let ip = ip
                .parse::<Ipv4Addr>()
                .map_err(|_| format!("{ip:?} is not an IP address (IPv6 goes in brackets)"))?;
            Ok((IpAddr::V4(ip), rest))
        }
        _ => Err("IPv6 host addresses go in brackets: [::1]:8080:80".into()),
    }
}

fn port(s: &str) -> Result<u16, String> {
    match s.parse::<u16>() {
        Ok(p) if p > 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(format!("port {s:?} must be a number from 1 to 65535")),
    }
}

/// How the integration reaches the guest: a socket connected to the
/// guest's listener on this port (stream for TCP, datagram for UDP).
pub type ConnectGuest = Arc<dyn Fn(u16, Proto) -> io::Result<OwnedFd> + Send + Sync>;

/// A bound host socket of one `--publish`.
pub struct Publisher {
    spec: PublishSpec,
    socket: HostSocket,
}

enum HostSocket {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

impl Publisher {
    /// Binds the host side; the error says what went wrong in one line.
    pub fn bind(spec: &PublishSpec) -> Result<Publisher, String> {
        let socket = match spec.proto {
            Proto::Tcp => TcpListener::bind(spec.host).map(HostSocket::Tcp),
            Proto::Udp => UdpSocket::bind(spec.host).map(HostSocket::Udp),
        }
        .map_err(|e| bind_error(spec, &e))?;
        Ok(Publisher {
            spec: *spec,
            socket,
        })
    }

    /// The address the host side listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.socket {
            HostSocket::Tcp(l) => l.local_addr(),
            HostSocket::Udp(u) => u.local_addr(),
        }
    }

    /// Serves on a thread of its own until [`Serving::stop`].
    pub fn serve(self, connect_guest: ConnectGuest) -> io::Result<Serving> {
        let stopped = Arc::new(AtomicBool::new(false));
        let (fd, thread) = match self.socket {
            HostSocket::Tcp(l) => {
                let fd = l.as_fd().try_clone_to_owned()?;
                let stop = stopped.clone();
                let port = self.spec.guest_port;
                (
                    fd,
                    thread::spawn(move || serve_tcp(l, port, connect_guest, &stop)),
                )
            }
            HostSocket::Udp(u) => {
                let fd = u.as_fd().try_clone_to_owned()?;
                let stop = stopped.clone();
                let port = self.spec.guest_port;
                (
                    fd,
                    thread::spawn(move || serve_udp(u, port, connect_guest, &stop)),
                )
            }
        };
        Ok(Serving {
            fd,
            stopped,
            thread,
        })
    }
}

fn bind_error(spec: &PublishSpec, e: &io::Error) -> String {
    let (ip, port) = (spec.host.ip(), spec.host.port());
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EADDRINUSE) => format!("port {port} on {ip} is in use"),
        Some(Errno::EADDRNOTAVAIL) => format!("{ip} is not an address of this host"),
        Some(Errno::EACCES) => format!("port {port} on {ip} needs privileges"),
        _ => format!("cannot listen on {}: {e}", spec.host),
    }
}

/// A publisher at work.
pub struct Serving {
    fd: OwnedFd,
    stopped: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl Serving {
    /// Stops accepting (connections already relayed go on) and waits for
    /// the serving thread.
    pub fn stop(self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes a blocked accept or recv.
        let _ = shutdown(self.fd.as_raw_fd(), Shutdown::Both);
        let _ = self.thread.join();
    }
}

fn serve_tcp(
    listener: TcpListener,
    guest_port: u16,
    connect_guest: ConnectGuest,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::SeqCst) {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e)
                if e.raw_os_error() == Some(libc::EMFILE)
                    || e.raw_os_error() == Some(libc::ENFILE) =>
            {
                thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return,
            Err(_) => continue,
        };
        let connect = connect_guest.clone();
        thread::spawn(move || relay_to_guest(conn, guest_port, &connect));
    }
}

fn relay_to_guest(conn: TcpStream, guest_port: u16, connect_guest: &ConnectGuest) {
    // A guest with no listener there: the host client sees the
    // connection closed at once.
    if let Ok(guest) = connect_guest(guest_port, Proto::Tcp) {
        let _ = conn.set_nodelay(true);
        relay_stream(conn.into(), guest);
    }
}

type Sessions = Arc<Mutex<HashMap<SocketAddr, Arc<OwnedFd>>>>;

fn serve_udp(host: UdpSocket, guest_port: u16, connect_guest: ConnectGuest, stop: &AtomicBool) {
    let host = Arc::new(host);
    let sessions: Sessions = Arc::default();
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::SeqCst) {
        // Wait first: after `stop` shuts the socket down, recv_from would
        // return 0 with no address, on which std panics.
        let mut p = [PollFd::new(host.as_fd(), PollFlags::POLLIN)];
        match wait(&mut p, None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok((n, peer)) = host.recv_from(&mut buf) else {
            continue;
        };
        let Some(guest) = udp_session(&host, &sessions, peer, guest_port, &connect_guest) else {
            continue;
        };
        let data = buf.get(..n).unwrap_or_default();
        let _ = send(
            guest.as_raw_fd(),
            data,
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
        );
    }
}

/// The guest socket of `peer`'s session, started if new.
fn udp_session(
    host: &Arc<UdpSocket>,
    sessions: &Sessions,
    peer: SocketAddr,
    guest_port: u16,
    connect_guest: &ConnectGuest,
) -> Option<Arc<OwnedFd>> {
    let mut map = sessions.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(fd) = map.get(&peer) {
        return Some(fd.clone());
    }
    if map.len() >= MAX_UDP_SESSIONS {
        return None;
    }
    let guest = Arc::new(connect_guest(guest_port, Proto::Udp).ok()?);
    map.insert(peer, guest.clone());
    let (host, sessions, fd) = (host.clone(), sessions.clone(), guest.clone());
    thread::spawn(move || {
        replies_to_peer(&fd, &host, peer);
        let mut map = sessions.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&peer);
    });
    Some(guest)
}

/// Sends the guest's datagrams back to `peer` until it is idle or gone.
fn replies_to_peer(guest: &OwnedFd, host: &UdpSocket, peer: SocketAddr) {
    let mut buf = vec![0u8; 65536];
    loop {
        let mut p = [PollFd::new(guest.as_fd(), PollFlags::POLLIN)];
        match wait(&mut p, Some(UDP_IDLE)) {
            Ok(0) => return,
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
        let revents = p[0].revents().unwrap_or(PollFlags::POLLHUP);
        if revents.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            return;
        }
        match recv(guest.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
            Ok(n) => {
                let _ = host.send_to(buf.get(..n).unwrap_or_default(), peer);
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
#[path = "publish/tests.rs"]
mod tests;
