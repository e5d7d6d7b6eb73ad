//! `fsopen`, `fsconfig` and `fsmount`, which libc and nix do not wrap: a
//! new file system instance made from string options and returned as a
//! detached mount that only the holder of its descriptor reaches (the OCI
//! runtime's own overlayfs over idmapped copies of an engine's layers:
//! `launch/engine_overlay.rs`).
//!
//! Owns only these raw syscalls. Each `unsafe` block is a syscall with
//! NUL-terminated strings that outlive it, or integers.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_FLAG: libc::c_uint = 0;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;

/// A new instance of the file system `fs_type` made with `options` (each
/// `key` with its string value, or a flag: `None`, given as a flag and
/// not as an empty string, which kernels whose file system still parses
/// a legacy option string take as `key=` and refuse), mounted detached
/// with `attrs`
/// (MOUNT_ATTR_* flags: read-only, nosuid, nodev); the mount's root open
/// as a close-on-exec descriptor.
pub fn mount_new(
    fs_type: &CStr,
    options: &[(&CStr, Option<&CStr>)],
    attrs: u64,
) -> Result<OwnedFd, Errno> {
    // SAFETY: `fs_type` is a NUL-terminated string that outlives the
    // call; the flags are integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsopen,
            fs_type.as_ptr(),
            FSOPEN_CLOEXEC as libc::c_long,
        )
    };
    // SAFETY: a fresh descriptor returned by the kernel just now.
    let context = unsafe { OwnedFd::from_raw_fd(Errno::result(r)? as i32) };
    for (key, value) in options {
        let command = match value {
            Some(_) => FSCONFIG_SET_STRING,
            None => FSCONFIG_SET_FLAG,
        };
        fsconfig(context.as_fd(), command, Some(key), *value)?;
    }
    fsconfig(context.as_fd(), FSCONFIG_CMD_CREATE, None, None)?;
    // SAFETY: integers only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            context.as_raw_fd() as libc::c_long,
            FSMOUNT_CLOEXEC as libc::c_long,
            attrs as libc::c_long,
        )
    };
    // SAFETY: a fresh descriptor returned by the kernel just now.
    Ok(unsafe { OwnedFd::from_raw_fd(Errno::result(r)? as i32) })
}

/// One `fsconfig` call on `context`: `command` with its key and string
/// value, each a null pointer where absent (a flag's value; both for
/// FSCONFIG_CMD_CREATE).
fn fsconfig(
    context: BorrowedFd<'_>,
    command: libc::c_uint,
    key: Option<&CStr>,
    value: Option<&CStr>,
) -> Result<(), Errno> {
    let key = key.map_or(std::ptr::null(), CStr::as_ptr);
    let value = value.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: `key` and `value` are NUL-terminated strings borrowed for
    // the call, or null; the rest are integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd() as libc::c_long,
            command as libc::c_long,
            key,
            value,
            0 as libc::c_long,
        )
    };
    Errno::result(r).map(drop)
}
