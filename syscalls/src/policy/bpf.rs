//! Compiles the policy table into a classic-BPF seccomp program (and,
//! with [`compile_actions`], an explicit list: the supervisor's own filter).
//!
//! Layout: check the architecture (anything but x86_64 is killed), kill
//! x32 numbers, then a binary search over ranges of syscall numbers that
//! share a rule, so any call is classified in about ten comparisons. Far
//! jumps go through `ja`, whose offset is 32 bits; a conditional jump
//! whose target is within its 8-bit reach skips that `ja` (most of the
//! tree's: a shorter program is cheaper to load, and the kernel checks,
//! converts and JIT-compiles a filter at every install).

use std::collections::HashMap;

use sysno::Sysno;

use super::{rule_for, rule_without_fast_reads, Cond, Fallback, Op, Rule};

/// One classic-BPF instruction, laid out as `struct sock_filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// BPF opcodes (linux/bpf_common.h) and seccomp return values.
const LD_W_ABS: u16 = 0x20; // BPF_LD (0x00) | BPF_W (0x00) | BPF_ABS (0x20)
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGE_K: u16 = 0x35;
const JMP_JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const ALU_AND_K: u16 = 0x54;

pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets into struct seccomp_data.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
fn off_arg_lo(arg: u8) -> u32 {
    16 + 8 * u32::from(arg)
}
fn off_arg_hi(arg: u8) -> u32 {
    off_arg_lo(arg) + 4
}

/// The filter for the guest, from the policy table: for a fenced guest,
/// whose marked read opens may pass ([`super::FAST_READ_MARK`]).
pub fn compile() -> Vec<Insn> {
    compile_ranges(&ranges_of(rule_for), &leaf)
}

/// The filter for a guest without the fence (no Landlock) or without the
/// preload that marks its opens (`--trace`): every plain read open is
/// trapped, marked or not ([`super::rule_without_fast_reads`]).
pub fn compile_without_fast_reads() -> Vec<Insn> {
    compile_ranges(&ranges_of(rule_without_fast_reads), &leaf)
}

/// What a filter built by [`compile_actions`] returns for one syscall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// This seccomp return value (e.g. [`SECCOMP_RET_ALLOW`]).
    Ret(u32),
    /// The first value when every condition holds, the second otherwise.
    If(&'static [Cond], u32, u32),
}

/// A filter from an explicit list (the supervisor's own filter): each
/// listed syscall gets its [`Action`], every other number (up to the x32
/// bit) returns `default`. Foreign architectures and x32 numbers are
/// killed, as in [`compile`]. A number listed twice keeps its first action.
pub fn compile_actions(list: &[(Sysno, Action)], default: u32) -> Vec<Insn> {
    let mut by_nr: HashMap<u32, Action> = HashMap::new();
    for (s, a) in list {
        by_nr.entry(s.id() as u32).or_insert(*a);
    }
    let last = Sysno::last().id() as u32;
    let mut out: Vec<(u32, u32, Action)> = Vec::new();
    for nr in 0..X32_SYSCALL_BIT {
        if nr > last
            && out
                .last()
                .is_some_and(|(_, _, a)| *a == Action::Ret(default))
        {
            if let Some(r) = out.last_mut() {
                r.1 = X32_SYSCALL_BIT - 1;
            }
            break;
        }
        let action = by_nr.get(&nr).copied().unwrap_or(Action::Ret(default));
        match out.last_mut() {
            Some((_, hi, a)) if *a == action => *hi = nr,
            _ => out.push((nr, nr, action)),
        }
    }
    compile_ranges(&out, &action_leaf)
}

fn action_leaf(b: &mut Builder, action: Action) {
    match action {
        Action::Ret(k) => b.ret(k),
        Action::If(conds, pass, otherwise) => ret_if_all(b, conds, pass, otherwise),
    }
}

/// Contiguous ranges `[lo, hi]` of syscall numbers sharing a rule, covering
/// every number from 0 to just below the x32 bit.
pub fn ranges() -> Vec<(u32, u32, Rule)> {
    ranges_of(rule_for)
}

