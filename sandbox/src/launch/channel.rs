//! The control channel between the supervisor and the sandbox's init: a
//! `SOCK_SEQPACKET` socketpair, one message per event.
//!
//! supervisor → init: `Go` once the id maps are written; then, when init
//! joins the sandbox's cgroup late (`InitHooks::joins_late`), one `Join`
//! with the cgroup v1 `tasks` files it writes itself into (none on v2,
//! where the supervisor moves it), sent while init builds the view;
//! then `Net` with the sandbox's network namespace attached, for init
//! to join once the view is built (`netns.rs`).
//! init → supervisor: `Failed(msg)` if setting up failed; `Built` once
//! init is rooted in the view (the supervisor measures it meanwhile:
//! `InitHooks::view_built`); `Ready` once the filter is installed, with the *numbers* of init's
//! seccomp listener and, when the guest's stdio is to be a terminal, of
//! the master of its pseudo-terminal, which the supervisor copies with
//! `pidfd_getfd` before it answers `Go` ([`Held`]);
//! `Status(raw wait status, tasks started)` when
//! the guest's main process has ended. supervisor → init, any time after:
//! `Exec` with a requester's connection attached (`exec_request.rs`).
//! The end of the stream means the other side died.
//! A send and a receive without an address (sendto, recvfrom) of a
//! non-empty buffer pass the guest's filter, so init can still send
//! `Ready` after installing it ([`Channel::send_ready`]) and take the
//! `Go` that follows ([`Channel::recv_go`]) before any worker runs; no
//! descriptor travels then: sendmsg and recvmsg are serviced (a netstack
//! socket's name and control messages), so init's later receives
//! ([`Channel::recv`]) wait for the workers; its later messages
//! (`Failed`, `Status`) carry no descriptor and go as plain sends
//! (`sys::fd::send_plain`), which pass.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::socket::{recv, socketpair, AddressFamily, MsgFlags, SockFlag, SockType};

use crate::sys::fd::{recv_with_fds, send_plain, send_with_fd, send_with_fds};
use crate::sys::pidfd;

const GO: u8 = b'G';
const READY: u8 = b'R';
const FAILED: u8 = b'E';
const STATUS: u8 = b'S';
const EXEC: u8 = b'X';
const JOIN: u8 = b'J';
const NET: u8 = b'N';
const BUILT: u8 = b'V';

/// The numbers of init's descriptors that `Ready` names: its seccomp
/// listener and the master of the guest's pseudo-terminal, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub listener: i32,
    pub pty: Option<i32>,
}

impl Held {
    /// Copies of the descriptors from init (`pid`, our child, not yet
    /// reaped, dumpable until it takes `Go`): (listener, pty master).
    pub fn copy_from(self, pid: nix::unistd::Pid) -> nix::Result<(OwnedFd, Option<OwnedFd>)> {
        let init = pidfd::open(pid.as_raw(), false)?;
        let listener = pidfd::getfd(init.as_fd(), self.listener)?;
        let pty = self
            .pty
            .map(|fd| pidfd::getfd(init.as_fd(), fd))
            .transpose()?;
        Ok((listener, pty))
    }
}

/// One message on the channel.
pub enum Msg {
    Go,
    /// init → supervisor: the view is built and init is rooted in it
    /// (pivoted, the old root detached); its privileges follow.
    Built,
    /// init → supervisor, sent with [`Channel::send_ready`] only.
    Ready(Held),
    Failed(String),
    /// The main process's raw wait status, and how many processes and
    /// threads the sandbox started (its pid namespace's last pid, less
    /// init's), when init could read it.
    Status(i32, Option<u32>),
    /// supervisor → init: a connection from a process that asks for a
    /// new process in the sandbox (`exec_request.rs`).
    Exec(OwnedFd),
    /// supervisor → init: the sandbox's cgroup is ready; the `tasks`
    /// files attached (any number) are for init to write "0" to.
    Join(Vec<OwnedFd>),
    /// supervisor → init: the sandbox's network namespace, to join.
    Net(OwnedFd),
}

/// One end of the channel.
pub struct Channel(OwnedFd);

