//! An execution's result as the API answers it ([`ExecutionResult`]),
//! built from the run's report (REPORT.md: reason, exit code, signal,
//! message, times, peak memory) and the output captured ([`Capture`]:
//! each stream kept up to a cap, with a flag when cut; bytes that are not
//! UTF-8 are answered as base64 with `*_encoding: "base64"`).
//!
//! Does not own running or keeping results.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One stream's output, kept up to `cap` bytes.
pub struct Capture {
    pub bytes: Vec<u8>,
    pub cap: usize,
    pub truncated: bool,
}

impl Capture {
    pub fn new(cap: usize) -> Capture {
        Capture {
            bytes: vec![],
            cap,
            truncated: false,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.bytes.len());
        if chunk.len() > room {
            self.truncated = true;
        }
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

/// Text as the API carries bytes: (text, encoding).
pub fn encode(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), "utf-8"),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            "base64",
        ),
    }
}

/// How a run ended: its report (when there is one), else its exit code
/// and one line; `wall_ms` measured by the daemon, for a run without a
/// report.
pub struct Ending<'a> {
    pub report: Option<&'a Value>,
    pub code: i32,
    pub message: Option<String>,
    pub wall_ms: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ExecutionResult {
    pub id: String,
    /// REPORT.md's reasons: exited, signaled, timeout, memory, cpu_time,
    /// pids, output, disk, policy, supervisor_error.
    pub reason: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The one line the supervisor printed, absent on a normal exit.
    pub message: Option<String>,
    pub stdout: String,
    pub stdout_encoding: String,
    pub stdout_truncated: bool,
    pub stderr: String,
    pub stderr_encoding: String,
    pub stderr_truncated: bool,
    pub wall_ms: f64,
    pub cpu_ms: Option<f64>,
    pub peak_memory_bytes: Option<u64>,
    /// Whether a pool's sandbox, set up beforehand, ran it.
    pub pooled: bool,
}

impl ExecutionResult {
    /// From the run's ending and the output captured.
    pub fn new(
        id: &str,
        ending: Ending<'_>,
        stdout: &Capture,
        stderr: &Capture,
        pooled: bool,
    ) -> ExecutionResult {
        let Ending {
            report,
            code,
            message,
            wall_ms: wall_fallback_ms,
        } = ending;
        let (out, out_enc) = encode(&stdout.bytes);
        let (err, err_enc) = encode(&stderr.bytes);
        let get = |k: &str| report.and_then(|r| r.get(k));
        let reason = get("reason")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| match (code, &message) {
                (0, None) => "exited".into(),
                _ => "supervisor_error".into(),
            });
        let exit_code = match report {
            Some(_) => get("exit_code").and_then(Value::as_i64).map(|c| c as i32),
            None if reason == "exited" => Some(code),
            None => None,
        };
        let cpu_ms = get("cpu_time_s").and_then(|c| {
            let user = c.get("user")?.as_f64()?;
            let system = c.get("system")?.as_f64()?;
            Some((user + system) * 1000.0)
        });
        // `--output-limit` counts both streams together and drops the
        // rest of either: both are then incomplete.
        let cut = get("output")
            .and_then(|o| o.get("cut"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        ExecutionResult {
            id: id.into(),
            reason,
            exit_code,
            signal: get("signal").and_then(Value::as_i64).map(|s| s as i32),
            message: get("message")
                .and_then(Value::as_str)
                .map(String::from)
                .or(message),
            stdout: out,
            stdout_encoding: out_enc.into(),
            stdout_truncated: stdout.truncated || cut,
            stderr: err,
            stderr_encoding: err_enc.into(),
            stderr_truncated: stderr.truncated || cut,
            wall_ms: get("wall_time_s")
                .and_then(Value::as_f64)
                .map_or(wall_fallback_ms, |s| s * 1000.0),
            cpu_ms,
            peak_memory_bytes: get("peak_memory_bytes").and_then(Value::as_u64),
            pooled,
        }
    }
}

/// The result's JSON schema, for the OpenAPI document.
pub fn schema() -> Value {
    let s = |t: &str| serde_json::json!({ "type": t });
    let n = |t: &str| serde_json::json!({ "type": t, "nullable": true });
    serde_json::json!({
        "type": "object",
        "required": ["id", "reason", "exit_code", "signal", "stdout", "stdout_encoding",
                     "stdout_truncated", "stderr", "stderr_encoding", "stderr_truncated",
                     "wall_ms", "pooled"],
        "properties": {
            "id": s("string"),
            "reason": { "type": "string", "enum": ["exited", "signaled", "timeout", "memory",
                "cpu_time", "pids", "output", "disk", "policy", "supervisor_error"] },
            "exit_code": n("integer"),
            "signal": n("integer"),
            "message": n("string"),
            "stdout": s("string"),
            "stdout_encoding": { "type": "string", "enum": ["utf-8", "base64"] },
            "stdout_truncated": s("boolean"),
            "stderr": s("string"),
            "stderr_encoding": { "type": "string", "enum": ["utf-8", "base64"] },
            "stderr_truncated": s("boolean"),
            "wall_ms": s("number"),
            "cpu_ms": n("number"),
            "peak_memory_bytes": n("integer"),
            "pooled": s("boolean")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_keeps_its_cap_and_says_so() {
        let mut c = Capture::new(4);
        c.push(b"ab");
        assert!(!c.truncated);
        c.push(b"cdef");
        assert_eq!((c.bytes.as_slice(), c.truncated), (&b"abcd"[..], true));
    }

    #[test]
    fn bytes_not_utf8_go_as_base64() {
        assert_eq!(encode(b"hi"), ("hi".into(), "utf-8"));
        assert_eq!(encode(&[0xff, 0xfe]), ("//4=".into(), "base64"));
    }
}
