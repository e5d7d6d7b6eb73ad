//! `--trace`: one line per trapped call, strace-style, with the sandbox's
//! pid, the decoded call, its result and how long the supervisor took
//! (from receiving the notification to having its answer ready):
//!
//! `[pid 2] openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3 <0.000021>`
//!
//! Owns: where the lines go (stderr or a file) and their format. Does not
//! own decoding the arguments (`sandbox_syscalls::trace`). Off by default;
//! when off, a worker's only cost is one `Option` check per notification.

use std::fs::File;
use std::io::{self, LineWriter, Write};
use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use parking_lot::{Mutex, MutexGuard};

/// How a trapped call was answered.
#[derive(Clone, Copy, Debug)]
pub enum Answered {
    Value(i64),
    Error(Errno),
    /// Passed on to the kernel (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
    Continue,
    /// A descriptor installed in the guest under this number.
    Fd(i32),
    /// The calling thread was gone before the answer.
    Gone,
}

/// Where trace lines go.
pub struct Tracer {
    out: Mutex<Box<dyn Write + Send>>,
}

/// The trace held from before a call is answered until its line is
/// written ([`Tracer::hold`]).
pub(super) struct Held<'a>(MutexGuard<'a, Box<dyn Write + Send>>);

impl Tracer {
    /// `-` is stderr; anything else a file, created or truncated.
    pub fn open(target: &Path) -> io::Result<Tracer> {
        let out: Box<dyn Write + Send> = if target == Path::new("-") {
            Box::new(io::stderr())
        } else {
            Box::new(LineWriter::new(File::create(target)?))
        };
        Ok(Tracer {
            out: Mutex::new(out),
        })
    }

    /// To `file` (the pool's client opened it).
    pub fn to_file(file: File) -> Tracer {
        Tracer {
            out: Mutex::new(Box::new(LineWriter::new(file))),
        }
    }

    /// Takes the trace before a call is answered. The guest can run on
    /// (and end) only after its answer, so a line written under the same
    /// hold is out before [`Tracer::settle`] returns: the run's last
    /// calls are never cut from the trace by the supervisor's exit.
    pub(super) fn hold(&self) -> Held<'_> {
        Held(self.out.lock())
    }

    /// Waits for any line still being written, and flushes; called once
    /// the guest has ended.
    pub fn settle(&self) {
        let _ = self.out.lock().flush();
    }
}

impl Held<'_> {
    /// Writes one line. `pid`: the caller's pid in the sandbox, if known.
    pub(super) fn line(
        mut self,
        pid: Option<i32>,
        call: &str,
        denied: bool,
        answered: Answered,
        took: Duration,
    ) {
        let who = pid.map_or_else(|| "[pid ?]".to_string(), |p| format!("[pid {p}]"));
        let result = match answered {
            Answered::Value(v) => format!("= {v}"),
            Answered::Fd(fd) => format!("= {fd}"),
            Answered::Error(e) => format!("= -1 {e:?} ({})", e.desc()),
            Answered::Continue => "= ? <passed to the kernel>".to_string(),
            Answered::Gone => "= ? <caller gone>".to_string(),
        };
        let tag = if denied { " [denied by policy]" } else { "" };
        let text = format!("{who} {call} {result}{tag} <{:.6}>\n", took.as_secs_f64());
        let _ = self.0.write_all(text.as_bytes());
    }
}
