//! The daemon's listeners: the Unix socket (bound mode 0600, a stale
//! socket replaced, one another daemon answers on refused; every
//! connection's SO_PEERCRED checked: only the daemon's own uid and root
//! are served, as the pool does) and the TCP listener `--listen` opens
//! (whose requests `auth.rs` checks). Each accepted connection carries a
//! [`Peer`], the connection info the routes see.
//!
//! Does not own the routes or the authentication of requests.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use axum::Router;
use nix::sys::stat::{umask, Mode};
use nix::unistd::getuid;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// Who is on the other end of a connection.
#[derive(Clone, Debug)]
pub struct Peer {
    /// The peer's uid, on the Unix socket (SO_PEERCRED).
    pub uid: Option<u32>,
}

/// The Unix socket's listener: accepts only our own uid and root.
pub struct CheckedUnix {
    inner: UnixListener,
    own: u32,
}

/// The TCP listener (`--listen`).
pub struct Tcp(TcpListener);

/// Binds `path` mode 0600: under a temporary name, then renamed into
/// place, so a client that sees the path never finds it refusing.
pub fn bind_unix(path: &Path) -> Result<CheckedUnix, String> {
    let shown = path.display();
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(format!("--socket {shown}: exists and is not a socket"));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(format!("--socket {shown}: another daemon answers there"));
        }
    }
    let mut temporary = PathBuf::from(path);
    temporary.set_file_name(format!(
        ".{}.{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temporary);
    let old = umask(Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(&temporary);
    umask(old);
    let inner = bound.map_err(|e| format!("--socket {shown}: {e}"))?;
    std::fs::rename(&temporary, path).map_err(|e| format!("--socket {shown}: {e}"))?;
    Ok(CheckedUnix {
        inner,
        own: getuid().as_raw(),
    })
}

impl Listener for CheckedUnix {
    type Io = UnixStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (UnixStream, Peer) {
        loop {
            match self.inner.accept().await {
                Ok((stream, _)) => match stream.peer_cred() {
                    Ok(cred) if cred.uid() == self.own || cred.uid() == 0 => {
                        return (
                            stream,
                            Peer {
                                uid: Some(cred.uid()),
                            },
                        )
                    }
                    // Anyone else's connection is closed unread.
                    _ => drop(stream),
                },
                // Out of descriptors and the like: wait, as axum's own
                // listeners do, instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Peer> {
        Ok(Peer { uid: None })
    }
}

impl Listener for Tcp {
    type Io = TcpStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (TcpStream, Peer) {
        loop {
            match self.0.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return (stream, Peer { uid: None });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Peer> {
        Ok(Peer { uid: None })
    }
}

impl Connected<IncomingStream<'_, CheckedUnix>> for Peer {
    fn connect_info(stream: IncomingStream<'_, CheckedUnix>) -> Peer {
        stream.remote_addr().clone()
    }
}

impl Connected<IncomingStream<'_, Tcp>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Tcp>) -> Peer {
        stream.remote_addr().clone()
    }
}

pub async fn serve_unix(listener: CheckedUnix, router: Router) -> Result<(), String> {
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<Peer>(),
    )
    .await
    .map_err(|e| format!("the socket: {e}"))
}

pub async fn serve_tcp(listener: TcpListener, router: Router) -> Result<(), String> {
    axum::serve(
        Tcp(listener),
        router.into_make_service_with_connect_info::<Peer>(),
    )
    .await
    .map_err(|e| format!("--listen: {e}"))
}
