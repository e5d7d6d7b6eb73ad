//! The streamed body of `Accept: application/x-ndjson`: a channel whose
//! receiving end is the response body, one JSON object a line. The sender
//! learns when the client has gone (the body dropped), so the execution
//! behind it can end.
//!
//! Does not own what the lines say.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use tokio::sync::mpsc;

pub struct Lines(mpsc::Sender<Bytes>);

pub struct LinesBody(mpsc::Receiver<Bytes>);

pub fn channel() -> (Lines, LinesBody) {
    let (tx, rx) = mpsc::channel(64);
    (Lines(tx), LinesBody(rx))
}

impl Lines {
    /// Sends one line; false once the client has gone.
    pub async fn send(&self, value: &serde_json::Value) -> bool {
        let mut line = serde_json::to_vec(value).unwrap_or_default();
        line.push(b'\n');
        self.0.send(Bytes::from(line)).await.is_ok()
    }

    /// Resolves once the client has gone.
    pub async fn closed(&self) {
        self.0.closed().await
    }
}

impl http_body::Body for LinesBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|line| line.map(|b| Ok(Frame::data(b))))
    }
}

impl IntoResponse for LinesBody {
    fn into_response(self) -> Response {
        Response::new(Body::new(self))
    }
}