fn ranges_of(rule_for: fn(Sysno) -> Rule) -> Vec<(u32, u32, Rule)> {
    let last = Sysno::last().id() as u32;
    let mut out: Vec<(u32, u32, Rule)> = Vec::new();
    for nr in 0..=last {
        let rule = usize::try_from(nr)
            .ok()
            .and_then(Sysno::new)
            .map(rule_for)
            .unwrap_or(Rule::Deny(nix::errno::Errno::ENOSYS));
        match out.last_mut() {
            Some((_, hi, r)) if *r == rule => *hi = nr,
            _ => out.push((nr, nr, rule)),
        }
    }
    let beyond = Rule::Deny(nix::errno::Errno::ENOSYS);
    match out.last_mut() {
        Some((_, hi, r)) if *r == beyond => *hi = X32_SYSCALL_BIT - 1,
        _ => out.push((last + 1, X32_SYSCALL_BIT - 1, beyond)),
    }
    out
}

/// A jump target, resolved to an instruction index once laid out.
type Label = usize;

enum Item {
    Op(Insn),
    /// Conditional jump to labels (true, false).
    Jump {
        code: u16,
        k: u32,
        t: Label,
        f: Label,
    },
    Ja(Label),
    Mark(Label),
}

#[derive(Default)]
struct Builder {
    items: Vec<Item>,
    labels: usize,
}

impl Builder {
    fn label(&mut self) -> Label {
        self.labels += 1;
        self.labels - 1
    }
    fn op(&mut self, code: u16, k: u32) {
        self.items.push(Item::Op(Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        }));
    }
    fn jump(&mut self, code: u16, k: u32, t: Label, f: Label) {
        self.items.push(Item::Jump { code, k, t, f });
    }
    fn mark(&mut self, l: Label) {
        self.items.push(Item::Mark(l));
    }
    fn ret(&mut self, k: u32) {
        self.op(RET_K, k);
    }

    /// Where each label lands (indexed by label; labels are dense).
    fn layout(&self) -> Vec<usize> {
        let mut at = vec![0; self.labels];
        let mut pc = 0;
        for item in &self.items {
            match item {
                Item::Mark(l) => at[*l] = pc,
                _ => pc += 1,
            }
        }
        at
    }

    /// Points conditional jumps at a `ja`'s target directly when it is
    /// within their 8-bit reach, and drops the `ja`s nothing reaches any
    /// more; true if anything changed. Dropping instructions only
    /// shortens forward jumps, so every jump stays in range.
    fn skip_trampolines(&mut self) -> bool {
        let at = self.layout();
        let mut ja_of: Vec<Option<Label>> = vec![None; self.labels];
        let mut pending: Vec<Label> = Vec::new();
        for item in &self.items {
            match item {
                Item::Mark(l) => pending.push(*l),
                Item::Ja(to) => pending.drain(..).for_each(|l| ja_of[l] = Some(*to)),
                _ => pending.clear(),
            }
        }
        let mut changed = false;
        let mut pc = 0;
        for item in &mut self.items {
            match item {
                Item::Jump { t, f, .. } => {
                    for label in [t, f] {
                        if let Some(to) = ja_of[*label] {
                            if at[to].checked_sub(pc + 1).is_some_and(|d| d < 256) {
                                *label = to;
                                changed = true;
                            }
                        }
                    }
                    pc += 1;
                }
                Item::Mark(_) => {}
                _ => pc += 1,
            }
        }
        changed && self.drop_unreached_ja()
    }

    /// Removes each `ja` that no jump targets and no instruction falls
    /// into (it follows a jump or a return); true if any went.
    fn drop_unreached_ja(&mut self) -> bool {
        let mut targeted = vec![false; self.labels];
        for item in &self.items {
            match item {
                Item::Jump { t, f, .. } => {
                    targeted[*t] = true;
                    targeted[*f] = true;
                }
                Item::Ja(l) => targeted[*l] = true,
                _ => {}
            }
        }
        let before = self.items.len();
        let mut kept: Vec<Item> = Vec::with_capacity(before);
        let mut marks: Vec<Label> = Vec::new();
        let mut ends_flow = false;
        for item in std::mem::take(&mut self.items) {
            match item {
                Item::Mark(l) => {
                    marks.push(l);
                    kept.push(item);
                }
                Item::Ja(_) if ends_flow && !marks.iter().any(|l| targeted[*l]) => {}
                other => {
                    ends_flow = match &other {
                        Item::Op(i) => i.code == RET_K,
                        _ => true,
                    };
                    marks.clear();
                    kept.push(other);
                }
            }
        }
        self.items = kept;
        self.items.len() < before
    }

    fn finish(mut self) -> Vec<Insn> {
        while self.skip_trampolines() {}
        let at = self.layout();
        let mut out = Vec::with_capacity(self.items.len());
        for item in self.items {
            let here = out.len();
            let rel = |l: Label| at[l] - here - 1;
            match item {
                Item::Op(i) => out.push(i),
                Item::Jump { code, k, t, f } => {
                    let (jt, jf) = (rel(t), rel(f));
                    assert!(jt < 256 && jf < 256, "BPF conditional jump out of range");
                    out.push(Insn {
                        code,
                        jt: jt as u8,
                        jf: jf as u8,
                        k,
                    });
                }
                Item::Ja(l) => out.push(Insn {
                    code: JMP_JA,
                    jt: 0,
                    jf: 0,
                    k: rel(l) as u32,
                }),
                Item::Mark(_) => {}
            }
        }
        out
    }
}

