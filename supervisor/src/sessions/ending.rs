//! Why a session's sandbox ended by itself (a memory or process limit
//! killed it): the run report its `session-sandbox` writes as it exits
//! (`DIR/report.json`, REPORT.md's schema), read once it is gone, so
//! that the exec whose command brought the limit down and the session's
//! state say which limit it was, as an execution's result does.
//!
//! Owns the report's file name and reading it; not when a session ends
//! (`registry.rs`) nor how an exec's result is answered (`requests.rs`).

use std::path::{Path, PathBuf};

/// The report's name in the session's directory.
pub const REPORT_FILE: &str = "report.json";

/// How the sandbox ended, from its report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxEnd {
    /// REPORT.md's reason: `memory`, `pids`, `signaled`...
    pub reason: String,
    /// Its one line (`killed: memory limit 256 MiB reached (peak 256 MiB)`).
    pub message: Option<String>,
}

/// Where the sandbox of the session in `dir` writes its report.
pub fn report_path(dir: &Path) -> PathBuf {
    dir.join(REPORT_FILE)
}

/// The report of the sandbox that ran in `dir`, if it wrote one that parses.
pub fn read(dir: &Path) -> Option<SandboxEnd> {
    let text = std::fs::read(report_path(dir)).ok()?;
    let report: serde_json::Value = serde_json::from_slice(&text).ok()?;
    Some(SandboxEnd {
        reason: report.get("reason")?.as_str()?.to_string(),
        message: report
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string),
    })
}

/// Removes the report of a sandbox before another starts in `dir`.
pub fn forget(dir: &Path) {
    let _ = std::fs::remove_file(report_path(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_and_a_bad_one_is_none() {
        let dir = std::env::temp_dir().join(format!("ending-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir), None);
        std::fs::write(
            report_path(&dir),
            r#"{"reason": "memory", "message": "killed: memory limit 1 MiB reached"}"#,
        )
        .unwrap();
        let end = read(&dir).unwrap();
        assert_eq!(end.reason, "memory");
        assert_eq!(
            end.message.as_deref(),
            Some("killed: memory limit 1 MiB reached")
        );
        std::fs::write(report_path(&dir), b"{not json").unwrap();
        assert_eq!(read(&dir), None);
        forget(&dir);
        assert!(!report_path(&dir).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
