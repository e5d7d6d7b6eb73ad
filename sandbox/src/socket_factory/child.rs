//! The socket factory's own process, after the fork: it dies with the
//! supervisor, keeps only its channel and the two namespace descriptors,
//! enters the namespaces at the first request (the loopback up, the DNS
//! stub's address, every privilege dropped, its filter installed), then
//! answers requests with sockets made in the sandbox's network namespace.
//!
//! Owns: the child's life and its side of the protocol. Does not own: the
//! supervisor's side, the pool and its refills (`socket_factory.rs`), or
//! the child's seccomp filter (`filter.rs`).

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::Signal;
use nix::sys::socket::{self, AddressFamily, SockFlag};
use nix::unistd::{getppid, Pid};

use super::{filter, Kind, ANSWER_LEN, BATCH};
use crate::sys::fd::{close_all_except, recv_with_fds, send_with_fds};
use crate::sys::net::{add_address, set_link_up};
use crate::sys::process::exit_now;

/// The factory's life: die with the supervisor, keep only the channel
/// and the namespaces, give up this process's capabilities (the owner of
/// the sandbox's user namespace may join it without any), wait for the
/// first request, enter the namespaces (bringing their loopback up, with
/// `dns_stub`), serve until the supervisor hangs up. `probe`: the test
/// switch is set.
pub(super) fn factory_main(
    parent: Pid,
    channel: OwnedFd,
    (userns, netns): (BorrowedFd<'_>, BorrowedFd<'_>),
    dns_stub: Option<Ipv4Addr>,
    probe: bool,
) -> ! {
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != parent {
        exit_now(1);
    }
    let keep = [channel.as_raw_fd(), userns.as_raw_fd(), netns.as_raw_fd()];
    let idle = close_stray(&keep)
        .and_then(|()| nix::sys::prctl::set_no_new_privs())
        .and_then(|()| crate::sys::caps::clear_all());
    if idle.is_err() {
        exit_now(1);
    }
    let mut first = [0u8; 2];
    let n = match recv_with_fds(channel.as_fd(), &mut first) {
        Ok((n, _)) if n > 0 => n,
        _ => exit_now(0),
    };
    if let Err(e) = enter(&channel, (userns, netns), dns_stub) {
        let _ = send_with_fds(channel.as_fd(), &(-(e as i32)).to_ne_bytes(), &[]);
        exit_now(1);
    }
    // Joining a user namespace whose root is another host id (a range of
    // ids) changed our credentials, and the kernel clears the death
    // signal on such a change: set it again.
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != parent {
        exit_now(1);
    }
    // Made before the filter, which allows no netlink socket; a kernel
    // without sock_diag leaves /proc/net's queues empty.
    let diag = netstack::sockets::diag_socket().ok();
    if let Err(e) = filter::install() {
        let _ = send_with_fds(channel.as_fd(), &(-(e as i32)).to_ne_bytes(), &[]);
        exit_now(1);
    }
    if probe {
        // Killed here by the filter (SIGSYS) if it works.
        let _ = std::fs::File::open("/proc/self/status");
    }
    serve(channel.as_fd(), &first[..n], diag.as_ref());
    exit_now(0)
}

/// Closes every descriptor but `keep`, stdio included (the supervisor
/// may be waiting for the end of a pipe there).
fn close_stray(keep: &[i32]) -> Result<(), Errno> {
    close_all_except(keep)?;
    for fd in 0..3 {
        if !keep.contains(&fd) {
            let _ = nix::unistd::close(fd);
        }
    }
    Ok(())
}

/// Joins the namespaces, brings the loopback up (with the DNS stub's
/// address), and drops every privilege.
fn enter(
    channel: &OwnedFd,
    (userns, netns): (BorrowedFd<'_>, BorrowedFd<'_>),
    dns_stub: Option<Ipv4Addr>,
) -> Result<(), Errno> {
    setns(userns, CloneFlags::CLONE_NEWUSER)?;
    setns(netns, CloneFlags::CLONE_NEWNET)?;
    // Loopback only matters to programs that use it; no reason to fail.
    let _ = set_link_up("lo");
    if let Some(stub) = dns_stub {
        let _ = add_address("lo:dns", stub);
    }
    close_all_except(&[channel.as_raw_fd()])?;
    // Joining the user namespace gave every capability in it; making
    // unix sockets needs none.
    crate::launch::privs::drop_privileges().map_err(|_| Errno::EPERM)
}

/// Answers `first` and then requests until end of file or an error on
/// the channel. The last batch is kept until the supervisor says it has
/// copied it; `diag` is kept.
fn serve(channel: BorrowedFd<'_>, first: &[u8], diag: Option<&OwnedFd>) {
    let mut held: Vec<OwnedFd> = Vec::new();
    let mut request = [0u8; 2];
    let mut n = first.len().min(2);
    request[..n].copy_from_slice(&first[..n]);
    loop {
        held.clear();
        let made = match (n, Kind::parse(request[0])) {
            (2, Some(Kind::Close)) => Ok(Vec::new()),
            (2, Some(Kind::Diag)) => diag.map(|d| vec![d.as_raw_fd()]).ok_or(Errno::EAFNOSUPPORT),
            (2, Some(kind)) => make(kind, request[1].min(BATCH)).map(|fds| {
                held = fds;
                held.iter().map(AsRawFd::as_raw_fd).collect()
            }),
            _ => Err(Errno::EINVAL),
        };
        let mut answer = Vec::with_capacity(ANSWER_LEN);
        match made {
            Ok(numbers) => {
                answer.extend(0i32.to_ne_bytes());
                for n in numbers {
                    answer.extend(n.to_ne_bytes());
                }
            }
            Err(e) => answer.extend((e as i32).to_ne_bytes()),
        }
        if send_with_fds(channel, &answer, &[]).is_err() {
            return;
        }
        n = match recv_with_fds(channel, &mut request) {
            Ok((0, _)) | Err(_) => return,
            Ok((n, _)) => n,
        };
    }
}

/// `count` sockets, or one pair, of `kind`, made in this namespace.
fn make(kind: Kind, count: u8) -> Result<Vec<OwnedFd>, Errno> {
    let ty = kind.sock_type();
    let flags = SockFlag::SOCK_CLOEXEC;
    match kind {
        Kind::StreamPair | Kind::DatagramPair => {
            let (a, b) = socket::socketpair(AddressFamily::Unix, ty, None, flags)?;
            Ok(vec![a, b])
        }
        Kind::Stream | Kind::Datagram => (0..count)
            .map(|_| socket::socket(AddressFamily::Unix, ty, flags, None))
            .collect(),
        Kind::Close | Kind::Diag => Ok(Vec::new()),
    }
}
