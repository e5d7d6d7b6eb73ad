//! The policy table rendered for people: the Markdown that
//! docs/policy.md embeds and `supervisor policy` prints.
//!
//! Owns only the rendering; the table itself is in `table.rs`.

use std::fmt::Write;

use super::{table, Cond, Fallback, Op, Rule};

/// Markdown: counts per class, then one row per class listing its calls.
pub fn markdown() -> String {
    let mut pass = Vec::new();
    let mut conditional = Vec::new();
    let mut service = Vec::new();
    let mut deny: Vec<(String, String)> = Vec::new();
    let mut refuse: Vec<String> = Vec::new();
    let mut kill = Vec::new();
    for (s, rule) in table() {
        let name = s.name().to_string();
        match rule {
            Rule::Pass => pass.push(name),
            Rule::Service => service.push(name),
            Rule::Deny(e) => deny.push((name, format!("{e:?}"))),
            Rule::Refuse(e) => refuse.push(format!("{name} ({e:?})")),
            Rule::Kill => kill.push(name),
            Rule::PassIf(conds, fb) => {
                conditional.push(format!("{name} ({})", describe(conds, fb)))
            }
            Rule::ServiceIf(conds) => {
                conditional.push(format!("{name} ({})", describe_service_if(conds)))
            }
            Rule::ServiceIfEither(&[first, second]) => conditional.push(format!(
                "{name} (serviced if {}, or if {}; else passes)",
                tests(first).join(" and "),
                tests(second).join(" and ")
            )),
        }
    }
    let mut out = String::new();
    let reachable = pass.len() + conditional.len();
    let _ = writeln!(out, "| class | count | calls |\n|---|---|---|");
    let _ = writeln!(out, "| pass | {} | {} |", pass.len(), pass.join(", "));
    let _ = writeln!(
        out,
        "| pass if (BPF argument check) | {} | {} |",
        conditional.len(),
        conditional.join("; ")
    );
    let _ = writeln!(
        out,
        "| service | {} | {} |",
        service.len(),
        service.join(", ")
    );
    let denied: Vec<String> = deny.iter().map(|(n, e)| format!("{n} ({e})")).collect();
    let _ = writeln!(
        out,
        "| deny (errno, counted) | {} | {} |",
        deny.len(),
        denied.join(", ")
    );
    let _ = writeln!(
        out,
        "| refuse (errno in the filter, a C library's probe, uncounted) | {} | {} |",
        refuse.len(),
        refuse.join(", ")
    );
    let _ = writeln!(
        out,
        "| kill | - | any architecture but x86_64; x32 numbers |"
    );
    let _ = writeln!(out, "| deny (ENOSYS) | - | every number not named above |");
    let _ = writeln!(out, "\nSyscalls the guest can reach on the host kernel: {reachable} ({} unconditionally, {} after an argument check).", pass.len(), conditional.len());
    out
}

fn tests(conds: &[Cond]) -> Vec<String> {
    conds
        .iter()
        .map(|c| format!("arg{} {}", c.arg, op(&c.op)))
        .collect()
}

/// A ServiceIf rule: the calls it traps, and that the rest pass.
fn describe_service_if(conds: &[Cond]) -> String {
    format!("serviced if {}; else passes", tests(conds).join(" and "))
}

fn describe(conds: &[Cond], fallback: Fallback) -> String {
    let tests = tests(conds);
    let otherwise = match fallback {
        Fallback::Service => "else serviced".to_string(),
        Fallback::Deny(e) => format!("else {e:?}"),
    };
    format!("{}; {otherwise}", tests.join(" and "))
}

fn op(o: &Op) -> String {
    match o {
        Op::MaskClear(m) => format!("& {m:#x} == 0"),
        Op::MaskSet(m) => format!("has {m:#x}"),
        Op::MaskedIn(m, v) if *m == u32::MAX => format!("in {v:?}"),
        Op::MaskedIn(m, v) => format!("& {m:#x} in {v:?}"),
        Op::NotIn(v) => format!(
            "not in {:?}",
            v.iter().map(|x| format!("{x:#x}")).collect::<Vec<_>>()
        ),
        Op::IsNull => "== NULL".to_string(),
        Op::Not64(v) => format!("!= {v:#x}"),
        Op::Is64(v) => format!("== {v:#x}"),
    }
}

#[cfg(test)]
mod tests {
    /// docs/policy.md embeds the table; it must say what the code does.
    #[test]
    fn policy_md_shows_the_current_table() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/policy.md"))
                .expect("docs/policy.md in the workspace");
        let table = super::markdown();
        assert!(
            doc.contains(table.trim()),
            "docs/policy.md's policy table is stale: regenerate it with `supervisor policy`"
        );
    }
}