fn compile_ranges<R: Copy>(ranges: &[(u32, u32, R)], leaf: &dyn Fn(&mut Builder, R)) -> Vec<Insn> {
    let mut b = Builder::default();
    let (arch_ok, kill, nr_ok) = (b.label(), b.label(), b.label());
    b.op(LD_W_ABS, OFF_ARCH);
    b.jump(JMP_JEQ_K, AUDIT_ARCH_X86_64, arch_ok, kill);
    b.mark(kill);
    b.ret(SECCOMP_RET_KILL_PROCESS);
    b.mark(arch_ok);
    b.op(LD_W_ABS, OFF_NR);
    let kill_x32 = b.label();
    b.jump(JMP_JGE_K, X32_SYSCALL_BIT, kill_x32, nr_ok);
    b.mark(kill_x32);
    b.ret(SECCOMP_RET_KILL_PROCESS);
    b.mark(nr_ok);
    tree(&mut b, ranges, leaf);
    b.finish()
}

/// Binary search over `ranges`, with the syscall number in A.
fn tree<R: Copy>(b: &mut Builder, ranges: &[(u32, u32, R)], leaf: &dyn Fn(&mut Builder, R)) {
    if let [(_, _, rule)] = ranges {
        return leaf(b, *rule);
    }
    let mid = ranges.len() / 2;
    let (tramp, left, right) = (b.label(), b.label(), b.label());
    b.jump(JMP_JGE_K, ranges[mid].0, tramp, left);
    b.mark(tramp);
    b.items.push(Item::Ja(right));
    b.mark(left);
    tree(b, &ranges[..mid], leaf);
    b.mark(right);
    tree(b, &ranges[mid..], leaf);
}

fn leaf(b: &mut Builder, rule: Rule) {
    match rule {
        Rule::Pass => b.ret(SECCOMP_RET_ALLOW),
        Rule::Service | Rule::Deny(_) => b.ret(SECCOMP_RET_USER_NOTIF),
        Rule::Refuse(e) => b.ret(errno_action(e)),
        Rule::Kill => b.ret(SECCOMP_RET_KILL_PROCESS),
        Rule::PassIf(conds, fallback) => {
            let otherwise = match fallback {
                Fallback::Service | Fallback::Deny(_) => SECCOMP_RET_USER_NOTIF,
            };
            ret_if_all(b, conds, SECCOMP_RET_ALLOW, otherwise);
        }
        Rule::ServiceIf(conds) => ret_if_all(b, conds, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_ALLOW),
        Rule::ServiceIfEither(&[first, second]) => {
            let next = b.label();
            for cond in first {
                test(b, cond, next);
            }
            b.ret(SECCOMP_RET_USER_NOTIF);
            b.mark(next);
            ret_if_all(b, second, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_ALLOW);
        }
    }
}

/// `SECCOMP_RET_ERRNO` with `e` in its data: the kernel answers `-e`.
pub fn errno_action(e: nix::errno::Errno) -> u32 {
    SECCOMP_RET_ERRNO | (e as u32 & 0xffff)
}

