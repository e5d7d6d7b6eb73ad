//! The wire form of a session command's end and of its streamed chunks:
//! `exit_code`, `signal`, `reason`, `message`, `stdout`, `stderr` (text,
//! or base64 with `stdout_encoding`/`stderr_encoding` `"base64"` when the
//! bytes are not UTF-8), `stdout_truncated`, `stderr_truncated` (more
//! than 1 MiB written: the stream carried it all), `wall_ms`; a chunk is
//! `{"type": "stdout"|"stderr", "data": ..., "encoding": ...}`.
//!
//! Owns those shapes only.

use base64::Engine;
use serde_json::{json, Value};

use crate::sessions::exec::{Outcome, Stream};

/// Bytes as text if they are UTF-8, else base64; and which.
fn text(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), "utf-8"),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            "base64",
        ),
    }
}

pub fn json(o: &Outcome) -> Value {
    let (stdout, stdout_encoding) = text(&o.stdout.bytes);
    let (stderr, stderr_encoding) = text(&o.stderr.bytes);
    json!({
        "exit_code": o.exit_code,
        "signal": o.signal,
        "reason": o.reason,
        "message": o.message,
        "stdout": stdout,
        "stdout_encoding": stdout_encoding,
        "stdout_truncated": o.stdout.truncated,
        "stderr": stderr,
        "stderr_encoding": stderr_encoding,
        "stderr_truncated": o.stderr.truncated,
        "wall_ms": o.wall.as_secs_f64() * 1000.0,
    })
}

pub fn chunk(stream: Stream, data: &[u8]) -> Value {
    let (data, encoding) = text(data);
    json!({ "type": stream, "data": data, "encoding": encoding })
}
