//! The pool's client on its fast path (`src/fast_client.c`): the binary
//! enters there, and a command it serves before the C library starts
//! comes out as the Rust client (`supervisor/src/pool/client.rs`) gives
//! it. A harmless `--timeout` makes the Rust client serve the same
//! command (any flag but `--pool` does), so each case runs both ways
//! against one pool; the cold `supervisor run` is the reference for what
//! neither client decides (pool.rs checks the rest of the pool through
//! the fast path, since its commands take it).
//!
//! That the common command line really takes it shows in a waiting
//! client's memory map: no `[heap]`, since the C library never started
//! (the Rust client's map has one, which the test checks too).
//!
//! Also: the command lines and stdio the fast path leaves to the Rust
//! client (a closed descriptor, a device it would copy, a bad or missing
//! `--pool`) still work, or fail with clap's or the client's own line.
//! `wire.rs`: both clients against a stand-in for the pool, byte for byte.

use crate::common;

mod wire;

use std::process::Command;

use common::pool::Pool;
use common::*;

/// The Rust client: the same command with a flag the fast path leaves.
const SLOW: [&str; 2] = ["--timeout", "3600"];

fn fast_and_slow(pool: &Pool, run: &Run) -> (Out, Out) {
    let fast = run.clone().sup(&pool.flag()).supervised();
    let slow = run.clone().sup(&pool.flag()).sup(&SLOW).supervised();
    (fast, slow)
}

fn same(what: &str, fast: &Out, slow: &Out) {
    assert_eq!(
        (fast.code, fast.signal, &fast.stdout_bytes, &fast.stderr),
        (slow.code, slow.signal, &slow.stdout_bytes, &slow.stderr),
        "{what}: fast {} slow {}",
        fast.dump(),
        slow.dump()
    );
}

/// The address `readelf -h` gives as the entry point, and `nm`'s of
/// `symbol`; `None` without binutils.
fn entry_and_symbol(symbol: &str) -> Option<(u64, u64)> {
    let bin = bin();
    let header = Command::new("readelf").arg("-h").arg(&bin).output().ok()?;
    let header = String::from_utf8_lossy(&header.stdout).into_owned();
    let entry = header
        .lines()
        .find_map(|l| l.trim().strip_prefix("Entry point address:"))?;
    let entry = u64::from_str_radix(entry.trim().trim_start_matches("0x"), 16).ok()?;
    let symbols = Command::new("nm").arg(&bin).output().ok()?;
    let address = String::from_utf8_lossy(&symbols.stdout)
        .lines()
        .find(|l| l.ends_with(&format!(" {symbol}")))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok());
    Some((entry, address.unwrap_or(u64::MAX)))
}

#[test]
fn the_binary_enters_at_the_fast_client() {
    let Some((entry, sv_entry)) = entry_and_symbol("sv_entry") else {
        skip!("no readelf or nm");
    };
    assert_eq!(
        entry, sv_entry,
        "the entry point is not sv_entry: build.rs did not link src/fast_client.c"
    );
}

