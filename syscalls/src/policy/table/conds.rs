//! The argument checks the table's rows name: each a list of [`Cond`]s
//! the filter tests in BPF before a row's class applies (clone without
//! namespace flags, ioctl requests and fcntl, prctl, madvise and
//! personality operations from the allowlists, local sockets, opens that
//! ask for a plain read, device nodes, rewinds...), with the constants
//! they are made of (the namespace clone flags, the open flags never
//! served, the fast-read mark).
//!
//! Owns what each check tests and why. Does not own which rows use them
//! (`table.rs`), the allowlists' contents (`allow.rs`), or how a check
//! is compiled (`bpf.rs`).

use crate::policy::{allow, Cond, Op};

/// Clone flags that would create namespaces (the guest gets none).
pub const NS_CLONE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// The ioctl requests that reach the kernel ([`allow::IOCTL`] says why
/// each). Every other request is refused (`handlers/refused.rs`): among
/// them the file-system requests (FS_IOC_GETFLAGS/SETFLAGS, FIEMAP,
/// FICLONE, FIDEDUPERANGE), which programs treat as "not supported here".
const IOCTL_ALLOWED: &[u32] = allow::IOCTL;

/// Sockets the guest's kernel makes itself: local ones of the usual
/// types. Internet sockets are the netstack's (serviced); the rest is
/// denied by the socket handler.
const UNIX_SOCKET_TYPES: &[u32] = &[
    libc::SOCK_STREAM as u32,
    libc::SOCK_DGRAM as u32,
    libc::SOCK_SEQPACKET as u32,
];

