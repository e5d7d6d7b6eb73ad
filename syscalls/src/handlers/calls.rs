//! The entry point of every serviced call, named after the call: each
//! reads the registers the way the kernel's `SYSCALL_DEFINE` does (an
//! `int` or `unsigned int` is the low 32 bits) and hands them to its
//! family's handler, with what the legacy form implies (`AT_FDCWD`, a
//! fixed flag).
//!
//! Owns only that decoding. Does not own: which calls trap and reach an
//! entry point (the policy table, [`crate::policy::entry`], names the
//! entry point of each serviced number), or the work (the families).

use super::net::{accept, adopt, dgram, mmsg, msg, names, note, socket};
use super::{
    affinity, attr, clock, lseek, mknod, namei, notify, numa, open, refused, sync, sysinfo,
    task_stat, xattr, Context, Res,
};
use crate::guest::{Guest, SyscallArgs};

const CWD: i32 = libc::AT_FDCWD;

// ---- Files: open. -----------------------------------------------------------

pub(crate) fn open(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    open::openat(ctx, g, CWD, c.args[0], c.uint(1), c.uint(2))
}

pub(crate) fn openat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    open::openat(ctx, g, c.int(0), c.args[1], c.uint(2), c.uint(3))
}

pub(crate) fn openat2(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    open::openat2(ctx, g, c.int(0), a[1], a[2], a[3])
}

// ---- Files: device nodes. ---------------------------------------------------

pub(crate) fn mknod(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    mknod::mknodat(ctx, g, CWD, c.args[0], c.uint(1), c.uint(2))
}

pub(crate) fn mknodat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    mknod::mknodat(ctx, g, c.int(0), c.args[1], c.uint(2), c.uint(3))
}

// ---- Files: attributes. -----------------------------------------------------

pub(crate) fn chmod(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchmodat(ctx, g, CWD, c.args[0], c.uint(1), 0)
}

pub(crate) fn fchmod(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchmod(ctx, g, c.int(0), c.uint(1))
}

pub(crate) fn fchmodat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchmodat(ctx, g, c.int(0), c.args[1], c.uint(2), 0)
}

pub(crate) fn fchmodat2(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchmodat(ctx, g, c.int(0), c.args[1], c.uint(2), c.int(3))
}

pub(crate) fn chown(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchownat(ctx, g, CWD, c.args[0], c.uint(1), c.uint(2), 0)
}

pub(crate) fn lchown(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let nofollow = libc::AT_SYMLINK_NOFOLLOW;
    attr::fchownat(ctx, g, CWD, c.args[0], c.uint(1), c.uint(2), nofollow)
}

pub(crate) fn fchownat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    attr::fchownat(ctx, g, c.int(0), c.args[1], c.uint(2), c.uint(3), c.int(4))
}

// ---- Files: extended attributes. ----------------------------------------------

pub(crate) fn setxattr(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    xattr::setxattr(ctx, g, [a[0], a[1], a[2], a[3]], c.int(4), true)
}

pub(crate) fn lsetxattr(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    xattr::setxattr(ctx, g, [a[0], a[1], a[2], a[3]], c.int(4), false)
}

pub(crate) fn fsetxattr(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    xattr::fsetxattr(ctx, g, c.int(0), [a[1], a[2], a[3]], c.int(4))
}

// ---- Files: names in directories. ---------------------------------------------

pub(crate) fn rmdir(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    namei::unlinkat(ctx, g, CWD, c.args[0], libc::AT_REMOVEDIR)
}

pub(crate) fn unlinkat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    namei::unlinkat(ctx, g, c.int(0), c.args[1], c.int(2))
}

pub(crate) fn rename(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    namei::renameat2(ctx, g, [CWD, CWD], [a[0], a[1]], 0)
}

pub(crate) fn renameat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    namei::renameat2(ctx, g, [c.int(0), c.int(2)], [a[1], a[3]], 0)
}

pub(crate) fn renameat2(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    namei::renameat2(ctx, g, [c.int(0), c.int(2)], [a[1], a[3]], c.uint(4))
}

pub(crate) fn link(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    namei::linkat(ctx, g, [CWD, CWD], [a[0], a[1]], 0)
}

pub(crate) fn linkat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    namei::linkat(ctx, g, [c.int(0), c.int(2)], [a[1], a[3]], c.int(4))
}

pub(crate) fn symlink(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    namei::symlinkat(ctx, g, c.args[0], CWD, c.args[1])
}

pub(crate) fn symlinkat(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    namei::symlinkat(ctx, g, c.args[0], c.int(1), c.args[2])
}

pub(crate) fn inotify_add_watch(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    notify::inotify_add_watch(ctx, g, c.int(0), c.args[1], c.uint(2))
}

// ---- Descriptors, processes, the machine. -------------------------------------

pub(crate) fn lseek(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    lseek::lseek(ctx, g, c.int(0), c.args[1], c.uint(2))
}

