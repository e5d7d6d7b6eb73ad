//! A `supervisor run` the test drives by hand: stdin written line by
//! line, stdout read line by line while the test looks at the sandbox
//! from outside, bounded by [`kill_after`].
//!
//! Owns: spawning with piped stdio and the bound, and the successful end.
//! Not: what the test writes, reads or asserts meanwhile.

use super::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, ChildStdout};

/// The guest's stdout, line by line.
pub type Lines = std::io::Lines<BufReader<ChildStdout>>;

/// `supervisor run -- ARGV` from `cwd` with piped stdio, bounded by
/// [`TIMEOUT`]: the child, its bound, its stdin and its stdout's lines.
pub fn interactive(argv: &[&str], cwd: &str) -> (Child, KillAfter, ChildStdin, Lines) {
    let mut child = Command::new(bin())
        .arg("run")
        .arg("--")
        .args(argv)
        .env_clear()
        .env("PATH", PATH)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let bound = kill_after(child.id(), TIMEOUT);
    let stdin = child.stdin.take().expect("piped stdin");
    let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    (child, bound, stdin, lines)
}

/// Closes the guest's stdin and waits for a successful end.
pub fn finish(child: Child, bound: KillAfter, stdin: ChildStdin) {
    drop(stdin);
    drop(bound);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
