//! Property tests of the compiled filters against hostile callers: any
//! syscall record (number, instruction pointer, six registers, the fast
//! read mark forged into any of them or torn in half) gets exactly the
//! decision the policy table gives for its number and arguments. Where a
//! call is made from (the preload, a trampoline, any other address) never
//! enters the decision, and a forged mark buys nothing but what the mark
//! is for: a plain read open, or an `O_RDWR` one without `O_EXCL`, or an
//! openat2 (whose flags are in memory, and whose resolve flags only narrow
//! its lookup) passing the fenced filter (docs/fast-reads.md says why that
//! gives nothing away), or a rewind that seeks without the supervisor
//! (either filter).

use proptest::prelude::*;

use super::*;
use crate::policy::table::conds::OPEN_NEVER_SERVED;
use crate::policy::{FAST_READ_MARK, NODELAY_MARK};

/// The decision the table gives, computed without any BPF: the reference
/// the compiled programs must agree with.
fn decide(rule: Rule, args: [u64; 6]) -> u32 {
    let holds = |conds: &[Cond]| conds.iter().all(|c| cond_holds(*c, args));
    match rule {
        Rule::Pass => SECCOMP_RET_ALLOW,
        Rule::Service | Rule::Deny(_) => SECCOMP_RET_USER_NOTIF,
        Rule::Refuse(e) => errno_action(e),
        Rule::Kill => SECCOMP_RET_KILL_PROCESS,
        Rule::PassIf(conds, _) if holds(conds) => SECCOMP_RET_ALLOW,
        Rule::PassIf(..) => SECCOMP_RET_USER_NOTIF,
        Rule::ServiceIf(conds) if holds(conds) => SECCOMP_RET_USER_NOTIF,
        Rule::ServiceIf(_) => SECCOMP_RET_ALLOW,
        Rule::ServiceIfEither(&[first, second]) if holds(first) || holds(second) => {
            SECCOMP_RET_USER_NOTIF
        }
        Rule::ServiceIfEither(..) => SECCOMP_RET_ALLOW,
    }
}

fn cond_holds(cond: Cond, args: [u64; 6]) -> bool {
    let full = args[usize::from(cond.arg)];
    let low = full as u32;
    match cond.op {
        Op::MaskClear(m) => low & m == 0,
        Op::MaskSet(m) => low & m == m,
        Op::MaskedIn(m, values) => values.contains(&(low & m)),
        Op::NotIn(values) => !values.contains(&low),
        Op::IsNull => full == 0,
        Op::Not64(v) => full != v,
        Op::Is64(v) => full == v,
    }
}

/// The rule of `nr` in a table, as the filter's ranges see it (numbers
/// without a name are denied with ENOSYS).
fn rule_of(table: Table, nr: u32) -> Rule {
    usize::try_from(nr)
        .ok()
        .and_then(Sysno::new)
        .map(table)
        .unwrap_or(Rule::Deny(nix::errno::Errno::ENOSYS))
}

/// Register values a hostile caller would try: the mark, each half of it,
/// its complement, open flags that are and are not plain reads, and
/// anything at all.
fn register() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(FAST_READ_MARK),
        1 => Just(FAST_READ_MARK as u32 as u64),
        1 => Just(FAST_READ_MARK & !0xffff_ffff),
        1 => Just(FAST_READ_MARK ^ 1),
        1 => Just(!FAST_READ_MARK),
        1 => Just(NODELAY_MARK),
        1 => Just(NODELAY_MARK as u32 as u64),
        1 => prop::sample::select(vec![libc::SOL_SOCKET as u64, libc::SO_WIFI_STATUS as u64]),
        2 => prop::sample::select(vec![
            0u64,
            libc::O_CLOEXEC as u64,
            libc::O_RDWR as u64,
            (libc::O_RDWR | libc::O_CREAT) as u64,
            (libc::O_RDWR | libc::O_CREAT | libc::O_EXCL) as u64,
            (libc::O_RDWR | libc::O_EXCL) as u64,
            (libc::O_RDWR | libc::O_TRUNC | libc::O_CLOEXEC) as u64,
            libc::O_WRONLY as u64,
            libc::O_PATH as u64,
            libc::O_DIRECTORY as u64,
            (0xffff_ffff_u64 << 32) | libc::O_CLOEXEC as u64,
            libc::AT_FDCWD as u32 as u64,
        ]),
        4 => any::<u64>(),
    ]
}

/// Syscall numbers: mostly the open family, any named number, and
/// numbers beyond the table up to the x32 bit.
fn number() -> impl Strategy<Value = u32> {
    let last = Sysno::last().id() as u32;
    prop_oneof![
        3 => Just(Sysno::openat.id() as u32),
        1 => prop::sample::select(vec![
            Sysno::open.id() as u32,
            Sysno::openat2.id() as u32,
            Sysno::open_by_handle_at.id() as u32,
            Sysno::rt_sigaction.id() as u32,
            Sysno::rt_sigprocmask.id() as u32,
            Sysno::execve.id() as u32,
            Sysno::setsockopt.id() as u32,
            Sysno::getsockopt.id() as u32,
            Sysno::lseek.id() as u32,
        ]),
        4 => 0..=last + 8,
        1 => 0..X32_SYSCALL_BIT,
    ]
}

