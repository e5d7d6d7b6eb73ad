//! The runtime's log: `--log FILE` (always created, appended to), one
//! line per message, JSON (`{"level":"error","msg":"...","time":"..."}`,
//! what containerd and Docker parse and show) or text; errors also go to
//! stderr. Owns the line format and the RFC 3339 time stamp; not what is
//! logged.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::cli::{GlobalFlags, LogFormat};

/// Where the runtime's messages go.
#[derive(Debug)]
pub struct Log {
    file: Option<File>,
    format: LogFormat,
    debug: bool,
}

impl Log {
    /// Opens (creates) `--log`; a file that cannot be opened is reported
    /// once on stderr and messages then go to stderr only.
    pub fn open(flags: &GlobalFlags) -> Log {
        let file = flags.log.as_deref().and_then(|p| match open_append(p) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("supervisor: --log {}: {e}", p.display());
                None
            }
        });
        Log {
            file,
            format: flags.log_format.unwrap_or_default(),
            debug: flags.debug,
        }
    }

    /// An error: in the log and on stderr.
    pub fn error(&self, msg: &str) {
        eprintln!("supervisor: {msg}");
        self.write("error", msg);
    }

    /// A warning: in the log only.
    pub fn warn(&self, msg: &str) {
        self.write("warning", msg);
    }

    /// A debug line, with `--debug` only.
    pub fn debug(&self, msg: &str) {
        if self.debug {
            self.write("debug", msg);
        }
    }

    fn write(&self, level: &str, msg: &str) {
        let Some(mut file) = self.file.as_ref() else {
            return;
        };
        let line = match self.format {
            LogFormat::Json => {
                let value = serde_json::json!({"level": level, "msg": msg, "time": rfc3339_now()});
                format!("{value}\n")
            }
            LogFormat::Text => format!("time=\"{}\" level={level} msg={msg:?}\n", rfc3339_now()),
        };
        let _ = file.write_all(line.as_bytes());
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Now, as `2026-11-29T15:43:23.123456789Z`.
pub fn rfc3339_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_nanos())
}

/// `secs` since the epoch (UTC) in RFC 3339 with nanoseconds.
pub fn rfc3339(secs: u64, nanos: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil: (year, month, day) of day `z` since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000000000Z");
        // 2026-11-28T15:43:23Z
        assert_eq!(rfc3339(1_795_880_603, 5), "2026-11-28T15:43:23.000000005Z");
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00.000000000Z");
    }
}