#[test]
fn exit_codes_lines_and_output_are_the_rust_client_s() {
    let pool = Pool::start(&[]);
    let cases: &[&[&str]] = &[
        &["/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
        &["/bin/sh", "-c", "kill -TERM $$"],
        &["/bin/sh", "-c", "exit 255"],
        &["/etc/passwd"],
        &["no-such-command-here"],
        // The answer's line carries JSON escapes: a quote, a backslash, a
        // tab, a control character, and UTF-8.
        &["no-such \"command\" \\ \t \u{1} é ✓"],
        &["/usr/bin/env"],
        &["/bin/echo", "", "two words", "-n", "--pool", "x"],
    ];
    for argv in cases {
        let run = Run::new(argv).env("HOME", "/home/x").env("TERM", "dumb");
        let (fast, slow) = fast_and_slow(&pool, &run);
        same(&format!("{argv:?}"), &fast, &slow);
        let cold = run.supervised();
        assert_eq!(
            (fast.code, &fast.stdout, &fast.stderr),
            (cold.code, &cold.stdout, &cold.stderr),
            "{argv:?}: fast {} cold {}",
            fast.dump(),
            cold.dump()
        );
    }
}

#[test]
fn arguments_and_environment_arrive_byte_for_byte() {
    let pool = Pool::start(&[]);
    // Not UTF-8, and long: 500 arguments of 40 bytes (70 KB of JSON).
    let mut argv: Vec<std::ffi::OsString> = vec!["/bin/sh".into(), "-c".into()];
    argv.push(r#"for a in "$@"; do printf '%s\n' "$a"; done | od -c | tail -3; env | sort"#.into());
    argv.push("sh".into());
    use std::os::unix::ffi::OsStringExt;
    argv.push(std::ffi::OsString::from_vec(vec![0xff, 0xfe, b'a', 0x80]));
    for i in 0..500 {
        argv.push(format!("{i:040}").into());
    }
    let run = Run::new(&argv)
        .env("LANG", "C.UTF-8")
        .env("NOT_PASSED", "x");
    let (fast, slow) = fast_and_slow(&pool, &run);
    let fast = fast.ok("fast");
    same("long argv", &fast, &slow);
    assert!(!fast.stdout.contains("NOT_PASSED"), "{}", fast.dump());
    assert!(fast.stdout.contains("LANG=C.UTF-8"), "{}", fast.dump());
}

#[test]
fn a_request_too_long_for_the_pool_is_the_rust_client_s_line() {
    let pool = Pool::start(&[]);
    // 300 KB of arguments: more than a message of the protocol holds.
    let big = "y".repeat(100_000);
    let run = Run::new(&["/bin/true", &big, &big, &big]);
    let (fast, slow) = fast_and_slow(&pool, &run);
    same("too long", &fast, &slow);
    assert_eq!(fast.code, Some(125), "{}", fast.dump());
    assert!(
        fast.stderr.contains("too long for the pool"),
        "{}",
        fast.dump()
    );
}

/// `run` through the pool, the client started by `sh -c PREFIX` (which
/// closes or replaces a descriptor first).
fn pooled_after(pool: &Pool, prefix: &str, script: &str, stdin: &[u8]) -> Out {
    let mut run = Run::sh(script, &[]).sup(&pool.flag()).stdin(stdin);
    run.wrap = ["/bin/sh", "-c", &format!("{prefix} exec \"$@\""), "sh"]
        .map(Into::into)
        .to_vec();
    run.supervised()
}

#[test]
fn stdio_the_fast_path_leaves_is_served_as_before() {
    let pool = Pool::start(&[]);
    let names_stdin = "ls -l /proc/self/fd/0 | sed 's/.*-> //';";
    // (what, the client's shell prefix, the guest's script, stdin, stdout)
    let cases: [(&str, &str, String, &[u8], &str); 3] = [
        // A closed stdin: the guest gets /dev/null, as under a cold run.
        (
            "closed stdin",
            "exec 0<&-;",
            format!("{names_stdin} cat; echo done"),
            b"",
            "/dev/null\ndone\n",
        ),
        // /dev/zero: a memory device goes as it is (the view's node).
        (
            "/dev/zero",
            "exec 0</dev/zero;",
            format!("{names_stdin} head -c 3 | od -An -c"),
            b"",
            "/dev/zero\n  \\0  \\0  \\0\n",
        ),
        // A pipe: the client's own, as it is.
        (
            "pipe",
            "",
            "cat; echo done".into(),
            b"through\n",
            "through\ndone\n",
        ),
    ];
    for (what, prefix, script, stdin, stdout) in cases {
        let out = pooled_after(&pool, prefix, &script, stdin).ok(what);
        assert_eq!(out.stdout, stdout, "{what}: {}", out.dump());
    }
}

#[test]
fn command_lines_the_fast_path_leaves_are_clap_s() {
    let pool = Pool::start(&[]);
    let socket = pool.socket.display().to_string();
    let raw = |args: &[&str]| Run::new(&["/bin/true"]).supervisor_raw(args);
    let one_line = |out: &Out, why: &str| {
        assert_eq!(out.code, Some(125), "{}", out.dump());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
        assert!(out.stderr.contains(why), "{}", out.dump());
    };
    // --pool without its value, or an empty one, or twice.
    one_line(&raw(&["run", "--pool"]), "a value is required");
    one_line(&raw(&["run", "--pool=", "/bin/true"]), "--pool");
    let twice = raw(&["run", "--pool", &socket, "--pool", &socket, "/bin/true"]);
    one_line(&twice, "cannot be used multiple times");
    // No command.
    one_line(&raw(&["run", "--pool", &socket, "--"]), "no command given");
    // `--pool=SOCKET` and a command without `--` take the fast path.
    let joined = raw(&[
        "run",
        &format!("--pool={socket}"),
        "/bin/sh",
        "-c",
        "exit 4",
    ]);
    assert_eq!(joined.code, Some(4), "{}", joined.dump());
    // A socket path too long for an address: the Rust client's line.
    let long = format!("/{}", "s".repeat(200));
    let too_long = raw(&["run", "--pool", &long, "--", "/bin/true"]);
    assert_eq!(too_long.code, Some(125), "{}", too_long.dump());
    assert_eq!(too_long.stderr.lines().count(), 1, "{}", too_long.dump());
    // Everything else still works as it did.
    let version = raw(&["--version"]);
    assert!(
        version.stdout.starts_with("supervisor "),
        "{}",
        version.dump()
    );
}

/// Whether a client of `pool` with `flags`, waiting for its command's
/// answer, has a C library heap: the fast path never starts the C
/// library, so its memory map has no `[heap]`; the Rust client's has.
fn waiting_client_has_heap(pool: &Pool, flags: &[&str]) -> bool {
    let (mut child, _out) = pool.client_running(flags, "echo up; exec sleep 60");
    let guard = kill_after(child.id(), TIMEOUT);
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", child.id())).expect("maps");
    let _ = child.kill();
    let _ = child.wait();
    drop(guard);
    maps.lines().any(|l| l.ends_with("[heap]"))
}

#[test]
fn the_common_command_line_takes_the_fast_path() {
    let pool = Pool::start(&[]);
    assert!(
        !waiting_client_has_heap(&pool, &[]),
        "`run --pool S -- CMD` went through the C library: the fast path was not taken"
    );
    // The check tells the two clients apart.
    assert!(
        waiting_client_has_heap(&pool, &SLOW),
        "the Rust client's map shows no [heap]: this test no longer tells the clients apart"
    );
}
