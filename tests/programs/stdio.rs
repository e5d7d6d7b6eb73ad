//! A guest's reopen of its own stdio by name (`/dev/stdin`, `/dev/stdout`,
//! `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`) when the invoker gave it
//! pipes: `cat /dev/stdin`, `echo x > /dev/stderr`, Python's
//! `open('/dev/stdin')`. A root invoker's pipes are the host root's, mode
//! 0600, and root's guest runs as ids of a range of its own: the launch
//! (and the pool's sandbox) widen such a pipe so that the reopen works as
//! the owner's does natively (`launch/host_stdio.rs`). Each case is
//! compared with the same script run natively with the same pipes.

use crate::common;
use common::pool::Pool;
use common::*;

const SCRIPT: &str = r#"
read first < /dev/stdin
echo "first: $first"
read second < /proc/self/fd/0
echo "second: $second" > /dev/stdout
echo "to stderr" > /dev/stderr
echo "by fd" >> /dev/fd/1
echo "by proc" > /proc/self/fd/2
/usr/bin/python3 -c 'import sys; print("python:", open("/dev/stdin").read().strip()); print("py err", file=open("/dev/stderr", "w"))'
cat /dev/stdin
echo "end"
"#;

const INPUT: &[u8] = b"one\ntwo\nthree\n";

fn compare(sup: &[String]) {
    if !is_root() {
        skip!("the pipes are a root invoker's only when the test is root");
    }
    let run = Run::sh(SCRIPT, &[]).stdin(INPUT).sup(sup);
    let native = run.native();
    let supervised = run.supervised();
    assert_eq!(native.code, Some(0), "{}", native.dump());
    assert!(native.stdout.contains("python: three"), "{}", native.dump());
    assert_eq!(
        (supervised.code, &supervised.stdout, &supervised.stderr),
        (native.code, &native.stdout, &native.stderr),
        "supervised:\n{}\nnative:\n{}",
        supervised.dump(),
        native.dump()
    );
}

#[test]
fn a_guest_reopens_its_stdio_pipes_as_natively() {
    compare(&[]);
}

#[test]
fn a_pooled_guest_reopens_its_stdio_pipes_as_natively() {
    if !is_root() {
        skip!("the pipes are a root invoker's only when the test is root");
    }
    let pool = Pool::start(&[]);
    compare(&pool.flag());
}