pub(super) const CLONE_WITHOUT_NS: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskClear(NS_CLONE_FLAGS),
}];
pub(super) const IOCTL_SAFE: &[Cond] = &[Cond {
    arg: 1,
    op: Op::MaskedIn(u32::MAX, IOCTL_ALLOWED),
}];
/// fcntl's command (arg 1) is one [`allow::FCNTL`] names.
pub(super) const FCNTL_KNOWN: &[Cond] = &[Cond {
    arg: 1,
    op: Op::MaskedIn(u32::MAX, allow::FCNTL),
}];
/// prctl's option (arg 0) is one [`allow::PRCTL`] names.
pub(super) const PRCTL_KNOWN: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskedIn(u32::MAX, allow::PRCTL),
}];
/// madvise's advice (arg 2) is one [`allow::MADVISE`] names.
pub(super) const MADVISE_KNOWN: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskedIn(u32::MAX, allow::MADVISE),
}];
/// personality's persona (arg 0) is one [`allow::PERSONALITY`] names.
pub(super) const PERSONALITY_KNOWN: &[Cond] = &[Cond {
    arg: 0,
    op: Op::MaskedIn(u32::MAX, allow::PERSONALITY),
}];
pub(super) const UNIX_SOCKET: &[Cond] = &[
    Cond {
        arg: 0,
        op: Op::MaskedIn(u32::MAX, &[libc::AF_UNIX as u32]),
    },
    Cond {
        arg: 1,
        op: Op::MaskedIn(0xf, UNIX_SOCKET_TYPES),
    },
];
/// sendto/recvfrom without an address (send, recv).
pub(super) const NULL_ARG4: &[Cond] = &[Cond {
    arg: 4,
    op: Op::IsNull,
}];
/// sendto without an address (send) of a non-empty buffer: an empty
/// send on a TCP socket whose peer closed is serviced (`dgram.rs`).
pub(super) const NULL_ARG4_DATA_ARG2: &[Cond] = &[
    Cond {
        arg: 4,
        op: Op::IsNull,
    },
    Cond {
        arg: 2,
        op: Op::NotIn(&[0]),
    },
];
/// Open flags of which any one means the open can never be answered
/// with a file the sandbox serves (only plain reads of regular /proc
/// files are, `procfs/served.rs`): `O_PATH` (nothing to read, and
/// ADDFD cannot install it), write access (`O_WRONLY`, `O_RDWR` or the
/// ioctl-only mode 3) and `O_DIRECTORY` (no served file is a directory).
/// Such an open is the guest's own, with its own credentials; only the
/// fence may keep the kernel from doing it ([`OPEN_READS_UNMARKED_ARG2`]).
pub const OPEN_NEVER_SERVED: u32 = (libc::O_PATH | libc::O_ACCMODE | libc::O_DIRECTORY) as u32;
/// open's flags (arg 1) ask for a plain read, or for reading and
/// writing: serviced.
pub(super) const OPEN_READS_ARG1: &[Cond] = &[Cond {
    arg: 1,
    op: Op::MaskedIn(OPEN_NEVER_SERVED, &[0, libc::O_RDWR as u32]),
}];
/// openat's flags (arg 2) ask for a plain read, or for reading and
/// writing: serviced.
pub(super) const OPEN_READS_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskedIn(OPEN_NEVER_SERVED, &[0, libc::O_RDWR as u32]),
}];
/// The mark of a fast read: openat's fifth register (r8), which the
/// kernel ignores, holds this value when the guest's preload
/// (`sandbox/guest/fast_reads.c`) or static loader makes the call. Any
/// guest code may set it; what passes is what a guest racing the open
/// handler's lookup reaches anyway, and the guest's Landlock domain keeps
/// such an open off the kernel's procfs (docs/fast-reads.md).
pub const FAST_READ_MARK: u64 = 0xa5c3_9e4f_17b2_d860;
/// openat's flags (arg 2) ask for a plain read, or for reading and
/// writing a file (`O_RDWR`, no `O_PATH`, no `O_DIRECTORY`), and the call
/// is not marked as a fast read: serviced. A plain read may be answered
/// with a served /proc file; an `O_RDWR` open is the one open besides it
/// that the kernel checks against the guest's Landlock domain
/// (`LANDLOCK_ACCESS_FS_READ_FILE`), which grants nothing directly in the
/// root or beneath a top-level name made since the start
/// (`procfs/fence.rs`), where the handler serves it as the caller;
/// everywhere else it CONTINUEs. Marked, either passes: the preload and
/// the loader make the call again unmarked where the kernel refused it
/// (EACCES) or, for a plain read, answered with a file of procfs or the
/// covers. (`O_RDWR | O_DIRECTORY` never opens a file: ENOTDIR or EISDIR.)
pub(super) const OPEN_READS_UNMARKED_ARG2: &[Cond] = &[
    Cond {
        arg: 2,
        op: Op::MaskedIn(OPEN_NEVER_SERVED, &[0, libc::O_RDWR as u32]),
    },
    Cond {
        arg: 4,
        op: Op::Not64(FAST_READ_MARK),
    },
];
/// openat2 is not marked as a fast read (in r8, which the kernel ignores
/// for its four arguments): serviced. Its flags are in memory, out of the
/// filter's sight, but a marked one gives nothing a marked openat does
/// not: its flags are openat's (the fenced filter passes every openat
/// but an unmarked plain read or read-write open and an `O_RDWR | O_EXCL`
/// one, which is trapped only so that the mark's EACCES retry stays
/// right), and its `RESOLVE_*` flags only narrow the resolution. The
/// static loader makes a plain read so, with `RESOLVE_NO_SYMLINKS`,
/// where the path's spelling cannot reach /proc (docs/fast-reads.md).
pub(super) const OPENAT2_UNMARKED: &[Cond] = &[Cond {
    arg: 4,
    op: Op::Not64(FAST_READ_MARK),
}];
/// openat's flags (arg 2) ask for reading and writing a file with
/// `O_EXCL`, marked or not: serviced. The mark buys no exclusive open:
/// the kernel makes an `O_CREAT | O_EXCL` file before the Landlock
/// domain refuses to open it, and an unmarked retry would then fail with
/// EEXIST.
pub(super) const OPEN_READ_WRITE_EXCL_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskedIn(
        OPEN_NEVER_SERVED | libc::O_EXCL as u32,
        &[(libc::O_RDWR | libc::O_EXCL) as u32],
    ),
}];
/// A mode whose type is a character or block device: the only file types
/// with `S_IFCHR` (0o020000) set and `S_IFREG` (0o100000) and `S_IFIFO`
/// (0o010000) clear (a symlink's type has `S_IFREG`, no valid type but
/// these two is left; the bad types pass, and the kernel says EINVAL).
const DEVICE_MODE: Op = Op::MaskedIn(0o130000, &[libc::S_IFCHR]);
/// `mknod(path, mode, dev)` of a device: serviced.
pub(super) const DEVICE_ARG1: &[Cond] = &[Cond {
    arg: 1,
    op: DEVICE_MODE,
}];
/// `mknodat(dirfd, path, mode, dev)` of a device: serviced.
pub(super) const DEVICE_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: DEVICE_MODE,
}];
/// `unlinkat(dirfd, path, AT_REMOVEDIR)`: rmdir, serviced.
pub(super) const REMOVEDIR_ARG2: &[Cond] = &[Cond {
    arg: 2,
    op: Op::MaskSet(libc::AT_REMOVEDIR as u32),
}];

