//! The table's rows against the filter compiled from them: every row
//! that names a handler traps some call for service (the handler is
//! reached), and every call a filter traps for service finds a handler.

use sysno::Sysno;

use super::{entry, rule_for, rule_without_fast_reads};
use crate::policy::bpf::{
    compile, compile_without_fast_reads, evaluate, AUDIT_ARCH_X86_64, SECCOMP_RET_USER_NOTIF,
};
use crate::policy::{Cond, Fallback, Op, Rule};

/// A register value for which `cond` holds (`true`) or fails (`false`).
fn value(cond: &Cond, holds: bool) -> u64 {
    let first_not_in = |mask: u32, values: &[u32]| {
        (0..=u32::from(u8::MAX))
            .find(|v| !values.contains(&(v & mask)))
            .map_or(u64::MAX, u64::from)
    };
    match (cond.op, holds) {
        (Op::MaskClear(_), true) | (Op::MaskSet(_), false) | (Op::IsNull, true) => 0,
        (Op::MaskClear(m), false) | (Op::MaskSet(m), true) => u64::from(m),
        (Op::MaskedIn(_, values), true) => values.first().map_or(0, |v| u64::from(*v)),
        (Op::MaskedIn(m, values), false) => first_not_in(m, values),
        (Op::NotIn(values), true) => first_not_in(u32::MAX, values),
        (Op::NotIn(values), false) => values.first().map_or(0, |v| u64::from(*v)),
        (Op::IsNull, false) => 1,
        (Op::Not64(v), true) => !v,
        (Op::Not64(v), false) => v,
        (Op::Is64(v), true) => v,
        (Op::Is64(v), false) => !v,
    }
}

/// Arguments for which every condition holds, or (`fail_first`) for
/// which the first fails and the rest hold.
fn args(conds: &[Cond], fail_first: bool) -> [u64; 6] {
    let mut a = [0u64; 6];
    for (i, cond) in conds.iter().enumerate().rev() {
        a[usize::from(cond.arg)] = value(cond, !(fail_first && i == 0));
    }
    a
}

/// The arguments of a call `rule` traps for service, if it traps any.
fn serviced_args(rule: Rule) -> Option<[u64; 6]> {
    match rule {
        Rule::Service => Some([0; 6]),
        Rule::ServiceIf(conds) | Rule::ServiceIfEither(&[conds, _]) => Some(args(conds, false)),
        Rule::PassIf(conds, Fallback::Service) => Some(args(conds, true)),
        Rule::Pass
        | Rule::Kill
        | Rule::Deny(_)
        | Rule::Refuse(_)
        | Rule::PassIf(_, Fallback::Deny(_)) => None,
    }
}

#[test]
fn every_handler_is_reached_and_every_serviced_call_has_one() {
    let filters = [
        ("fenced", compile(), rule_for as fn(Sysno) -> Rule),
        (
            "unfenced",
            compile_without_fast_reads(),
            rule_without_fast_reads,
        ),
    ];
    for (filter_name, filter, rule_of) in &filters {
        for s in Sysno::iter() {
            let serviced = serviced_args(rule_of(s));
            if let Some(a) = serviced {
                let action = evaluate(filter, AUDIT_ARCH_X86_64, s.id() as u32, a);
                assert_eq!(
                    action,
                    SECCOMP_RET_USER_NOTIF,
                    "{}: the {filter_name} filter never traps {a:x?}",
                    s.name()
                );
            }
            let handler = entry(s).handler();
            assert_eq!(
                handler.is_some(),
                serviced.is_some(),
                "{}: a handler {} but the {filter_name} filter {} it for service",
                s.name(),
                if handler.is_some() {
                    "is named"
                } else {
                    "is missing"
                },
                if serviced.is_some() {
                    "traps"
                } else {
                    "never traps"
                },
            );
        }
    }
}

/// The calls that pass the filter whatever their arguments (`creat`,
/// `unlink`): no handler.
#[test]
fn calls_that_always_pass_have_no_handler() {
    for s in [Sysno::creat, Sysno::unlink, Sysno::read, Sysno::mkdir] {
        assert_eq!(rule_for(s), Rule::Pass, "{}", s.name());
        assert!(entry(s).handler().is_none(), "{}", s.name());
    }
}
