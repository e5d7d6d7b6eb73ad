//! How init ends the guest in a joined pid namespace (`joined.rs`),
//! where it is not pid 1: `kill(-1)` would reach the other sandbox's
//! processes too. Init is instead the child subreaper of everything the
//! guest starts (an orphan comes back to it, not to the namespace's pid
//! 1), and at the end kills its children, listed by its own
//! `/proc/thread-self/children` in the view's procfs (opened before the
//! filter, read again with `pread`, which the filter passes), until none
//! is left: a killed process's children are reparented to init before
//! its exit is reaped, so each round finds the next generation.
//!
//! Owns: the subreaper, that list and that loop. Does not own the pid-1
//! ending of a sandbox's own namespace (`init.rs`, `end_the_rest`).

use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::errno::Errno;
use nix::sys::prctl::set_child_subreaper;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

/// Init's children, as the view's procfs lists them.
pub(super) struct Descendants {
    children: File,
}

impl Descendants {
    /// Makes init the subreaper of its descendants and opens its list of
    /// children (close-on-exec: the guest never holds it). In the view,
    /// after the pivot: its procfs names the pids `kill` takes.
    pub fn adopt() -> Result<Descendants, String> {
        set_child_subreaper(true)
            .map_err(|e| format!("becoming the guest's subreaper: {}", e.desc()))?;
        let children = File::open("/proc/thread-self/children")
            .map_err(|e| format!("opening init's list of children: {e}"))?;
        Ok(Descendants { children })
    }

    /// The list's descriptor (init keeps it open).
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.children.as_raw_fd()
    }

    /// Kills and reaps every descendant of init.
    pub fn end(&self) {
        loop {
            for pid in self.list() {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            match waitpid(None, None) {
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return,
            }
        }
    }

    /// The pids of init's children now.
    fn list(&self) -> Vec<i32> {
        let mut buf = vec![0u8; 4096];
        loop {
            let n = self.children.read_at(&mut buf, 0).unwrap_or(0);
            if n < buf.len() {
                buf.truncate(n);
                break;
            }
            buf.resize(buf.len() * 2, 0);
        }
        String::from_utf8_lossy(&buf)
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .filter(|&pid: &i32| pid > 0)
            .collect()
    }
}
