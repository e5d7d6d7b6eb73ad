//! Decoding a trapped call for `--trace`, strace-style:
//! `openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC)`.
//!
//! Owns: the argument signatures of the calls the policy traps (serviced
//! and denied ones alike), and printing each argument kind (paths read
//! from guest memory, flag sets, modes, descriptors; the socket calls'
//! kinds are in `net.rs`, the process and namespace calls' in
//! `process.rs`). Does not own the result, the timing or where
//! the line goes (the supervisor's trap).
//!
//! Decoding reads guest memory once more than the handler does; that is
//! the price of tracing, paid only when `--trace` is on.

use std::fmt::Write as _;

use sysno::Sysno;

use crate::guest::Guest;
use crate::policy::{name, sysno};

mod net;
mod process;

/// How one argument is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    /// A descriptor, or AT_FDCWD.
    Dirfd,
    Fd,
    /// A NUL-terminated path in guest memory.
    Path,
    OpenFlags,
    AtFlags,
    /// unlinkat's flags (AT_REMOVEDIR shares a bit with AT_EACCESS).
    UnlinkFlags,
    /// lseek's SEEK_SET, SEEK_CUR, SEEK_END...
    Whence,
    /// Permission bits, in octal.
    Mode,
    Int,
    /// A pointer or a flag word shown as hex.
    Hex,
    /// `socket`'s domain, type (with its flags) and protocol.
    Domain,
    SockType,
    Protocol,
    /// `accept4`'s flags.
    SockFlags,
    /// A socket address in guest memory, its length the next argument.
    SockAddrLen,
    /// An option's level, and its name (at the previous argument's level).
    SockLevel,
    SockOpt,
    /// An option's value in guest memory, its length the next argument.
    OptValLen,
    /// `send`/`recv` flags.
    MsgFlags,
    /// `clone`'s, `unshare`'s and `setns`'s namespace and sharing flags.
    CloneFlags,
    /// `ptrace`'s request, `bpf`'s command.
    PtraceRequest,
    BpfCommand,
}

use Arg::*;

/// The arguments of `call`, as far as they are known: every call the
/// policy may service, and the denied calls that name a path or whose
/// flags say what was refused (namespaces, tracing, bpf, io_uring...).
/// A call that always passes the filter is never traced and has none
/// (the unit tests check both against the policy table).
fn signature(call: Sysno) -> Option<&'static [Arg]> {
    use Sysno as S;
    Some(match call {
        S::open => &[Path, OpenFlags, Mode],
        S::openat => &[Dirfd, Path, OpenFlags, Mode],
        S::openat2 => &[Dirfd, Path, Hex, Int],
        S::chmod => &[Path, Mode],
        S::rename | S::link | S::symlink => &[Path, Path],
        S::renameat => &[Dirfd, Path, Dirfd, Path],
        S::renameat2 => &[Dirfd, Path, Dirfd, Path, Hex],
        S::mknod => &[Path, Mode, Hex],
        S::mknodat => &[Dirfd, Path, Mode, Hex],
        S::fchmod => &[Fd, Mode],
        S::fchmodat => &[Dirfd, Path, Mode],
        S::fchmodat2 => &[Dirfd, Path, Mode, AtFlags],
        S::rmdir => &[Path],
        S::unlinkat => &[Dirfd, Path, UnlinkFlags],
        S::linkat => &[Dirfd, Path, Dirfd, Path, AtFlags],
        S::symlinkat => &[Path, Dirfd, Path],
        S::chown | S::lchown => &[Path, Int, Int],
        S::fchownat => &[Dirfd, Path, Int, Int, AtFlags],
        S::inotify_add_watch => &[Fd, Path, Hex],
        // The attribute's name prints as a path does: a guest string.
        S::setxattr | S::lsetxattr => &[Path, Path, Hex, Int, Hex],
        S::fsetxattr => &[Fd, Path, Hex, Int, Hex],
        S::ioctl => &[Fd, Hex, Hex],
        S::lseek => &[Fd, Int, Whence],
        S::sched_getaffinity => &[Int, Int, Hex],
        S::sysinfo | S::time => &[Hex],
        S::sync | S::munlockall => &[],
        S::munlock => &[Hex, Int],
        S::gettimeofday => &[Hex, Hex],
        S::clock_getres => &[Int, Hex],
        S::sched_get_priority_max | S::sched_get_priority_min => &[Int],
        S::sched_getscheduler | S::getpgid | S::getsid => &[Int],
        S::sched_getparam => &[Int, Hex],
        S::times => &[Hex],
        S::get_mempolicy => &[Hex, Hex, Int, Hex, Hex],
        S::set_mempolicy => &[Int, Hex, Int],
        S::mbind => &[Hex, Int, Int, Hex, Int, Hex],
        S::mount => &[Path, Path, Path, Hex, Hex],
        S::umount2 => &[Path, Hex],
        S::chroot | S::acct | S::swapoff => &[Path],
        S::pivot_root => &[Path, Path],
        S::socket => &[Domain, SockType, Protocol],
        S::bind | S::connect => &[Fd, SockAddrLen, Int],
        S::listen => &[Fd, Int],
        S::accept | S::getsockname | S::getpeername => &[Fd, Hex, Hex],
        S::accept4 => &[Fd, Hex, Hex, SockFlags],
        S::setsockopt => &[Fd, SockLevel, SockOpt, OptValLen, Int],
        S::getsockopt => &[Fd, SockLevel, SockOpt, Hex, Hex],
        S::sendto => &[Fd, Hex, Int, MsgFlags, SockAddrLen, Int],
        S::recvfrom => &[Fd, Hex, Int, MsgFlags, Hex, Hex],
        S::sendmsg | S::recvmsg => &[Fd, Hex, MsgFlags],
        S::recvmmsg => &[Fd, Hex, Int, MsgFlags, Hex],
        S::sendmmsg => &[Fd, Hex, Int, MsgFlags],
        S::clone => &[CloneFlags, Hex, Hex, Hex, Hex],
        S::unshare => &[CloneFlags],
        S::setns => &[Fd, CloneFlags],
        S::ptrace => &[PtraceRequest, Int, Hex, Hex],
        S::bpf => &[BpfCommand, Hex, Int],
        S::io_uring_setup => &[Int, Hex],
        S::userfaultfd => &[Hex],
        S::perf_event_open => &[Hex, Int, Int, Fd, Hex],
        S::process_vm_readv | S::process_vm_writev => &[Int, Hex, Int, Hex, Int, Hex],
        S::pidfd_getfd => &[Fd, Fd, Hex],
        S::open_tree | S::fspick => &[Dirfd, Path, Hex],
        S::move_mount => &[Dirfd, Path, Dirfd, Path, Hex],
        S::name_to_handle_at => &[Dirfd, Path, Hex, Hex, AtFlags],
        S::open_by_handle_at => &[Fd, Hex, OpenFlags],
        _ => return None,
    })
}

