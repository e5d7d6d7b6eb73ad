//! No set-user-ID or set-group-ID file of the host's made by a guest:
//! `chmod`, `fchmodat`, `fchmodat2` and `fchmod` drop those bits when the
//! object is on a file system the host has mounted.
//!
//! Why: a guest is its invoker on the host (root's sandbox maps its root
//! to the host's root, with no capability), and the owner of a file may
//! give it the set-id bits without any. A root guest that wrote an ELF to
//! its redirected stdout (`supervisor run ... > out`) or into a `--rw`
//! mount and then called `fchmod(fd, 04755)` left a set-user-ID-root
//! program on the host, which any user who can reach it runs as root.
//! The sandbox's own mounts are nosuid and the guest has `no_new_privs`,
//! so the bits mean nothing inside; the host's mounts are not. (Writing
//! to a set-id file clears the bits for a caller without CAP_FSETID, so
//! an `open(O_CREAT, 04755)` followed by writes leaves none: the bits
//! after the content can only come from this family of calls, all
//! serviced.)
//!
//! Which file systems are the host's: `host_fs` decides. The view's root
//! (the sandbox's layer, or an OCI container's root file system, where a
//! runtime keeps an image's set-id programs — `docker build`'s `apt-get
//! install sudo` — as runc does) is not. The sandbox's layer, overlays and
//! `--tmpfs` mounts keep the bits as on Linux; so do bits that make no
//! program anywhere: those of anything but a regular file (a directory's
//! set-group-ID bit only hands down the group), set-user-ID on a file no
//! one may execute, set-group-ID without group execute (a later `chmod +x`
//! comes here again).
//!
//! Owns only this decision; the calls are `attr.rs`'s.

use std::os::fd::BorrowedFd;

use vfs::sys;

use super::host_fs;

/// `mode` without the set-id bits that would make `fd`'s object a
/// set-id program of the host's. `root_dev`: the device of the view's
/// root, never counted as the host's (see the module doc).
pub(super) fn mode_for(fd: BorrowedFd<'_>, mode: u32, root_dev: u64) -> u32 {
    mode_given(mode, root_dev, || sys::fstat(fd).ok())
}

/// [`mode_for`] with the object's status already in hand (or asked of
/// `stat` only when `mode` has a set-id bit); an object whose status
/// cannot be read keeps `mode`.
pub(super) fn mode_given(
    mode: u32,
    root_dev: u64,
    stat: impl FnOnce() -> Option<libc::stat>,
) -> u32 {
    let setid = libc::S_ISUID | libc::S_ISGID;
    if mode & setid == 0 {
        return mode;
    }
    let Some(st) = stat() else {
        return mode;
    };
    if !host_fs::is_hosts(st.st_dev, root_dev) {
        return mode;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => mode & !program_bits(mode),
        _ => mode,
    }
}

/// The set-id bits of `mode` that exec honours: set-user-ID on a file
/// anyone may execute, set-group-ID with group execute (without it the
/// bit is the old mandatory-locking mark, and no program).
fn program_bits(mode: u32) -> u32 {
    let uid = match mode & 0o111 {
        0 => 0,
        _ => libc::S_ISUID,
    };
    let gid = match mode & libc::S_IXGRP {
        0 => 0,
        _ => libc::S_ISGID,
    };
    (uid | gid) & mode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bits_that_make_a_program_go() {
        assert_eq!(program_bits(0o4755), libc::S_ISUID);
        assert_eq!(program_bits(0o6755), libc::S_ISUID | libc::S_ISGID);
        assert_eq!(program_bits(0o4644), 0);
        assert_eq!(program_bits(0o2744), 0);
        assert_eq!(program_bits(0o6701), libc::S_ISUID);
        assert_eq!(program_bits(0o0755), 0);
    }
}
