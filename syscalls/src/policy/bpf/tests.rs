//! Unit tests of the BPF generator (`bpf.rs`): the compiled filter run on
//! chosen syscall records.

use super::*;

fn run(nr: u32, args: [u64; 6]) -> u32 {
    evaluate(&compile(), AUDIT_ARCH_X86_64, nr, args)
}

#[test]
fn every_number_gets_its_rule() {
    let prog = compile();
    for s in Sysno::iter() {
        let got = evaluate(&prog, AUDIT_ARCH_X86_64, s.id() as u32, [0; 6]);
        let want = match rule_for(s) {
            Rule::Pass => SECCOMP_RET_ALLOW,
            Rule::Service | Rule::Deny(_) => SECCOMP_RET_USER_NOTIF,
            Rule::Refuse(e) => errno_action(e),
            Rule::Kill => SECCOMP_RET_KILL_PROCESS,
            Rule::PassIf(..) | Rule::ServiceIf(..) | Rule::ServiceIfEither(..) => continue,
        };
        assert_eq!(got, want, "{}", s.name());
    }
}

#[test]
fn foreign_arch_and_x32_are_killed() {
    let prog = compile();
    assert_eq!(
        evaluate(&prog, 0x4000_0003, 0, [0; 6]),
        SECCOMP_RET_KILL_PROCESS
    );
    assert_eq!(run(0x4000_0000, [0; 6]), SECCOMP_RET_KILL_PROCESS);
    assert_eq!(run(0x4000_0001, [0; 6]), SECCOMP_RET_KILL_PROCESS);
}

#[test]
fn unknown_numbers_are_trapped_for_denial() {
    assert_eq!(run(1000, [0; 6]), SECCOMP_RET_USER_NOTIF);
    assert_eq!(run(0x3fff_ffff, [0; 6]), SECCOMP_RET_USER_NOTIF);
}