/// `name(arg, ...)` for call number `nr` with raw `args`.
pub fn describe(nr: i64, args: &[u64; 6], guest: &dyn Guest) -> String {
    let mut line = name(nr);
    line.push('(');
    let kinds: &[Arg] = match sysno(nr).and_then(signature) {
        Some(k) => k,
        // Unknown shape: every register, as hex.
        None => &[Hex; 6],
    };
    for (i, kind) in kinds.iter().enumerate().take(args.len()) {
        if i > 0 {
            line.push_str(", ");
        }
        arg(&mut line, *kind, args, i, guest);
    }
    line.push(')');
    line
}

/// Argument `i` of `args`, shown as `kind` (some kinds read a
/// neighbour: an address's length, an option's level).
fn arg(out: &mut String, kind: Arg, args: &[u64; 6], i: usize, guest: &dyn Guest) {
    let raw = args[i];
    let next = args.get(i + 1).copied().unwrap_or(0);
    let previous = i.checked_sub(1).map_or(0, |p| args[p]);
    match kind {
        Dirfd if raw as i32 == libc::AT_FDCWD => out.push_str("AT_FDCWD"),
        Dirfd | Fd | Int => {
            let _ = write!(out, "{}", raw as i32);
        }
        Path => path(out, raw, guest),
        OpenFlags => out.push_str(&open_flags(raw as u32)),
        AtFlags => out.push_str(&flag_names(raw as u32, AT_FLAGS, "0")),
        UnlinkFlags => out.push_str(&flag_names(raw as u32, &[(0x200, "AT_REMOVEDIR")], "0")),
        Whence => match WHENCE.get(raw as usize) {
            Some(name) => out.push_str(name),
            None => {
                let _ = write!(out, "{}", raw as i32);
            }
        },
        Mode => {
            let _ = write!(out, "0{:o}", raw as u32);
        }
        Hex => {
            let _ = write!(out, "{raw:#x}");
        }
        Domain => out.push_str(&net::domain(raw)),
        SockType => out.push_str(&net::sock_type(raw)),
        Protocol => out.push_str(&net::protocol(raw)),
        SockFlags => out.push_str(&net::sock_flags(raw)),
        SockAddrLen => net::sockaddr(out, raw, next, guest),
        SockLevel => out.push_str(&net::level(raw)),
        SockOpt => out.push_str(&net::option(previous, raw)),
        OptValLen => net::option_value(out, raw, next, guest),
        MsgFlags => out.push_str(&net::msg_flags(raw)),
        CloneFlags => out.push_str(&process::clone_flags(raw)),
        PtraceRequest => out.push_str(&process::ptrace_request(raw)),
        BpfCommand => out.push_str(&process::bpf_command(raw)),
    }
}

/// Longest path shown; longer ones end in `...`.
const PATH_SHOWN: usize = 256;

fn path(out: &mut String, addr: u64, guest: &dyn Guest) {
    if addr == 0 {
        out.push_str("NULL");
        return;
    }
    let Ok(bytes) = guest.read_path(addr) else {
        let _ = write!(out, "{addr:#x}");
        return;
    };
    quoted(out, &bytes);
}

