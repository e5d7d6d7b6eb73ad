//! `supervisor sessions`, the CLI for humans: it creates, runs (the
//! command's output and exit code as its own), copies both ways with a
//! progress line, lists and removes.

use crate::sessions_daemon::Daemon;

#[test]
fn the_cli_lists_runs_copies_and_removes() {
    let d = Daemon::start();
    let cli = |args: &[&str]| d.sessions_cli(args);
    let out = cli(&["create"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = cli(&[
        "exec",
        &id,
        "--",
        "sh",
        "-c",
        "echo to-out; echo to-err >&2; exit 4",
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"to-out\n");
    assert_eq!(out.stderr, b"to-err\n");
    let dir = crate::common::Tree::new();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    let out = cli(&[
        "cp",
        dir.join("big.bin").to_str().unwrap(),
        &format!("{id}:up/big.bin"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("upload:"),
        "no progress line"
    );
    let back = dir.join("back.bin");
    let out = cli(&["cp", &format!("{id}:up/big.bin"), back.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == big);
    let out = cli(&["ls"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("running")),
        "{table}"
    );
    assert!(cli(&["rm", &id]).status.success());
    let table = String::from_utf8(cli(&["ls"]).stdout).unwrap();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("deleted")),
        "{table}"
    );
    let out = cli(&["exec", "0123456789abcdef", "--", "true"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
}