/// Returns `then` when every one of `conds` holds, `otherwise` when any
/// fails.
fn ret_if_all(b: &mut Builder, conds: &[Cond], then: u32, otherwise: u32) {
    let fail = b.label();
    for cond in conds {
        test(b, cond, fail);
    }
    b.ret(then);
    b.mark(fail);
    b.ret(otherwise);
}

/// Falls through when `cond` holds; jumps to `fail` otherwise.
fn test(b: &mut Builder, cond: &Cond, fail: Label) {
    let ok = b.label();
    b.op(LD_W_ABS, off_arg_lo(cond.arg));
    match cond.op {
        Op::MaskClear(m) => b.jump(JMP_JSET_K, m, fail, ok),
        Op::MaskSet(m) => {
            b.op(ALU_AND_K, m);
            b.jump(JMP_JEQ_K, m, ok, fail);
        }
        Op::MaskedIn(m, values) => {
            if m != u32::MAX {
                b.op(ALU_AND_K, m);
            }
            for v in values {
                let next = b.label();
                b.jump(JMP_JEQ_K, *v, ok, next);
                b.mark(next);
            }
            b.items.push(Item::Ja(fail));
        }
        Op::NotIn(values) => {
            for v in values {
                let next = b.label();
                b.jump(JMP_JEQ_K, *v, fail, next);
                b.mark(next);
            }
        }
        Op::IsNull => equals_64(b, cond.arg, 0, ok, fail),
        Op::Not64(v) => equals_64(b, cond.arg, v, fail, ok),
        Op::Is64(v) => equals_64(b, cond.arg, v, ok, fail),
    }
    b.mark(ok);
}

/// With argument `arg`'s low word loaded: jumps to `equal` when the whole
/// 64-bit argument is `v`, to `differ` otherwise (the high word is read
/// only when the low one matches).
fn equals_64(b: &mut Builder, arg: u8, v: u64, equal: Label, differ: Label) {
    let hi = b.label();
    b.jump(JMP_JEQ_K, v as u32, hi, differ);
    b.mark(hi);
    b.op(LD_W_ABS, off_arg_hi(arg));
    b.jump(JMP_JEQ_K, (v >> 32) as u32, equal, differ);
}

/// Runs `prog` on a syscall the way the kernel would, for tests and for
/// the policy table in docs/policy.md: returns the seccomp action.
pub fn evaluate(prog: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    evaluate_at(prog, arch, nr, 0, args)
}

/// [`evaluate`] with the record's instruction pointer set to `ip` (the
/// address after the guest's `syscall` instruction), which the kernel
/// hands every filter and ours never reads: where a call is made from
/// changes nothing.
pub fn evaluate_at(prog: &[Insn], arch: u32, nr: u32, ip: u64, args: [u64; 6]) -> u32 {
    let mut data = [0u32; 16];
    data[0] = nr;
    data[1] = arch;
    data[2] = ip as u32;
    data[3] = (ip >> 32) as u32;
    for (i, a) in args.iter().enumerate() {
        data[4 + 2 * i] = *a as u32;
        data[5 + 2 * i] = (*a >> 32) as u32;
    }
    let (mut a, mut pc) = (0u32, 0usize);
    loop {
        let Some(i) = prog.get(pc) else {
            return SECCOMP_RET_KILL_PROCESS;
        };
        pc += 1;
        match i.code {
            LD_W_ABS => a = data.get(i.k as usize / 4).copied().unwrap_or(0),
            ALU_AND_K => a &= i.k,
            RET_K => return i.k,
            JMP_JA => pc += i.k as usize,
            JMP_JEQ_K | JMP_JGE_K | JMP_JSET_K => {
                let hit = match i.code {
                    JMP_JEQ_K => a == i.k,
                    JMP_JGE_K => a >= i.k,
                    _ => a & i.k != 0,
                };
                pc += usize::from(if hit { i.jt } else { i.jf });
            }
            _ => return SECCOMP_RET_KILL_PROCESS,
        }
    }
}

#[cfg(test)]
mod forged_marks;
#[cfg(test)]
mod tests;
