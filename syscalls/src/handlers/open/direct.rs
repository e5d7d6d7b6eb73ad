//! A plain read of /proc by a clean absolute path, on procfs's direct
//! route (`procfs/src/direct.rs`): the file opened beneath the view's
//! procfs, named by its path, and answered as the general route answers
//! it (`decide.rs`, `mod.rs`): the sandbox's text, the file itself where
//! the guest's domain fences it off, CONTINUE, or the kernel's refusal of
//! that read of a fenced regular file (EACCES, which the general route's
//! reopen would meet again). `None` sends the open the general way, which
//! then answers it, other errors included.
//!
//! Owns: taking the route in the open handler. Does not own: which paths
//! qualify or the open (procfs), the decision's rules (`decide.rs`).

use std::ffi::CStr;

use procfs::Named;

use super::decide::{fenced, ready_if_network};
use super::how::O_CLOEXEC;
use super::serve::readable_by_all;
use super::{Caller, Context, Res, UNOPENED_FLAGS};
use crate::guest::{Guest, Reply};

/// The answer to a plain read of `path` with `flags` (the guest's, with
/// `O_CLOEXEC`), when the direct route takes it: only flags an open by
/// the supervisor answers as the guest's would. Apart, so that the
/// handler's common paths keep their code.
#[inline(never)]
pub(super) fn open(ctx: &Context, g: &dyn Guest, path: &CStr, flags: u64) -> Option<Res> {
    let cloexec = flags & O_CLOEXEC != 0;
    let flags = (flags & !O_CLOEXEC) as i32;
    if flags & !UNOPENED_FLAGS != 0 {
        return None;
    }
    let follow = flags & libc::O_NOFOLLOW == 0;
    let rel = procfs::direct_rel(path.to_bytes(), follow, &Caller::new(ctx, g))?;
    let direct = match ctx
        .synthetic
        .open_direct(&ctx.fs, &rel, flags & !libc::O_NOFOLLOW)?
    {
        Ok(direct) => direct,
        // A regular file of procfs the fence keeps from the guest, whose
        // read the kernel refused this caller: the general route's answer
        // (its reopen as the same caller is refused the same way).
        Err(e) if ctx.fence.is_some() => return Some(Err(e)),
        Err(_) => return None,
    };
    let named = Named::known(&direct.fd, direct.name);
    ready_if_network(ctx, &named, &direct.st);
    let synthetic = ctx.synthetic.which_stat(&named, &direct.st);
    let served = match synthetic {
        None if !fenced(ctx, &named, &direct.st) => return Some(Ok(Reply::Continue)),
        None if direct.readable => Ok(direct.fd),
        Some(kind) if direct.readable => {
            let name = named.into_name().unwrap_or_default();
            procfs::synthetic_direct(&ctx.proc(), direct.fd, &name, kind, flags)
        }
        // Opened O_PATH: a text of the sandbox's own, made without
        // opening the file (readable by all, so the guest's open could
        // not fail); otherwise the general way.
        Some(kind) if readable_by_all(&direct.st) => {
            procfs::synthetic_unopened(&ctx.proc(), kind, flags)?
        }
        _ => return None,
    };
    Some(served.map(|fd| Reply::InstallFd { fd, cloexec }))
}