/// clone3 is answered ENOSYS by both guest filters themselves, whatever
/// its arguments (its flags are in memory, out of BPF's reach): no
/// round trip, so glibc's probe before each thread costs none; clone,
/// its fallback, keeps its flag check.
#[test]
fn clone3_is_answered_enosys_in_the_filter() {
    let clone3 = Sysno::clone3.id() as u32;
    let want = SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    for prog in [compile(), compile_without_fast_reads()] {
        for args in [[0; 6], [0x7fff_0000, 88, 0, 0, 0, 0], [u64::MAX; 6]] {
            assert_eq!(
                evaluate(&prog, AUDIT_ARCH_X86_64, clone3, args),
                want,
                "{args:x?}"
            );
        }
        let clone = Sysno::clone.id() as u32;
        let ns = (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64;
        let got = evaluate(&prog, AUDIT_ARCH_X86_64, clone, [ns, 0, 0, 0, 0, 0]);
        assert_eq!(got, SECCOMP_RET_USER_NOTIF);
    }
}

#[test]
fn only_device_nodes_trap_mknod() {
    let (mknod, mknodat) = (Sysno::mknod.id() as u32, Sysno::mknodat.id() as u32);
    let types = [
        (libc::S_IFCHR, true),
        (libc::S_IFBLK, true),
        (libc::S_IFIFO, false),
        (libc::S_IFSOCK, false),
        (libc::S_IFREG, false),
        (libc::S_IFLNK, false),
        (libc::S_IFDIR, false),
        (0, false),
        (0o150000, false),
        (0o070000, false),
    ];
    for (t, device) in types {
        let want = match device {
            true => SECCOMP_RET_USER_NOTIF,
            false => SECCOMP_RET_ALLOW,
        };
        // Permission bits and high garbage (the mode is 32 bits, then
        // the kernel's umode_t) change nothing.
        for mode in [
            u64::from(t),
            u64::from(t | 0o7777),
            (0xdead << 32) | u64::from(t),
        ] {
            assert_eq!(run(mknod, [0, mode, 0, 0, 0, 0]), want, "mknod {mode:o}");
            let at = [libc::AT_FDCWD as u64, 0, mode, 0, 0, 0];
            assert_eq!(run(mknodat, at), want, "mknodat {mode:o}");
        }
    }
}

#[test]
fn only_rewinds_trap_lseek() {
    let lseek = Sysno::lseek.id() as u32;
    let set = libc::SEEK_SET as u64;
    let cur = libc::SEEK_CUR as u64;
    assert_eq!(run(lseek, [3, 0, set, 0, 0, 0]), SECCOMP_RET_USER_NOTIF);
    assert_eq!(run(lseek, [3, 0, cur, 0, 0, 0]), SECCOMP_RET_ALLOW);
    assert_eq!(run(lseek, [3, 4096, set, 0, 0, 0]), SECCOMP_RET_ALLOW);
    // The offset is 64 bits: an offset of 4 GiB is no rewind.
    assert_eq!(run(lseek, [3, 1 << 32, set, 0, 0, 0]), SECCOMP_RET_ALLOW);
    // whence is 32 bits: high garbage still reads as SEEK_SET.
    assert_eq!(
        run(lseek, [3, 0, (1 << 32) | set, 0, 0, 0]),
        SECCOMP_RET_USER_NOTIF
    );
    // The preload's rewind of a linked file, marked in r10, passes; half
    // a mark, or the mark in another register, does not.
    let mark = crate::policy::FAST_READ_MARK;
    assert_eq!(run(lseek, [3, 0, set, mark, 0, 0]), SECCOMP_RET_ALLOW);
    assert_eq!(
        run(lseek, [3, 0, set, mark & 0xffff_ffff, 0, 0]),
        SECCOMP_RET_USER_NOTIF
    );
    assert_eq!(run(lseek, [3, 0, set, 0, mark, 0]), SECCOMP_RET_USER_NOTIF);
}

#[test]
fn argument_checks() {
    let clone = Sysno::clone.id() as u32;
    assert_eq!(
        run(clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
        SECCOMP_RET_ALLOW
    );
    let ns = (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64;
    assert_eq!(run(clone, [ns, 0, 0, 0, 0, 0]), SECCOMP_RET_USER_NOTIF);

    let ioctl = Sysno::ioctl.id() as u32;
    assert_eq!(run(ioctl, [0, libc::TCGETS, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
    assert_eq!(
        run(ioctl, [0, libc::TIOCSTI, 0, 0, 0, 0]),
        SECCOMP_RET_USER_NOTIF
    );
    // The kernel reads the request as 32 bits: high garbage must not help.
    let sneaky = (1u64 << 32) | libc::TIOCSTI;
    assert_eq!(run(ioctl, [0, sneaky, 0, 0, 0, 0]), SECCOMP_RET_USER_NOTIF);

    let socket = Sysno::socket.id() as u32;
    let inet_stream = [
        libc::AF_INET as u64,
        (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64,
        0,
        0,
        0,
        0,
    ];
    // Internet sockets are the netstack's; local ones pass.
    assert_eq!(run(socket, inet_stream), SECCOMP_RET_USER_NOTIF);
    let unix_stream = [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0];
    assert_eq!(run(socket, unix_stream), SECCOMP_RET_ALLOW);
    // Every accept is served, with an address buffer or without: the
    // connection must enter the netstack's table either way.
    for accept in [Sysno::accept4.id() as u32, Sysno::accept.id() as u32] {
        assert_eq!(run(accept, [3, 0, 0, 0, 0, 0]), SECCOMP_RET_USER_NOTIF);
        assert_eq!(
            run(accept, [3, 0x1000, 0x2000, 0, 0, 0]),
            SECCOMP_RET_USER_NOTIF
        );
    }
    let recvfrom = Sysno::recvfrom.id() as u32;
    assert_eq!(run(recvfrom, [3, 0x1000, 64, 0, 0, 0]), SECCOMP_RET_ALLOW);
    assert_eq!(
        run(recvfrom, [3, 0x1000, 64, 0, 0x2000, 0x3000]),
        SECCOMP_RET_USER_NOTIF
    );
    // Every receive that may report a name is served, whatever its flags
    // (MSG_CMSG_CLOEXEC included): the host socket's name is a unix one.
    // Every sendmsg and sendmmsg is served, whatever its flags.
    let cloexec = libc::MSG_CMSG_CLOEXEC as u64;
    for nr in [Sysno::recvmsg, Sysno::recvmmsg] {
        let nr = nr.id() as u32;
        assert_eq!(run(nr, [3, 0x1000, 0, 0, 0, 0]), SECCOMP_RET_USER_NOTIF);
        assert_eq!(
            run(nr, [3, 0x1000, cloexec, cloexec, 0, 0]),
            SECCOMP_RET_USER_NOTIF
        );
    }
    let sendmsg = Sysno::sendmsg.id() as u32;
    let nosignal = libc::MSG_NOSIGNAL as u64;
    let sendmmsg = Sysno::sendmmsg.id() as u32;
    for nr in [sendmsg, sendmmsg] {
        for args in [[3, 0x1000, nosignal, 0, 0, 0], [3, 0x1000, 0, 0, 0, 0]] {
            assert_eq!(run(nr, args), SECCOMP_RET_USER_NOTIF);
        }
    }
    let raw = [libc::AF_INET as u64, libc::SOCK_RAW as u64, 1, 0, 0, 0];
    assert_eq!(run(socket, raw), SECCOMP_RET_USER_NOTIF);
    let packet = [libc::AF_PACKET as u64, libc::SOCK_DGRAM as u64, 0, 0, 0, 0];
    assert_eq!(run(socket, packet), SECCOMP_RET_USER_NOTIF);

    let fstatat = Sysno::newfstatat.id() as u32;
    let empty = libc::AT_EMPTY_PATH as u64;
    assert_eq!(
        run(fstatat, [3, 0x1000, 0x2000, empty, 0, 0]),
        SECCOMP_RET_ALLOW
    );
    // Path stats pass too (the policy table says why).
    assert_eq!(
        run(fstatat, [3, 0x1000, 0x2000, 0, 0, 0]),
        SECCOMP_RET_ALLOW
    );

    // IsNull tests the whole register: an address with only high bits
    // set is not NULL.
    assert_eq!(
        run(recvfrom, [3, 0x1000, 64, 0, 1 << 32, 0]),
        SECCOMP_RET_USER_NOTIF
    );

    // Times, size and statfs by path pass whatever their arguments.
    for nr in [Sysno::utimensat, Sysno::truncate, Sysno::statfs] {
        let nr = nr.id() as u32;
        assert_eq!(run(nr, [3, 0x1000, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
    }
}

#[test]
fn action_lists() {
    const NOT_INET: &[Cond] = &[Cond {
        arg: 0,
        op: Op::NotIn(&[libc::AF_INET as u32, libc::AF_INET6 as u32]),
    }];
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let prog = compile_actions(
        &[
            (Sysno::read, Action::Ret(SECCOMP_RET_ALLOW)),
            (Sysno::execve, Action::Ret(SECCOMP_RET_KILL_PROCESS)),
            (
                Sysno::socket,
                Action::If(NOT_INET, eperm, SECCOMP_RET_KILL_PROCESS),
            ),
        ],
        eperm,
    );
    let run = |nr: Sysno, a0: u64| {
        evaluate(
            &prog,
            AUDIT_ARCH_X86_64,
            nr.id() as u32,
            [a0, 0, 0, 0, 0, 0],
        )
    };
    assert_eq!(run(Sysno::read, 0), SECCOMP_RET_ALLOW);
    assert_eq!(run(Sysno::write, 0), eperm);
    assert_eq!(run(Sysno::execve, 0), SECCOMP_RET_KILL_PROCESS);
    assert_eq!(run(Sysno::socket, libc::AF_UNIX as u64), eperm);
    assert_eq!(
        run(Sysno::socket, libc::AF_INET6 as u64),
        SECCOMP_RET_KILL_PROCESS
    );
    assert_eq!(evaluate(&prog, AUDIT_ARCH_X86_64, 1000, [0; 6]), eperm);
    assert_eq!(
        evaluate(&prog, AUDIT_ARCH_X86_64, 0x4000_0000, [0; 6]),
        SECCOMP_RET_KILL_PROCESS
    );
    assert_eq!(
        evaluate(&prog, 0x4000_0003, 0, [0; 6]),
        SECCOMP_RET_KILL_PROCESS
    );
}

#[test]
fn filter_is_small() {
    let prog = compile();
    assert!(prog.len() < 4096, "BPF_MAXINSNS exceeded: {}", prog.len());
}

/// A tree too big for 8-bit jumps near its root keeps `ja`s there, and
/// only there: every other jump goes straight to its subtree. Every
/// number still gets its action.
#[test]
fn far_jumps_only_where_needed() {
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let list: Vec<_> = Sysno::iter()
        .filter(|s| s.id() % 2 == 0)
        .map(|s| (s, Action::Ret(SECCOMP_RET_ALLOW)))
        .collect();
    let prog = compile_actions(&list, eperm);
    for s in Sysno::iter() {
        let want = if s.id() % 2 == 0 {
            SECCOMP_RET_ALLOW
        } else {
            eperm
        };
        let got = evaluate(&prog, AUDIT_ARCH_X86_64, s.id() as u32, [0; 6]);
        assert_eq!(got, want, "{}", s.name());
    }
    let leaves = prog.iter().filter(|i| i.code == RET_K).count();
    let far = prog.iter().filter(|i| i.code == JMP_JA).count();
    assert!(leaves > 300, "{leaves}");
    assert!(far > 0 && far < leaves / 8, "{far} ja for {leaves} leaves");
    // The guest's filter's search tree: with a `ja` per tree node it
    // took more than three instructions a range (499 for 141 ranges on
    // 2026-11-30). Measured with one-instruction leaves, so that the
    // argument checks' allowlists (ioctl, fcntl, prctl, madvise) do not
    // count as tree.
    let ranges = ranges();
    let tree = compile_ranges(&ranges, &|b: &mut Builder, _| b.ret(SECCOMP_RET_ALLOW));
    assert!(
        tree.len() < 3 * ranges.len(),
        "{} for {}",
        tree.len(),
        ranges.len()
    );
    // The whole filter stays far below the kernel's BPF_MAXINSNS (4096).
    assert!(compile().len() < 1024, "{}", compile().len());
}

#[test]
fn marked_read_opens_pass_only_in_the_fenced_filter() {
    use crate::policy::FAST_READ_MARK;
    let openat = Sysno::openat.id() as u32;
    let unfenced = compile_without_fast_reads();
    let eval = |prog: &[Insn], args| evaluate(prog, AUDIT_ARCH_X86_64, openat, args);
    let read = libc::O_RDONLY as u64 | libc::O_CLOEXEC as u64;
    let marked = [AT_FDCWD, 0x1000, read, 0, FAST_READ_MARK, 0];
    assert_eq!(run(openat, marked), SECCOMP_RET_ALLOW);
    assert_eq!(eval(&unfenced, marked), SECCOMP_RET_USER_NOTIF);
    // Unmarked, or marked in only one half of the register: trapped.
    for r8 in [
        0,
        FAST_READ_MARK as u32 as u64,
        FAST_READ_MARK & !0xffff_ffff,
        !FAST_READ_MARK,
    ] {
        let args = [AT_FDCWD, 0x1000, read, 0, r8, 0];
        assert_eq!(run(openat, args), SECCOMP_RET_USER_NOTIF, "r8 {r8:#x}");
    }
    // The mark in another register does nothing.
    let elsewhere = [AT_FDCWD, 0x1000, read, FAST_READ_MARK, 0, FAST_READ_MARK];
    assert_eq!(run(openat, elsewhere), SECCOMP_RET_USER_NOTIF);
    // Opens that are never served pass in both, marked or not.
    let write = libc::O_WRONLY as u64;
    for prog in [compile(), unfenced] {
        assert_eq!(
            eval(&prog, [AT_FDCWD, 0x1000, write, 0, 0, 0]),
            SECCOMP_RET_ALLOW
        );
    }
}

#[test]
fn marked_read_write_opens_pass_only_in_the_fenced_filter_and_never_exclusive() {
    use crate::policy::FAST_READ_MARK;
    let openat = Sysno::openat.id() as u32;
    let unfenced = compile_without_fast_reads();
    let eval = |prog: &[Insn], args| evaluate(prog, AUDIT_ARCH_X86_64, openat, args);
    let (rdwr, creat, excl) = (
        libc::O_RDWR as u64,
        libc::O_CREAT as u64,
        libc::O_EXCL as u64,
    );
    for flags in [rdwr, rdwr | creat, rdwr | creat | libc::O_TRUNC as u64] {
        let marked = [AT_FDCWD, 0x1000, flags, 0o644, FAST_READ_MARK, 0];
        assert_eq!(run(openat, marked), SECCOMP_RET_ALLOW, "{flags:#o}");
        assert_eq!(eval(&unfenced, marked), SECCOMP_RET_USER_NOTIF);
        let unmarked = [AT_FDCWD, 0x1000, flags, 0o644, 0, 0];
        assert_eq!(run(openat, unmarked), SECCOMP_RET_USER_NOTIF, "{flags:#o}");
        let half = [
            AT_FDCWD,
            0x1000,
            flags,
            0o644,
            FAST_READ_MARK as u32 as u64,
            0,
        ];
        assert_eq!(run(openat, half), SECCOMP_RET_USER_NOTIF, "{flags:#o}");
    }
    // O_EXCL: trapped, marked or not, in both filters.
    for flags in [rdwr | excl, rdwr | creat | excl] {
        for r8 in [0, FAST_READ_MARK] {
            let args = [AT_FDCWD, 0x1000, flags, 0o644, r8, 0];
            for prog in [compile(), unfenced.clone()] {
                assert_eq!(eval(&prog, args), SECCOMP_RET_USER_NOTIF, "{flags:#o}");
            }
        }
    }
}

#[test]
fn marked_openat2_passes_only_in_the_fenced_filter() {
    use crate::policy::FAST_READ_MARK;
    let openat2 = Sysno::openat2.id() as u32;
    let unfenced = compile_without_fast_reads();
    let marked = [AT_FDCWD, 0x1000, 0x2000, 24, FAST_READ_MARK, 0];
    assert_eq!(run(openat2, marked), SECCOMP_RET_ALLOW);
    assert_eq!(
        evaluate(&unfenced, AUDIT_ARCH_X86_64, openat2, marked),
        SECCOMP_RET_USER_NOTIF
    );
    for r8 in [
        0,
        FAST_READ_MARK as u32 as u64,
        FAST_READ_MARK & !0xffff_ffff,
    ] {
        let args = [AT_FDCWD, 0x1000, 0x2000, 24, r8, 0];
        assert_eq!(run(openat2, args), SECCOMP_RET_USER_NOTIF, "r8 {r8:#x}");
    }
    let elsewhere = [AT_FDCWD, 0x1000, 0x2000, FAST_READ_MARK, 0, FAST_READ_MARK];
    assert_eq!(run(openat2, elsewhere), SECCOMP_RET_USER_NOTIF);
}

const AT_FDCWD: u64 = libc::AT_FDCWD as u32 as u64;
