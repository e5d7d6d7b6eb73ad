//! A pooled command's stdout and stderr reach their end when the client
//! exits, as a native command's do when it exits: the sandbox gives the
//! client's descriptors back before it answers, not at its own exit after
//! the teardown. A caller that reads a command's output to its end (a
//! shell's `$(...)`, Python's `capture_output`) waits for nothing more.

use crate::common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

use common::pool::Pool;
use common::*;
use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// Runs `argv` with stdout and stderr on one pipe, waits for it, then
/// reads the pipe without blocking: its text, and whether the pipe had
/// ended (every write end closed) by the time the process was reaped.
fn output_ended_at_exit(argv: &[String]) -> (String, bool) {
    let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC).expect("pipe2");
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end.try_clone().expect("dup")))
        .stderr(Stdio::from(write_end))
        .spawn()
        .expect("spawn");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{argv:?}: {status}");
    fcntl(read_end.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).expect("O_NONBLOCK");
    let mut pipe = std::fs::File::from(read_end);
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let ended = loop {
        match pipe.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(e) => panic!("read: {e}"),
        }
    };
    (String::from_utf8_lossy(&text).into_owned(), ended)
}

#[test]
fn a_pooled_command_s_output_ends_when_its_client_exits_as_natively() {
    let script = "echo out; echo err >&2";
    let sh = |prefix: Vec<String>| -> Vec<String> {
        let tail = ["/bin/sh", "-c", script].map(String::from);
        prefix.into_iter().chain(tail).collect()
    };
    let (native, ended) = output_ended_at_exit(&sh(vec![]));
    assert!(ended, "natively the pipe ends with the command");
    let pool = Pool::start(&[]);
    let bin = bin().display().to_string();
    // The fast client, and the Rust client without and with a report
    // (the answer then comes after the teardown).
    let clients: [&[&str]; 3] = [&[], &["--env", "SV_STDIO=1"], &["--report=/dev/null"]];
    for flags in clients {
        let mut prefix = vec![bin.clone(), "run".into()];
        prefix.extend(pool.flag());
        prefix.extend(flags.iter().map(|f| f.to_string()));
        prefix.push("--".into());
        for round in 0..5 {
            let (text, ended) = output_ended_at_exit(&sh(prefix.clone()));
            assert_eq!(text, native, "{flags:?} round {round}");
            assert!(
                ended,
                "{flags:?} round {round}: the client has exited but its stdout and stderr \
                 are still held open (by the pool's sandbox)"
            );
        }
    }
}
