//! A small HTTP/1.1 client of the daemon's Unix socket (hyper), for the
//! command-line front-ends that talk to a running `supervisor serve`
//! (`supervisor sessions`): one request per connection, the answer's
//! body read whole or frame by frame.
//!
//! Owns connecting and sending; not what the requests mean.

use std::path::Path;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response};

/// A request body.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// An empty body, or these bytes.
pub fn body(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// Sends one request to the daemon at `socket`; its answer (body unread).
pub async fn send(
    socket: &Path,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Body,
) -> Result<Response<Incoming>, String> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(body).map_err(|e| format!("{path}: {e}"))?;
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("{path}: {e}"))
}

/// The whole body of `response`.
pub async fn read_all(response: Response<Incoming>) -> Result<Bytes, String> {
    response
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| format!("reading the answer: {e}"))
}

/// The one line of an error answer (`{"error": ...}`), or its text.
pub fn error_line(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string())
}
