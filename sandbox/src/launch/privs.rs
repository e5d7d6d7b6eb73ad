//! Dropping privileges for good, and installing the seccomp filter.
//!
//! Owns: the order of the drop (bounding set, securebits, ambient set,
//! capset to nothing or to what init keeps, no_new_privs) and the filter install with
//! `NEW_LISTENER | WAIT_KILLABLE_RECV`, including the clear message on
//! kernels older than 5.19. Does not own the filter's contents
//! (`sandbox_syscalls::policy`).

use std::fs;
use std::os::fd::OwnedFd;

use nix::errno::Errno;
use sandbox_syscalls::policy::bpf::Insn;

use crate::sys::caps;
use crate::sys::seccomp::{
    install_filter as seccomp_install, FLAG_NEW_LISTENER, FLAG_WAIT_KILLABLE_RECV,
};

/// Leaves this process (and everything it starts) with no capabilities,
/// no way to regain any (uid 0 included), and no_new_privs set.
pub fn drop_privileges() -> Result<(), String> {
    drop_privileges_keeping(0, 0, true)
}

/// As [`drop_privileges`], but keeps the capabilities in `keep` (bit N:
/// capability N): init keeps `users::SETID_CAPS` for its children to
/// switch users, and with shifted ids the guest root's set
/// (`guest_caps.rs`) for them to keep. `lock_root`: lock the securebits
/// that stop uid 0 from regaining capabilities on exec and setuid; off
/// only for a guest root that holds a set within its user namespace,
/// which then behaves as a container's root does (its exec keeps the set,
/// bounded by the bounding set; a setuid to another user drops it).
pub fn drop_privileges_keeping(keep: u64, bounding: u64, lock_root: bool) -> Result<(), String> {
    let err = |what: &str, e: Errno| format!("dropping privileges ({what}): {}", e.desc());
    // Capabilities are numbered from 0 with no gap: the first number the
    // kernel calls invalid is past its last (no read of
    // /proc/sys/kernel/cap_last_cap, a cold sysctl lookup in a new procfs).
    for cap in (0..64u32).filter(|c| bounding & (1 << c) == 0) {
        match caps::bounding_drop(cap) {
            Ok(()) => {}
            Err(Errno::EINVAL) => break,
            Err(e) => return Err(err("bounding set", e)),
        }
    }
    if lock_root {
        caps::set_securebits(caps::SECUREBITS_LOCKED_DOWN).map_err(|e| err("securebits", e))?;
    }
    caps::ambient_clear().map_err(|e| err("ambient set", e))?;
    caps::set_only(keep).map_err(|e| err("capset", e))?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| err("no_new_privs", e))
}

/// The filter as the kernel's `struct sock_filter`.
pub fn to_sock_filter(prog: &[Insn]) -> Vec<libc::sock_filter> {
    prog.iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// Installs `prog` on this process; returns the notification listener.
pub fn install_filter(prog: &[libc::sock_filter]) -> Result<OwnedFd, String> {
    match seccomp_install(prog, FLAG_NEW_LISTENER | FLAG_WAIT_KILLABLE_RECV) {
        Ok(Some(fd)) => Ok(fd),
        Ok(None) => Err("installing the seccomp filter: no listener returned".into()),
        Err(Errno::EINVAL) if kernel_version().is_some_and(|v| v < (5, 19)) => {
            Err(old_kernel_message())
        }
        Err(e) => Err(format!("installing the seccomp filter: {}", e.desc())),
    }
}

fn old_kernel_message() -> String {
    let (major, minor) = kernel_version().unwrap_or((0, 0));
    format!(
        "this kernel ({major}.{minor}) lacks seccomp user notification with WAIT_KILLABLE_RECV (Linux 5.19+ needed)"
    )
}

/// (major, minor) of the running kernel.
pub fn kernel_version() -> Option<(u32, u32)> {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    parse_version(&release)
}

fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions() {
        assert_eq!(super::parse_version("6.18.44-fc-v595\n"), Some((6, 18)));
        assert_eq!(super::parse_version("5.4.0"), Some((5, 4)));
        assert_eq!(super::parse_version("x"), None);
        assert!((5, 4) < (5, 19) && (6, 1) > (5, 19));
    }
}
