//! A static program that turns against the static loader's rewritten
//! sites (`tests/c/trampoline_hostile.c`, built `cc -static`): a seeded
//! fuzz of 4,000 calls made both through the trampoline's entry from an
//! address that is no site and directly, with forged fast-read and loader
//! marks among random registers; forged-mark opens; children that tear
//! the site's bytes, scribble over the trampoline page, aim its entry at
//! their own forged-mark open and jump into the middle of a slot and of
//! the entry; and JIT code with an open site in an anonymous page, which
//! the loader leaves as written. Natively, supervised with the loader's
//! rewriting (the default) and with `--no-rewrite`, every line but the
//! trampoline's own ("route ...") is the same: the filter's decision for
//! a call does not depend on the route it came by, a forged mark buys
//! nothing but a plain read open passing (refused by the fence where it
//! names the kernel's /proc), and whatever a program does to its own
//! trampoline hurts it alone.

use crate::common;
use crate::fast_reads::tree;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn hostile() -> PathBuf {
    built_once("trampoline_hostile", |out| {
        let mut cc = Command::new("cc");
        cc.args(["-O1", "-Wall", "-static", "-pthread", "-o"])
            .arg(out)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/trampoline_hostile.c"));
        cc
    })
}

/// What every run prints, natively and supervised.
const LINES: &[&str] = &[
    "50 opens: 1",
    "fuzzed calls: 4000, with a forged fast-read mark: 1, answers that differ: 0",
    "a forged mark buys nothing: 1",
    "jit code left as written, its opens right: 1",
    "2000 opens after: 1",
];

fn but_the_route(out: &str) -> Vec<&str> {
    out.lines().filter(|l| !l.starts_with("route ")).collect()
}

fn run(tag: &str, flags: &[&str]) -> (Out, Out) {
    let dir = tree(tag);
    let run = Run::new(&[hostile().as_os_str(), dir.path().as_os_str()])
        .sup(&c_mounts())
        .sup(flags)
        .rw(dir.path());
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    native.assert_lines(LINES);
    native.assert_lines(&["route trampoline found: 0"]);
    assert_eq!(
        but_the_route(&supervised.stdout),
        but_the_route(&native.stdout),
        "{}",
        supervised.dump()
    );
    (native, supervised)
}

#[test]
fn a_hostile_program_gets_nothing_from_its_trampoline() {
    let (_, supervised) = run("hostile", &[]);
    if landlock_abi() < 1 {
        supervised.assert_lines(&["route trampoline found: 0"]);
        return;
    }
    supervised.assert_lines(&[
        "route trampoline found: 1",
        "route torn site, child ended clean: 1",
        "route scribbled trampoline page, child ended clean: 1",
        "route entry aimed at a forged-mark open, refused: 1",
        "route jumps into a slot and the entry, children ended: 1",
        "route forged-mark open of /proc/self/status after them: errno 13",
    ]);
}

#[test]
fn a_hostile_program_without_rewriting_matches_native() {
    let (_, supervised) = run("hostile-norw", &["--no-rewrite"]);
    supervised.assert_lines(&["route trampoline found: 0"]);
}