pub(crate) fn sched_getaffinity(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    affinity::sched_getaffinity(ctx, g, c.int(0), c.uint(1), c.args[2])
}

pub(crate) fn sysinfo(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    sysinfo::sysinfo(ctx, g, c.args[0])
}

pub(crate) fn ioctl(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    refused::ioctl(g, c.int(0), c.uint(1))
}

pub(crate) fn sync(ctx: &Context, g: &dyn Guest, _c: &SyscallArgs) -> Res {
    sync::sync(ctx, g)
}

// ---- Memory: NUMA policy and locking. ------------------------------------------

pub(crate) fn get_mempolicy(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    numa::get_mempolicy(g, [a[0], a[1], a[2]], a[3], a[4])
}

pub(crate) fn set_mempolicy(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    numa::set_mempolicy(g, c.uint(0), c.args[1], c.args[2])
}

pub(crate) fn mbind(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    numa::mbind(g, a[0], a[1], c.uint(2), [a[3], a[4]], c.uint(5))
}

pub(crate) fn munlock(ctx: &Context, g: &dyn Guest, _c: &SyscallArgs) -> Res {
    numa::munlock(ctx, g)
}

// ---- Clocks and scheduler constants. ---------------------------------------------

pub(crate) fn time(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    clock::time(g, c.args[0])
}

pub(crate) fn gettimeofday(_ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    clock::gettimeofday(g, c.args[0], c.args[1])
}

pub(crate) fn clock_getres(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    clock::clock_getres(ctx, g, c.int(0), c.args[1])
}

pub(crate) fn sched_get_priority_max(_ctx: &Context, _g: &dyn Guest, c: &SyscallArgs) -> Res {
    clock::sched_get_priority_max(c.int(0))
}

pub(crate) fn sched_get_priority_min(_ctx: &Context, _g: &dyn Guest, c: &SyscallArgs) -> Res {
    clock::sched_get_priority_min(c.int(0))
}

// ---- Sockets (`net/`). ----------------------------------------------------------

pub(crate) fn socket(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let args = (c.int(0), c.int(1), c.int(2));
    socket::socket(ctx, g, args, adopt::requested(c))
}

pub(crate) fn bind(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    socket::bind(ctx, g, c.int(0), c.args[1], c.uint(2))
}

pub(crate) fn connect(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let answer_local = c.args[4] == crate::policy::NODELAY_MARK;
    socket::connect(ctx, g, c.int(0), (c.args[1], c.uint(2)), answer_local)
}

pub(crate) fn listen(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    socket::listen(ctx, g, c.int(0))
}

pub(crate) fn accept(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let note = note::requested(c);
    accept::accept4(ctx, g, c.int(0), (c.args[1], c.args[2]), 0, note)
}

pub(crate) fn accept4(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let note = note::requested(c);
    accept::accept4(ctx, g, c.int(0), (c.args[1], c.args[2]), c.int(3), note)
}

pub(crate) fn getsockname(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    names::name(ctx, g, c.int(0), c.args[1], c.args[2], false)
}

pub(crate) fn getpeername(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    names::name(ctx, g, c.int(0), c.args[1], c.args[2], true)
}

pub(crate) fn getsockopt(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    names::getsockopt(ctx, g, c.int(0), c.int(1), c.int(2), a[3], a[4])
}

pub(crate) fn setsockopt(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    names::setsockopt(ctx, g, c.int(0), c.int(1), c.int(2), a[3], c.uint(4))
}

pub(crate) fn sendto(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    dgram::sendto(ctx, g, c.int(0), a[1], a[2], c.int(3), a[4], c.uint(5))
}

pub(crate) fn recvfrom(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    let a = &c.args;
    dgram::recvfrom(ctx, g, c.int(0), a[1], a[2], c.int(3), a[4], a[5])
}

pub(crate) fn sendmsg(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    msg::sendmsg(ctx, g, c.int(0), c.args[1], c.int(2))
}

pub(crate) fn recvmsg(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    msg::recvmsg(ctx, g, c.int(0), c.args[1], c.int(2))
}

pub(crate) fn sendmmsg(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    mmsg::sendmmsg(ctx, g, c.int(0), c.args[1], c.uint(2), c.int(3))
}

pub(crate) fn recvmmsg(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    mmsg::recvmmsg(ctx, g, c.int(0), c.args[1], c.uint(2), c.int(3), c.args[4])
}

// ---- A task's stat in the view's procfs. ---------------------------------------

pub(crate) fn sched_getscheduler(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    task_stat::sched_getscheduler(ctx, g, c.int(0))
}

pub(crate) fn sched_getparam(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    task_stat::sched_getparam(ctx, g, c.int(0), c.args[1])
}

pub(crate) fn getpgid(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    task_stat::getpgid(ctx, g, c.int(0))
}

pub(crate) fn getsid(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    task_stat::getsid(ctx, g, c.int(0))
}

pub(crate) fn times(ctx: &Context, g: &dyn Guest, c: &SyscallArgs) -> Res {
    task_stat::times(ctx, g, c.args[0])
}
