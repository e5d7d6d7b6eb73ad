//! The pool's socket: the daemon's listening socket (`SOCK_SEQPACKET`,
//! mode 0600 from the bind on; a stale one replaced, a served one
//! refused), a client's connection to it, and the peer check (only the
//! daemon's own uid, and root, are served).
//!
//! Does not own what goes over it (`protocol.rs`), or accepting and
//! handing out connections (`daemon/sandboxes.rs`).

use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use nix::sys::socket::{
    self, getsockopt, sockopt, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
};
use nix::sys::stat::{umask, Mode};
use nix::unistd::getuid;

/// The listening socket at `path`, mode 0600. A socket there that no one
/// answers is replaced; one that answers, or any other file, is refused.
pub(super) fn bind(path: &Path) -> Result<OwnedFd, String> {
    let shown = path.display();
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(format!("{shown}: exists and is not a socket"));
        }
        if connect(path).is_ok() {
            return Err(format!("{shown}: in use (a pool answers there)"));
        }
        std::fs::remove_file(path).map_err(|e| format!("{shown}: {e}"))?;
    }
    // Bound and listening under a temporary name, then renamed into place:
    // a client that sees the path can connect (a bound socket not yet
    // listening refuses).
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.new", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let _ = std::fs::remove_file(&temporary);
    let sock = seqpacket().map_err(|e| format!("socket: {}", e.desc()))?;
    let addr = UnixAddr::new(&temporary).map_err(|e| format!("{shown}: {}", e.desc()))?;
    // Mode 0600 from the start: no moment when others may connect.
    let old = umask(Mode::from_bits_truncate(0o177));
    let bound = socket::bind(std::os::fd::AsRawFd::as_raw_fd(&sock), &addr);
    umask(old);
    bound.map_err(|e| format!("{shown}: {}", e.desc()))?;
    let listening = socket::listen(&sock, Backlog::new(128).unwrap_or(Backlog::MAXCONN))
        .map_err(|e| format!("{shown}: listen: {}", e.desc()))
        .and_then(|()| std::fs::rename(&temporary, path).map_err(|e| format!("{shown}: {e}")));
    if let Err(e) = listening {
        let _ = std::fs::remove_file(&temporary);
        return Err(e);
    }
    Ok(sock)
}

pub(super) fn seqpacket() -> nix::Result<OwnedFd> {
    socket::socket(
        AddressFamily::Unix,
        SockType::SeqPacket,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
}

/// A connection to the pool at `path`.
pub(crate) fn connect(path: &Path) -> nix::Result<OwnedFd> {
    let sock = seqpacket()?;
    let addr = UnixAddr::new(path)?;
    socket::connect(std::os::fd::AsRawFd::as_raw_fd(&sock), &addr)?;
    Ok(sock)
}

/// Whether the peer of `conn` may use the pool: our own uid, or root.
pub(super) fn allowed(conn: &OwnedFd) -> bool {
    match getsockopt(conn, sockopt::PeerCredentials) {
        Ok(cred) => cred.uid() == getuid().as_raw() || cred.uid() == 0,
        Err(_) => false,
    }
}
