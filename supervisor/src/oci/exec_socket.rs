//! The monitor's exec socket: `<state>/<id>/exec.sock`, a listening
//! `SOCK_SEQPACKET` unix socket. A relay thread of the monitor accepts
//! each connection and hands it to the sandbox's init
//! (`launch::ExecRequests`), whose helper then talks to the requester
//! directly (protocol: `launch/exec_request.rs`). Only root (the socket
//! is 0600 in a 0711 directory) can connect.
//!
//! Owns the socket and the relay; not the request's contents.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::thread;

use nix::errno::Errno;
use nix::sys::socket::{
    bind, connect, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
};

use sandbox::launch::ExecRequests;
use sandbox::sys::fd::accept;

/// Binds the socket at `path` and starts the relay thread.
pub fn serve(path: &Path, requests: ExecRequests) -> Result<(), String> {
    let err = |e: Errno| format!("exec socket {}: {}", path.display(), e.desc());
    let sock = new_socket().map_err(err)?;
    let _ = std::fs::remove_file(path);
    let (_dir, short) = short_path(path)?;
    let addr = UnixAddr::new(&short).map_err(err)?;
    bind(std::os::fd::AsRawFd::as_raw_fd(&sock), &addr).map_err(err)?;
    // Root only: whoever connects runs a process in the container (the
    // monitor's umask is 0 once the trap serves).
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(|e| format!("exec socket {}: {e}", path.display()))?;
    listen(&sock, Backlog::new(16).map_err(err)?).map_err(err)?;
    thread::Builder::new()
        .name("exec-relay".into())
        .spawn(move || relay(sock, requests))
        .map_err(|e| format!("starting the exec relay: {e}"))?;
    Ok(())
}

fn relay(sock: OwnedFd, requests: ExecRequests) {
    loop {
        match accept(sock.as_fd()) {
            Ok(conn) => {
                // A failed hand-off closes the connection: the requester sees its end.
                let _ = requests.send(conn);
            }
            Err(Errno::EMFILE | Errno::ENFILE | Errno::ENOMEM) => {
                thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(_) => continue,
        }
    }
}

fn new_socket() -> nix::Result<OwnedFd> {
    socket(
        AddressFamily::Unix,
        SockType::SeqPacket,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
}

/// Connects to the exec socket at `path`.
pub fn connect_to(path: &Path) -> Result<OwnedFd, String> {
    let err = |e: Errno| {
        format!(
            "connecting to the container ({}): {}",
            path.display(),
            e.desc()
        )
    };
    let sock = new_socket().map_err(err)?;
    let (_dir, short) = short_path(path)?;
    let addr = UnixAddr::new(&short).map_err(err)?;
    connect(std::os::fd::AsRawFd::as_raw_fd(&sock), &addr).map_err(err)?;
    Ok(sock)
}

/// `path` spelled through `/proc/self/fd/N/` (N: its directory, opened
/// O_PATH and returned to be held while the path is used): a socket's
/// path must fit in 108 bytes, and Docker's state directories do not.
fn short_path(path: &Path) -> Result<(std::fs::File, std::path::PathBuf), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default();
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(parent)
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    let short = Path::new("/proc/self/fd")
        .join(dir.as_raw_fd().to_string())
        .join(name);
    Ok((dir, short))
}
