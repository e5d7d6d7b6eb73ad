//! The host's kernel log around a test's runs: the seccomp audit records
//! (type 1326) that name the binary under test, with a control record
//! (`tests/c/seccomp_logged.c`) that proves such records reach
//! `/dev/kmsg` here and that every earlier one has been read.
//!
//! The supervisor's own filter logs the refusals it did not expect
//! (`SECCOMP_FILTER_FLAG_LOG`); a run that leaves one has met a path its
//! allow list missed, and a host running sandboxes by the thousand gets a
//! line in its kernel log for each.
//!
//! A test binary runs its tests on several threads, and a record names
//! the binary, not the test: a [`KernelLog`] holds [`LOG_WATCH`] while it
//! reads, and a test that makes such a record on purpose (a socket
//! factory killed by its filter) holds it too ([`deliberate_record`]), so
//! no watch sees another test's deliberate record.

use super::*;
use std::fs::File;
use std::io::Seek;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Held by a [`KernelLog`] for its life and by [`deliberate_record`].
static LOG_WATCH: Mutex<()> = Mutex::new(());

fn log_watch() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the next one still runs.
    LOG_WATCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test while it makes a seccomp record of the binary under
/// test on purpose: no [`KernelLog`] of another test reads meanwhile.
pub fn deliberate_record() -> MutexGuard<'static, ()> {
    log_watch()
}

/// `/dev/kmsg` from the moment it was opened (holding [`LOG_WATCH`]).
pub struct KernelLog {
    file: File,
    _watch: MutexGuard<'static, ()>,
}

impl KernelLog {
    /// None where the log cannot be read (not root, `kernel.dmesg_restrict`).
    pub fn from_now() -> Option<KernelLog> {
        let watch = log_watch();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        file.seek(std::io::SeekFrom::End(0)).ok()?;
        Some(KernelLog {
            file,
            _watch: watch,
        })
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
            match self.file.read(&mut buf) {
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