/// `bytes` in double quotes, escaped as strace does; at most
/// [`PATH_SHOWN`] of them, then `...`.
fn quoted(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes.iter().take(PATH_SHOWN) {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    if bytes.len() > PATH_SHOWN {
        out.push_str("...");
    }
}

const AT_FLAGS: &[(u32, &str)] = &[
    (0x100, "AT_SYMLINK_NOFOLLOW"),
    (0x400, "AT_SYMLINK_FOLLOW"),
    (0x800, "AT_NO_AUTOMOUNT"),
    (0x1000, "AT_EMPTY_PATH"),
];

/// lseek's `whence` values, by number.
const WHENCE: &[&str] = &["SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE"];

/// Whole sets first where one includes another flag's bit (O_SYNC,
/// O_TMPFILE): `flag_names` takes a set only when all its bits are there.
const OPEN_FLAGS: &[(u32, &str)] = &[
    (libc::O_CREAT as u32, "O_CREAT"),
    (libc::O_EXCL as u32, "O_EXCL"),
    (libc::O_NOCTTY as u32, "O_NOCTTY"),
    (libc::O_TRUNC as u32, "O_TRUNC"),
    (libc::O_APPEND as u32, "O_APPEND"),
    (libc::O_NONBLOCK as u32, "O_NONBLOCK"),
    (libc::O_SYNC as u32, "O_SYNC"),
    (libc::O_DSYNC as u32, "O_DSYNC"),
    (libc::O_ASYNC as u32, "O_ASYNC"),
    (libc::O_DIRECT as u32, "O_DIRECT"),
    // The kernel's value: libc's x86_64 O_LARGEFILE is 0.
    (0o100000, "O_LARGEFILE"),
    (libc::O_TMPFILE as u32, "O_TMPFILE"),
    (libc::O_DIRECTORY as u32, "O_DIRECTORY"),
    (libc::O_NOFOLLOW as u32, "O_NOFOLLOW"),
    (libc::O_NOATIME as u32, "O_NOATIME"),
    (libc::O_CLOEXEC as u32, "O_CLOEXEC"),
    (libc::O_PATH as u32, "O_PATH"),
];

fn open_flags(flags: u32) -> String {
    let access = match flags & libc::O_ACCMODE as u32 {
        0 => "O_RDONLY",
        1 => "O_WRONLY",
        2 => "O_RDWR",
        _ => "O_ACCMODE",
    };
    match flags & !(libc::O_ACCMODE as u32) {
        0 => access.to_string(),
        rest => format!("{access}|{}", flag_names(rest, OPEN_FLAGS, "")),
    }
}

fn flag_names(flags: u32, names: &[(u32, &str)], zero: &str) -> String {
    if flags == 0 {
        return zero.to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut rest = flags;
    for &(bits, label) in names {
        if rest & bits == bits {
            parts.push(label.to_string());
            rest &= !bits;
        }
    }
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{self, Fallback, Rule};

    #[test]
    fn open_flags_read_like_strace() {
        let f = (libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC) as u32;
        assert_eq!(open_flags(f), "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC");
        assert_eq!(open_flags(libc::O_SYNC as u32), "O_RDONLY|O_SYNC");
        assert_eq!(open_flags(libc::O_DSYNC as u32), "O_RDONLY|O_DSYNC");
        assert_eq!(open_flags(0x4000_0000), "O_RDONLY|0x40000000");
    }

    #[test]
    fn flag_sets_name_every_bit() {
        assert_eq!(flag_names(0, AT_FLAGS, "0"), "0");
        assert_eq!(
            flag_names(0x1400, AT_FLAGS, "0"),
            "AT_SYMLINK_FOLLOW|AT_EMPTY_PATH"
        );
        assert_eq!(
            flag_names(0x1100, AT_FLAGS, "0"),
            "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH"
        );
        assert_eq!(flag_names(0x8, AT_FLAGS, "0"), "0x8");
    }

    /// Whether the filter may hand `rule`'s call to the supervisor, and
    /// whether it is then serviced (not denied).
    fn traps(rule: Rule) -> (bool, bool) {
        match rule {
            Rule::Pass | Rule::Kill | Rule::Refuse(_) => (false, false),
            Rule::Service
            | Rule::ServiceIf(_)
            | Rule::ServiceIfEither(..)
            | Rule::PassIf(_, Fallback::Service) => (true, true),
            Rule::Deny(_) | Rule::PassIf(_, Fallback::Deny(_)) => (true, false),
        }
    }

    #[test]
    fn every_serviced_call_is_decoded() {
        let mut missing = Vec::new();
        for (call, rule) in policy::table() {
            let (_, serviced) = traps(rule);
            if serviced && signature(call).is_none() {
                missing.push(call.name());
            }
        }
        assert!(
            missing.is_empty(),
            "serviced without a signature: {missing:?}"
        );
    }

    #[test]
    fn no_signature_names_a_call_that_never_traps() {
        let never: Vec<_> = policy::table()
            .filter(|&(call, rule)| signature(call).is_some() && !traps(rule).0)
            .map(|(call, _)| call.name())
            .collect();
        assert!(
            never.is_empty(),
            "signatures of calls that never trap: {never:?}"
        );
    }
}
