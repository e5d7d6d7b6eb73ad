//! The pool with a terminal: a client whose stdin is a terminal gives its
//! command the sandbox's own pseudo-terminal, relayed to the client's in
//! raw mode, as a cold `supervisor run` does (`tests/cli/terminal.rs`). The
//! terminal here is `script`'s pty; the same script runs natively, cold
//! and pooled, and the outputs must agree. A client without a terminal
//! keeps its descriptors as they are (`tests/pool/commands.rs`).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

use common::pool::Pool;
use common::*;

/// What a program on a terminal can tell of it.
const SCRIPT: &str = "test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; \
                      test -t 2 && echo stderr-tty; tty >/dev/null && echo ttyname-ok; \
                      echo via-dev-tty >/dev/tty; stty size; echo done";

/// `command` (one shell line) on a fresh terminal of `script`'s: its
/// output, with the terminal's line ends made plain, and its exit code.
/// `script`'s stdin stays open until the command ends (at its end of
/// input `script` would type an end-of-file character on the terminal).
fn on_terminal(command: &str) -> (Option<i32>, String) {
    let mut child = script(command);
    let guard = kill_after(child.id(), TIMEOUT);
    let stdin = child.stdin.take();
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("script's output");
    let status = child.wait().expect("wait for script");
    drop((stdin, guard));
    let text = String::from_utf8_lossy(&out).replace("\r\n", "\n");
    (status.code(), text)
}

/// `script` running `command` on its terminal, in /, with its stdin and
/// stdout ours to write and read.
fn script(command: &str) -> Child {
    Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env_clear()
        .env("PATH", PATH)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script")
}

fn supervisor(flags: &str, argv: &str) -> String {
    format!("{} run {flags} -- {argv}", bin().display())
}

#[test]
fn a_client_on_a_terminal_gives_its_command_one_as_run_does() {
    if !have("script") {
        skip!("script (util-linux) not installed");
    }
    let pool = Pool::start(&["--size", "1"]);
    let argv = format!("/bin/sh -c '{SCRIPT}'");
    let (_, native) = on_terminal(&argv);
    assert_eq!(
        native, "stdin-tty\nstdout-tty\nstderr-tty\nttyname-ok\nvia-dev-tty\n0 0\ndone\n",
        "fixture"
    );
    let (cold_code, cold) = on_terminal(&supervisor("", &argv));
    let pooled_flags = format!("--pool {}", pool.socket.display());
    let (code, pooled) = on_terminal(&supervisor(&pooled_flags, &argv));
    assert_same("cold run on a terminal", &native, &cold);
    assert_same("pooled run on a terminal", &native, &pooled);
    assert_eq!((code, cold_code), (Some(0), Some(0)));
    // The window size comes from the client's terminal.
    let sized = format!(
        "stty rows 31 cols 97; {}",
        supervisor(&pooled_flags, "stty size")
    );
    assert_eq!(on_terminal(&sized).1, "31 97\n");
}

/// Ctrl-C typed on the client's terminal reaches the command through the
/// sandbox's pty (its line discipline signals the foreground group): the
/// run ends as `run`'s does, 130 and the one line.
#[test]
fn ctrl_c_on_the_client_s_terminal_interrupts_the_command() {
    if !have("script") {
        skip!("script (util-linux) not installed");
    }
    let pool = Pool::start(&["--size", "1"]);
    let pooled_flags = format!("--pool {}", pool.socket.display());
    let line = format!(
        "{}; echo status=$?",
        supervisor(&pooled_flags, "/bin/sh -c 'echo up; exec sleep 60'")
    );
    let mut child = script(&line);
    let guard = kill_after(child.id(), TIMEOUT);
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read");
    assert_eq!(first.trim_end(), "up", "the command did not start");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"\x03").expect("type Ctrl-C");
    let mut rest = String::new();
    for l in out.lines() {
        let l = l.expect("read");
        rest.push_str(&l);
        rest.push('\n');
        if l.starts_with("status=") {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    drop(guard);
    assert!(
        rest.contains("killed by signal 2 (SIGINT)") && rest.contains("status=130"),
        "{rest}"
    );
}
