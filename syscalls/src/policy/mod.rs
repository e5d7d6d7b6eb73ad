//! The syscall policy: one table that puts every x86_64 syscall number in
//! exactly one class and names the handler of each serviced one, and the
//! seccomp BPF program generated from it.
//!
//! Owns: the classes ([`Rule`]), the table ([`entry`], its classes
//! [`rule_for`]), and the filter ([`bpf::compile`]). Does not own:
//! installing the filter (the supervisor does that in the guest's init)
//! or the work of the serviced calls (the handlers the table names, in
//! [`crate::handlers`], which [`crate::handlers::dispatch`] calls).

mod allow;
pub mod bpf;
pub mod doc;
mod table;

pub use table::{
    entry, rule_for, rule_without_fast_reads, Entry, FAST_READ_MARK, NODELAY_MARK, NS_CLONE_FLAGS,
};

use nix::errno::Errno;
use sysno::Sysno;

/// One condition on one argument register, tested in BPF.
///
/// All tests but [`Op::IsNull`], [`Op::Not64`] and [`Op::Is64`] look at the low 32 bits only: every
/// argument they are used on is an `int` or `unsigned int` in the kernel,
/// which ignores the high half, so a guest cannot dodge a test by setting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cond {
    pub arg: u8,
    pub op: Op,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// None of these bits set.
    MaskClear(u32),
    /// All of these bits set.
    MaskSet(u32),
    /// `(arg & mask)` equals one of the values.
    MaskedIn(u32, &'static [u32]),
    /// The low word is none of the values.
    NotIn(&'static [u32]),
    /// The whole 64-bit register is zero (a NULL pointer).
    IsNull,
    /// The whole 64-bit register is anything but this value.
    Not64(u64),
    /// The whole 64-bit register is this value.
    Is64(u64),
}

/// What happens to a call when the argument test of [`Rule::PassIf`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    Service,
    Deny(Errno),
}

/// The class of one syscall number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Reaches the host kernel directly (`SECCOMP_RET_ALLOW`).
    Pass,
    /// Trapped to the supervisor, which does the work (`SECCOMP_RET_USER_NOTIF`).
    Service,
    /// Trapped to the supervisor, which answers this errno and counts the
    /// denial for the report.
    Deny(Errno),
    /// Answered this errno by the filter itself (`SECCOMP_RET_ERRNO`),
    /// with no round trip and so uncounted: only for a C library's probe
    /// of a newer call that it makes at every use and falls back from
    /// (glibc's `clone3` before each thread), not for a refusal of
    /// something the guest asked for.
    Refuse(Errno),
    /// Kills the whole guest process (`SECCOMP_RET_KILL_PROCESS`).
    Kill,
    /// Passes when every condition holds; otherwise the fallback.
    PassIf(&'static [Cond], Fallback),
    /// Trapped to the supervisor when every condition holds; passes
    /// otherwise (a rare argument pattern of a hot call).
    ServiceIf(&'static [Cond]),
    /// Trapped to the supervisor when every condition of either list
    /// holds; passes otherwise (a hot call with two rare patterns, one of
    /// which needs a test of two registers).
    /// (A thin reference, so that the rule stays as small as the others.)
    ServiceIfEither(&'static [&'static [Cond]; 2]),
}

/// What the supervisor does with a call that the filter trapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trapped {
    Service,
    Deny(Errno),
}

/// How to treat a notification for syscall `nr`: the filter only traps
/// calls whose rule is Service, Deny, a failed PassIf test or a passed
/// ServiceIf or ServiceIfEither test (never Pass, Refuse or Kill).
pub fn trapped(nr: i64) -> Trapped {
    match sysno(nr).map(rule_for) {
        Some(Rule::Service)
        | Some(Rule::PassIf(_, Fallback::Service))
        | Some(Rule::ServiceIf(_))
        | Some(Rule::ServiceIfEither(..)) => Trapped::Service,
        Some(Rule::Deny(e)) | Some(Rule::PassIf(_, Fallback::Deny(e))) => Trapped::Deny(e),
        // Refuse never notifies either; should it, the filter's answer.
        Some(Rule::Refuse(e)) => Trapped::Deny(e),
        // Pass and Kill never notify; answering ENOSYS keeps a confused
        // state safe rather than running anything.
        Some(Rule::Pass) | Some(Rule::Kill) | None => Trapped::Deny(Errno::ENOSYS),
    }
}

/// The syscall number as a [`Sysno`], if it names one.
pub fn sysno(nr: i64) -> Option<Sysno> {
    usize::try_from(nr).ok().and_then(Sysno::new)
}

/// A printable name for `nr` (`syscall_NNN` for numbers without a name).
pub fn name(nr: i64) -> String {
    match sysno(nr) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
    }
}

/// Every number the table knows, with its rule, in order.
pub fn table() -> impl Iterator<Item = (Sysno, Rule)> {
    Sysno::iter().map(|s| (s, rule_for(s)))
}
