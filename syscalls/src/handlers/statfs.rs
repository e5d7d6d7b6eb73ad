//! statfs(path): the file system under a path of the view.
//!
//! Owns: resolving the path in the view and writing `struct statfs` for
//! the guest, so `df /` shows the `--disk` layer. Path stats (stat,
//! lstat, newfstatat, statx) and `fstatfs` pass the filter: the kernel
//! answers them in the guest's own view (the policy table says why).

use std::os::fd::AsFd;

use vfs::sys;

use super::{lookup_path, read_path, value, Context, Res};
use crate::guest::Guest;

/// statfs(path, buf).
pub fn statfs(ctx: &Context, g: &dyn Guest, addr: u64, buf: u64) -> Res {
    let path = read_path(g, addr)?;
    let fd = lookup_path(ctx, g, libc::AT_FDCWD, &path, false, true)?;
    let st = sys::fstatfs_bytes(fd.as_fd())?;
    g.write_mem(buf, &st)?;
    value(0)
}
