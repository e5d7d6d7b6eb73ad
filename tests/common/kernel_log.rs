//! The host's kernel log around a test's runs: the seccomp audit records
//! (type 1326) that name the binary under test, with a control record
//! (`tests/c/seccomp_logged.c`) that proves such records reach
//! `/dev/kmsg` here and that every earlier one has been read.
//!
//! The supervisor's own filter logs the refusals it did not expect
//! (`SECCOMP_FILTER_FLAG_LOG`); a run that leaves one has met a path its
//! allow list missed, and a host running sandboxes by the thousand gets a
//! line in its kernel log for each.

use super::*;
use std::fs::File;
use std::io::Seek;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

/// `/dev/kmsg` from the moment it was opened.
pub struct KernelLog(File);

impl KernelLog {
    /// None where the log cannot be read (not root, `kernel.dmesg_restrict`).
    pub fn from_now() -> Option<KernelLog> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        file.seek(std::io::SeekFrom::End(0)).ok()?;
        Some(KernelLog(file))
    }

    /// The seccomp records naming the binary under test written since
    /// [`from_now`](Self::from_now); None if the control's record did not
    /// arrive within 10 s (records go elsewhere: an audit daemon).
    pub fn seccomp_records_of_bin(&mut self) -> Option<Vec<String>> {
        let control = Command::new(c_prog("seccomp_logged")).output().ok()?;
        let out = String::from_utf8_lossy(&control.stdout).into_owned();
        let mut fields = out.split_whitespace();
        let pid = fields.next()?.to_string();
        assert_eq!(fields.next(), Some("-1"), "control: {out}");
        let control_mark = format!(" pid={pid} ");
        let mut records = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !records.iter().any(|r: &String| r.contains(&control_mark)) {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
            records.extend(self.new_records());
        }
        let exe = format!("exe=\"{}\"", bin().display());
        records.retain(|r| r.contains("type=1326") && r.contains(&exe));
        Some(records)
    }

    /// The records written since the last read (one record a read).
    fn new_records(&mut self) -> Vec<String> {
        let mut records = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => records.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                // Overwritten before we read it: the next one follows.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        records
    }
}