/// A connected pair: (supervisor's end, init's end). Both close on exec.
pub fn pair() -> nix::Result<(Channel, Channel)> {
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    Ok((Channel(a), Channel(b)))
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl Channel {
    pub fn send(&self, msg: &Msg) -> nix::Result<()> {
        let sock = self.0.as_fd();
        match msg {
            Msg::Go => send_with_fd(sock, &[GO], None),
            Msg::Built => send_plain(sock, &[BUILT]),
            Msg::Ready(held) => self.send_ready(*held),
            Msg::Exec(fd) => send_with_fd(sock, &[EXEC], Some(fd.as_fd())),
            Msg::Net(fd) => send_with_fd(sock, &[NET], Some(fd.as_fd())),
            Msg::Join(fds) => {
                let fds: Vec<BorrowedFd<'_>> = fds.iter().map(AsFd::as_fd).collect();
                send_with_fds(sock, &[JOIN], &fds)
            }
            Msg::Failed(text) => {
                let mut buf = vec![FAILED];
                buf.extend_from_slice(text.as_bytes());
                send_plain(sock, &buf)
            }
            Msg::Status(status, tasks) => {
                let mut buf = vec![STATUS];
                buf.extend_from_slice(&status.to_le_bytes());
                buf.extend_from_slice(&tasks.unwrap_or(u32::MAX).to_le_bytes());
                send_plain(sock, &buf)
            }
        }
    }

    /// The next message; `None` at the end of the stream (or on a
    /// message that makes no sense, which only a dying peer sends).
    /// A peer that closed its end with messages of ours unread (init
    /// failing before it took the `Net` it was sent) makes the kernel
    /// report ECONNRESET once, before what the peer sent last (its
    /// `Failed`): that report is passed over.
    pub fn recv(&self) -> nix::Result<Option<Msg>> {
        let mut buf = [0u8; 4096];
        let (n, mut fds) = loop {
            match recv_with_fds(self.0.as_fd(), &mut buf) {
                Err(nix::errno::Errno::ECONNRESET) => continue,
                r => break r?,
            }
        };
        let body = &buf[1..n.max(1)];
        if n > 0 && buf[0] == JOIN {
            return Ok(Some(Msg::Join(fds)));
        }
        let fd = (!fds.is_empty()).then(|| fds.swap_remove(0));
        Ok(match (buf[0], n, fd) {
            (_, 0, _) => None,
            (GO, _, _) => Some(Msg::Go),
            (BUILT, 1, None) => Some(Msg::Built),
            (READY, 9, None) => {
                let word = |at: usize| {
                    i32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]])
                };
                let pty = Some(word(4)).filter(|&fd| fd >= 0);
                Some(Msg::Ready(Held {
                    listener: word(0),
                    pty,
                }))
            }
            (EXEC, _, Some(fd)) => Some(Msg::Exec(fd)),
            (NET, _, Some(fd)) => Some(Msg::Net(fd)),
            (FAILED, _, _) => Some(Msg::Failed(String::from_utf8_lossy(body).into_owned())),
            (STATUS, 9, _) => {
                let status = i32::from_le_bytes([body[0], body[1], body[2], body[3]]);
                let tasks = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
                Some(Msg::Status(status, (tasks != u32::MAX).then_some(tasks)))
            }
            _ => None,
        })
    }

    /// Sends `Ready` with a plain send (sendto without an address, which
    /// the guest's filter passes): the descriptors' numbers only.
    pub fn send_ready(&self, held: Held) -> nix::Result<()> {
        let mut buf = vec![READY];
        buf.extend_from_slice(&held.listener.to_le_bytes());
        buf.extend_from_slice(&held.pty.unwrap_or(-1).to_le_bytes());
        send_plain(self.0.as_fd(), &buf)
    }

    /// Waits for `Go` with a plain receive (recvfrom without an address,
    /// which the guest's filter passes: after `Ready`, no worker serves
    /// init's calls yet). False at the end of the stream or on anything
    /// but `Go` (which carries no descriptor to lose).
    pub fn recv_go(&self) -> bool {
        let mut buf = [0u8; 16];
        loop {
            match recv(self.0.as_raw_fd(), &mut buf, MsgFlags::empty()) {
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::ECONNRESET) => continue,
                Ok(n) => return n > 0 && buf[0] == GO,
                Err(_) => return false,
            }
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// Another handle on the same end (for a second thread that only sends).
    pub fn try_clone(&self) -> std::io::Result<Channel> {
        self.0.try_clone().map(Channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let (a, b) = pair().unwrap();
        a.send(&Msg::Go).unwrap();
        assert!(matches!(b.recv().unwrap(), Some(Msg::Go)));
        a.send(&Msg::Go).unwrap();
        assert!(b.recv_go());
        b.send(&Msg::Built).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Built)));
        b.send(&Msg::Failed("--ro x: bad".into())).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Failed(m)) if m == "--ro x: bad"));
        b.send(&Msg::Status(3 << 8, Some(7))).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Status(s, Some(7))) if s == 3 << 8));
        b.send(&Msg::Status(9, None)).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Status(9, None))));
        let held = Held {
            listener: 5,
            pty: Some(7),
        };
        b.send(&Msg::Ready(held)).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Ready(h)) if h == held));
        let held = Held {
            listener: 9,
            pty: None,
        };
        b.send_ready(held).unwrap();
        assert!(matches!(a.recv().unwrap(), Some(Msg::Ready(h)) if h == held));
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        a.send(&Msg::Join(vec![r, w])).unwrap();
        assert!(matches!(b.recv().unwrap(), Some(Msg::Join(fds)) if fds.len() == 2));
        let (r, _w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        a.send(&Msg::Net(r)).unwrap();
        assert!(matches!(b.recv().unwrap(), Some(Msg::Net(_))));
        a.send(&Msg::Join(Vec::new())).unwrap();
        assert!(matches!(b.recv().unwrap(), Some(Msg::Join(fds)) if fds.is_empty()));
        drop(b);
        assert!(a.recv().unwrap().is_none());
    }

    #[test]
    fn a_peer_gone_with_our_message_unread_still_says_why() {
        let (a, b) = pair().unwrap();
        let (r, _w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        a.send(&Msg::Net(r)).unwrap();
        b.send(&Msg::Failed("workdir /x: gone".into())).unwrap();
        drop(b);
        assert!(matches!(a.recv().unwrap(), Some(Msg::Failed(m)) if m == "workdir /x: gone"));
        assert!(a.recv().unwrap().is_none());
    }
}