/// A table of rules: [`rule_for`] or [`rule_without_fast_reads`].
type Table = fn(Sysno) -> Rule;

/// The fenced filter and the unfenced one, each with its table.
fn filters() -> [(Vec<Insn>, Table); 2] {
    [
        (compile(), rule_for as Table),
        (compile_without_fast_reads(), rule_without_fast_reads),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Every record gets the table's decision, whatever its instruction
    /// pointer: a call from a trampoline, the preload, the stack or a
    /// kernel address is judged the same.
    #[test]
    fn any_record_gets_the_tables_decision_from_any_address(
        nr in number(),
        args in prop::array::uniform6(register()),
        ip in any::<u64>(),
        other_ip in any::<u64>(),
    ) {
        for (prog, table) in filters() {
            let want = decide(rule_of(table, nr), args);
            let got = evaluate_at(&prog, AUDIT_ARCH_X86_64, nr, ip, args);
            prop_assert_eq!(got, want, "nr {} ip {:#x} args {:x?}", nr, ip, args);
            let elsewhere = evaluate_at(&prog, AUDIT_ARCH_X86_64, nr, other_ip, args);
            prop_assert_eq!(elsewhere, got, "nr {} ip {:#x}", nr, other_ip);
        }
    }

    /// With the mark forged into any register of any call, the fenced
    /// filter decides as the unfenced one (every plain read and `O_RDWR`
    /// open trapped), except for a plain read openat marked in r8, or an
    /// `O_RDWR` one without `O_EXCL`, or an openat2 marked in r8, which it
    /// passes: the mark buys those calls and nothing else.
    #[test]
    fn a_forged_mark_buys_only_a_fenced_plain_read(
        nr in number(),
        args in prop::array::uniform6(register()),
        reg in 0usize..6,
        ip in any::<u64>(),
    ) {
        let mut marked = args;
        marked[reg] = FAST_READ_MARK;
        let [(fenced, _), (unfenced, _)] = filters();
        for a in [args, marked] {
            let eval = |prog: &[Insn]| evaluate_at(prog, AUDIT_ARCH_X86_64, nr, ip, a);
            let openat = nr == Sysno::openat.id() as u32;
            let plain_read = openat && a[2] as u32 & OPEN_NEVER_SERVED == 0;
            let excl = libc::O_EXCL as u32;
            let read_write = openat
                && a[2] as u32 & (OPEN_NEVER_SERVED | excl) == libc::O_RDWR as u32;
            let openat2 = nr == Sysno::openat2.id() as u32;
            if (plain_read || read_write || openat2) && a[4] == FAST_READ_MARK {
                prop_assert_eq!(eval(&fenced), SECCOMP_RET_ALLOW);
                prop_assert_eq!(eval(&unfenced), SECCOMP_RET_USER_NOTIF);
            } else {
                prop_assert_eq!(eval(&fenced), eval(&unfenced), "nr {} args {:x?}", nr, a);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The TCP_NODELAY mark buys one thing: a setsockopt or getsockopt of
    /// SOL_SOCKET's SO_WIFI_STATUS marked in r9 passes (either filter);
    /// the same call unmarked, or marked elsewhere, is serviced.
    #[test]
    fn the_nodelay_mark_buys_only_the_carrier(
        set in any::<bool>(),
        args in prop::array::uniform6(register()),
        reg in 0usize..6,
    ) {
        let nr = if set { Sysno::setsockopt } else { Sysno::getsockopt }.id() as u32;
        let mut marked = args;
        marked[reg] = NODELAY_MARK;
        for a in [args, marked] {
            let carrier = a[1] as u32 == libc::SOL_SOCKET as u32
                && a[2] as u32 == libc::SO_WIFI_STATUS as u32
                && a[5] == NODELAY_MARK;
            let want = if carrier { SECCOMP_RET_ALLOW } else { SECCOMP_RET_USER_NOTIF };
            for (prog, _) in filters() {
                prop_assert_eq!(evaluate(&prog, AUDIT_ARCH_X86_64, nr, a), want, "args {:x?}", a);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The fast read mark in r10 of a rewind (`lseek(fd, 0, SEEK_SET)`)
    /// buys one thing: that rewind passes, as every other seek does
    /// (either filter); unmarked, or marked elsewhere, it is serviced.
    #[test]
    fn the_rewind_mark_buys_only_a_rewind(
        mut args in prop::array::uniform6(register()),
        offset in prop_oneof![Just(0u64), any::<u64>()],
        whence in prop_oneof![
            Just(libc::SEEK_SET as u64),
            Just((1u64 << 32) | libc::SEEK_SET as u64),
            any::<u64>(),
        ],
        reg in 0usize..6,
    ) {
        let nr = Sysno::lseek.id() as u32;
        args[1] = offset;
        args[2] = whence;
        let mut marked = args;
        marked[reg] = FAST_READ_MARK;
        for a in [args, marked] {
            let rewind = a[1] == 0 && a[2] as u32 == libc::SEEK_SET as u32;
            let want = if rewind && a[3] != FAST_READ_MARK {
                SECCOMP_RET_USER_NOTIF
            } else {
                SECCOMP_RET_ALLOW
            };
            for (prog, _) in filters() {
                prop_assert_eq!(evaluate(&prog, AUDIT_ARCH_X86_64, nr, a), want, "args {:x?}", a);
            }
        }
    }
}
