//! What the criterion benches share: one long-lived guest process spoken
//! to over a pipe ("NAME N" in, the nanoseconds N iterations took out),
//! the supervisor binary to drive, and the per-iteration samples behind
//! each bench's closing summary table.
//!
//! Owns: the guest protocol's host side and the sample store. Does not own
//! the guest programs (tests/c/*bench_guest.c) nor what each bench measures.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long a guest may take to answer one command.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Nanoseconds per iteration, by "group/function", from every call criterion
/// makes (warm-up included).
pub type Samples = Arc<Mutex<BTreeMap<String, Vec<f64>>>>;

/// One long-lived bench_guest process and its command pipe.
pub struct Guest {
    pub label: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<String>,
}

impl Guest {
    pub fn spawn(label: &'static str, mut cmd: Command) -> Result<Guest, String> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("spawn {label} guest: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, answers) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut guest = Guest {
            label,
            child,
            stdin: Some(stdin),
            answers,
        };
        guest.run("ping", 0)?;
        Ok(guest)
    }

    /// Runs `name n` in the guest; the time the n iterations took.
    pub fn run(&mut self, name: &str, n: u64) -> Result<Duration, String> {
        let label = self.label;
        let stdin = self.stdin.as_mut().ok_or("guest stdin closed")?;
        writeln!(stdin, "{name} {n}")
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("{label} guest: write: {e}"))?;
        let line = self
            .answers
            .recv_timeout(ANSWER_TIMEOUT)
            .map_err(|_| format!("{label} guest: no answer to `{name} {n}` (exited or hung)"))?;
        let ns: u64 = line
            .trim()
            .parse()
            .map_err(|_| format!("{label} guest: `{name}`: {}", line.trim()))?;
        Ok(Duration::from_nanos(ns))
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        // EOF on stdin ends the guest; kill it if it does not go.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The supervisor binary: $SUPERVISOR_BIN, or the one cargo built.
pub fn supervisor_bin() -> PathBuf {
    std::env::var_os("SUPERVISOR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_supervisor")))
}

/// Records one criterion sample of `iters` iterations under `key`.
pub fn record(samples: &Samples, key: &str, d: Duration, iters: u64) {
    let per = d.as_nanos() as f64 / iters.max(1) as f64;
    if let Ok(mut map) = samples.lock() {
        map.entry(key.to_string()).or_default().push(per);
    }
}

/// The median of `v`; None when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The benches' criterion settings: 20 samples after 1 s of warm-up, 3 s
/// of measurement, then the command line's overrides (`--bench` filters,
/// `--save-baseline`, test mode).
pub fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args()
}