/// The mark of the preload's TCP_NODELAY (`sandbox/guest/socket_names.c`):
/// setsockopt's and getsockopt's sixth register (r9), which the kernel
/// ignores for both; and connect's fifth (r8), where it asks whether the
/// connection is sandbox-local (`handlers/net/socket.rs`, serviced either
/// way).
pub const NODELAY_MARK: u64 = 0x6e6f_6465_6c61_795f;
/// `setsockopt`/`getsockopt(fd, SOL_SOCKET, SO_WIFI_STATUS, ..)` marked
/// with [`NODELAY_MARK`]: passes. The flag, which does nothing to an
/// `AF_UNIX` socket, carries a sandbox-local connection's TCP_NODELAY on
/// its host socket (`netstack/src/nodelay.rs`); the guest's own unmarked
/// SO_WIFI_STATUS is served from the table on a netstack socket. Any
/// guest may mark one: on its own sockets the call would CONTINUE anyway,
/// on a netstack socket it sets or reads only what that socket's
/// TCP_NODELAY answers.
pub(super) const NODELAY_CARRIER: &[Cond] = &[
    Cond {
        arg: 1,
        op: Op::MaskedIn(u32::MAX, &[libc::SOL_SOCKET as u32]),
    },
    Cond {
        arg: 2,
        op: Op::MaskedIn(u32::MAX, &[libc::SO_WIFI_STATUS as u32]),
    },
    Cond {
        arg: 5,
        op: Op::Is64(NODELAY_MARK),
    },
];

/// `lseek(fd, 0, SEEK_SET)`: a rewind, which re-serves a synthetic /proc
/// file (`handlers/lseek.rs`), unless marked with [`FAST_READ_MARK`] in
/// its fourth register (r10, which the kernel ignores for lseek's three
/// arguments): the preload (`sandbox/guest/rewind_mark.c`) marks the
/// rewind of a file that a directory links (every served file is a memfd,
/// which none does). The offset is a 64-bit `off_t` (IsNull tests the
/// whole register); `whence` an `unsigned int`. Any guest may mark one:
/// a marked rewind is the kernel's seek, which an unmarked one of
/// anything but a served file is too (CONTINUE); of a served file, it
/// keeps the text it had, which only that guest reads.
pub(super) const REWIND: &[Cond] = &[
    Cond {
        arg: 1,
        op: Op::IsNull,
    },
    Cond {
        arg: 2,
        op: Op::MaskedIn(u32::MAX, &[libc::SEEK_SET as u32]),
    },
    Cond {
        arg: 3,
        op: Op::Not64(FAST_READ_MARK),
    },
];
