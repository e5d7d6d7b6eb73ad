//! The command line: bad input (exit 125/126/127 with one "supervisor: "
//! line), `--help`, exit-status and signal passthrough, stdio passthrough,
//! the clean environment, --hostname, --report (and its `policy` and
//! `supervisor_error` reasons), and the guest's uid.
//! What the guest sees (the view, mounts, quotas) is in tests/fs/view.rs.

use crate::common;
use common::*;

fn sup(args: &[&str]) -> Out {
    Run::new(&["unused"]).supervisor_raw(args)
}

#[test]
fn bad_flags_exit_125() {
    let missing = "/nonexistent-sbx-host-path";
    let cases: &[(&str, &[&str])] = &[
        (
            "unknown flag",
            &["run", "--no-such-flag", "--", "/bin/true"],
        ),
        ("unknown subcommand", &["frobnicate"]),
        ("no command at all", &["run"]),
        ("no command after --", &["run", "--"]),
        ("ro empty host", &["run", "--ro", ":/x", "--", "/bin/true"]),
        (
            "ro empty guest",
            &["run", "--ro", "/usr:", "--", "/bin/true"],
        ),
        (
            "ro relative guest",
            &["run", "--ro", "/usr:relative/x", "--", "/bin/true"],
        ),
        (
            "rw missing host",
            &["run", "--rw", &format!("{missing}:/x"), "--", "/bin/true"],
        ),
        (
            "ro missing host",
            &["run", "--ro", &format!("{missing}:/x"), "--", "/bin/true"],
        ),
        (
            "tmpfs bad size",
            &["run", "--tmpfs", "/scratch:lots", "--", "/bin/true"],
        ),
        (
            "tmpfs relative",
            &["run", "--tmpfs", "scratch", "--", "/bin/true"],
        ),
        (
            "disk bad size",
            &["run", "--disk", "huge", "--", "/bin/true"],
        ),
        ("env empty name", &["run", "--env", "=x", "--", "/bin/true"]),
        (
            "workdir missing",
            &[
                "run",
                "--workdir",
                "/nonexistent-sbx-dir",
                "--",
                "/bin/true",
            ],
        ),
    ];
    let mut bad = Vec::new();
    for (what, args) in cases {
        let out = sup(args);
        let lines: Vec<&str> = out.stderr.lines().collect();
        if out.code != Some(125) || lines.len() != 1 || !lines[0].starts_with("supervisor: ") {
            bad.push(format!(
                "{what} {args:?}: expected 125 and one \"supervisor: \" line, got\n{}",
                out.dump()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
    // The line points at the help of the subcommand given, and says what
    // was missing.
    let hints: &[(&[&str], &str)] = &[
        (
            &["run", "--no-such-flag", "--", "/bin/true"],
            "(see 'supervisor run --help')",
        ),
        (
            &["pool", "--socket", "/nonexistent-sbx/s", "--size", "0"],
            "(see 'supervisor pool --help')",
        ),
        (&["frobnicate"], "(see 'supervisor --help')"),
        (
            &["state"],
            "not provided: <ID> (see 'supervisor state --help')",
        ),
    ];
    for (args, hint) in hints {
        let out = sup(args);
        assert_eq!(out.code, Some(125), "{args:?}:\n{}", out.dump());
        assert!(
            out.stderr.trim_end().ends_with(hint),
            "{args:?}:\n{}",
            out.dump()
        );
    }
    // No arguments at all: usage (several lines allowed), and 125.
    let out = sup(&[]);
    assert_eq!(out.code, Some(125), "no arguments:\n{}", out.dump());
}

#[test]
fn command_not_found_127_and_not_executable_126() {
    let t = Tree::new();
    let noexec = t.file("noexec.sh", "#!/bin/sh\necho hi\n");
    let badinterp = t.file("badinterp.sh", "#!/nonexistent/interp\n");
    std::fs::set_permissions(
        &badinterp,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let r = Run::new(&["x"]).cwd(t.path());
    let cases: &[(&str, &str, i32)] = &[
        ("missing absolute", "/nonexistent/cmd", 127),
        ("missing in PATH", "no-such-command-sbx", 127),
        ("not executable", noexec.to_str().unwrap(), 126),
        ("a directory", "/usr", 126),
        ("bad #! interpreter", badinterp.to_str().unwrap(), 127),
    ];
    let mut bad = Vec::new();
    for (what, cmd, code) in cases {
        let out = r.supervisor_raw(&["run", "--", cmd]);
        let lines: Vec<&str> = out.stderr.lines().collect();
        if out.code != Some(*code) || lines.len() != 1 || !lines[0].starts_with("supervisor: ") {
            bad.push(format!(
                "{what} ({cmd}): expected {code} and one \"supervisor: \" line, got\n{}",
                out.dump()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[test]
fn help_lists_every_flag() {
    let out = sup(&["run", "--help"]);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    for flag in [
        "--ro",
        "--rw",
        "--tmpfs",
        "--workdir",
        "--env",
        "--hostname",
        "--disk",
        "--writable-system",
        "--report",
        "--no-rewrite",
    ] {
        assert!(
            out.stdout.contains(flag),
            "`run --help` does not mention {flag}:\n{}",
            out.stdout
        );
    }
    let top = sup(&["--help"]);
    assert_eq!(top.code, Some(0), "{}", top.dump());
    assert!(
        top.stdout.contains("run"),
        "`--help` does not mention `run`:\n{}",
        top.stdout
    );
}

#[test]
fn exit_codes_pass_through() {
    for code in [0, 1, 3, 42, 125, 126, 127, 255] {
        let out = Run::sh(&format!("exit {code}"), &[]).supervised();
        assert_eq!(out.code, Some(code), "exit {code}:\n{}", out.dump());
        assert!(
            out.stderr.is_empty(),
            "a normal exit must not add to stderr:\n{}",
            out.dump()
        );
    }
}

#[test]
fn signal_death_is_128_plus_n() {
    for (sig, name) in [(9, "KILL"), (15, "TERM"), (6, "ABRT"), (11, "SEGV")] {
        let out = Run::sh(&format!("kill -{name} $$"), &[]).supervised();
        assert_eq!(out.code, Some(128 + sig), "kill -{name}:\n{}", out.dump());
        assert!(
            out.stderr.lines().any(|l| l.starts_with("supervisor: ")),
            "death by signal must be explained in one \"supervisor: \" line:\n{}",
            out.dump()
        );
    }
}

#[test]
fn stdio_passes_through() {
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let out = Run::new(&["cat"]).stdin(&data).supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.stdout_bytes == data,
        "cat changed {} bytes of stdin into {} bytes",
        data.len(),
        out.stdout_bytes.len()
    );
    let out = Run::sh("echo to-out; echo to-err >&2; read x; echo got $x", &[])
        .stdin(b"line\n")
        .supervised();
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("to-out\ngot line\n", "to-err\n"),
        "{}",
        out.dump()
    );
    let out = Run::sh("cat >/dev/null; echo eof", &[]).supervised();
    assert_eq!(out.stdout, "eof\n", "stdin EOF: {}", out.dump());
}

#[test]
fn environment_is_clean() {
    let r = Run::new(&["/usr/bin/env"])
        .env("PATH", "/usr/bin:/bin:/opt/sbx-test")
        .env("LANG", "C")
        .env("TERM", "xterm-sbx")
        .env("HOME", "/root")
        .env("SECRET_TOKEN", "leak")
        .env("COPY_ME", "copied")
        .env("LD_PRELOAD", "/nonexistent.so")
        .sup(&[
            "--env",
            "ADDED=1",
            "--env",
            "COPY_ME",
            "--env",
            "WITH_EQ=a=b",
        ]);
    let out = r.supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let vars: std::collections::BTreeMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .collect();
    let allowed = [
        "PATH", "HOME", "LANG", "TERM", "ADDED", "COPY_ME", "WITH_EQ",
    ];
    for k in vars.keys() {
        assert!(
            allowed.contains(k),
            "host variable {k} reached the guest:\n{}",
            out.stdout
        );
    }
    assert_eq!(
        vars.get("PATH"),
        Some(&"/usr/bin:/bin:/opt/sbx-test"),
        "PATH comes from the host"
    );
    assert_eq!(vars.get("LANG"), Some(&"C"));
    assert_eq!(vars.get("TERM"), Some(&"xterm-sbx"));
    assert_eq!(vars.get("ADDED"), Some(&"1"));
    assert_eq!(vars.get("COPY_ME"), Some(&"copied"));
    assert_eq!(vars.get("WITH_EQ"), Some(&"a=b"));
    // TERM only when set.
    let out = Run::new(&["/usr/bin/env"]).supervised();
    assert!(
        !out.stdout.contains("TERM="),
        "TERM set although the host has none:\n{}",
        out.stdout
    );
}

#[test]
fn hostname_default_and_flag() {
    let out = Run::new(&["uname", "-n"]).supervised();
    assert_eq!(out.stdout, "sandbox\n", "{}", out.dump());
    let out = Run::sh("hostname; cat /proc/sys/kernel/hostname", &[])
        .sup(&["--hostname", "grader-7"])
        .supervised();
    assert_eq!(out.stdout, "grader-7\ngrader-7\n", "{}", out.dump());
}

#[test]
fn guest_ids_are_the_invokers() {
    let (uid, gid) = ids();
    let out = Run::sh("id -u; id -g", &[]).supervised();
    assert_eq!(out.stdout, format!("{uid}\n{gid}\n"), "{}", out.dump());
}

#[test]
fn report_contents() {
    let t = Tree::new();
    let rep = t.join("r.json");
    let rep_s = rep.display().to_string();
    // /proc/uptime is the sandbox's: its open is served (the loader's own
    // opens, and /etc/hostname's, pass the filter marked).
    let out = Run::sh("cat /etc/hostname /proc/uptime >/dev/null; exit 3", &[])
        .sup(&["--report", &rep_s])
        .supervised();
    assert_eq!(out.code, Some(3), "{}", out.dump());
    let r = read_report(&rep);
    assert_eq!(r["version"], 2, "{r}");
    assert!(
        r["processes_started"].as_u64().is_some_and(|n| n >= 2),
        "{r}"
    );
    assert!(
        r["output"]["bytes"].is_null(),
        "not measured without --output-limit: {r}"
    );
    assert_eq!(r["exit_code"], 3, "{r}");
    assert!(r["signal"].is_null(), "{r}");
    assert_eq!(r["reason"], "exited", "{r}");
    assert!(r["wall_time_s"].as_f64().is_some_and(|w| w >= 0.0), "{r}");
    assert!(
        r["cpu_time_s"]["user"].as_f64().is_some_and(|w| w >= 0.0),
        "{r}"
    );
    assert!(
        r["cpu_time_s"]["system"].as_f64().is_some_and(|w| w >= 0.0),
        "{r}"
    );
    assert!(
        r["syscalls"]["serviced"]["openat"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "no openat serviced: {r}"
    );
    assert!(r["syscalls"]["denied"].is_object(), "{r}");

    let out = Run::sh("kill -9 $$", &[])
        .sup(&["--report", &rep_s])
        .supervised();
    assert_eq!(out.code, Some(137), "{}", out.dump());
    let r = read_report(&rep);
    assert!(r["exit_code"].is_null(), "{r}");
    assert_eq!(r["signal"], 9, "{r}");
    assert_eq!(r["reason"], "signaled", "{r}");
}

/// A call through a foreign ABI (i386's `int $0x80`, an x32 number) runs
/// natively; under the sandbox the filter kills the process: 159 (SIGSYS),
/// one line naming the policy, and the report's reason `policy`.
#[test]
fn a_forbidden_abi_is_the_policy_reason() {
    let t = Tree::new();
    let rep = t.join("r.json");
    let rep_s = rep.display().to_string();
    let prog = c_prog("foreign_abi").display().to_string();
    for abi in ["i386", "x32"] {
        let run = Run::new(&[&prog, abi]).sup(&c_mounts());
        let native = run.native();
        assert_eq!(native.code, Some(0), "{abi} natively: {}", native.dump());
        assert!(native.stdout.starts_with("returned"), "{}", native.dump());
        let out = run.sup(&["--report", &rep_s]).supervised();
        assert_eq!(out.code, Some(128 + libc::SIGSYS), "{abi}: {}", out.dump());
        assert!(out.stdout.is_empty(), "{abi} ran on: {}", out.dump());
        assert!(
            out.stderr.contains("a call the sandbox's policy forbids"),
            "{abi}: {}",
            out.dump()
        );
        let r = read_report(&rep);
        assert_eq!(r["reason"], "policy", "{abi}: {r}");
        assert_eq!(r["signal"], libc::SIGSYS, "{abi}: {r}");
    }
}

/// A run the supervisor cannot set up (a --workdir that does not exist)
/// exits 125 with one line, and its report says `supervisor_error`.
#[test]
fn a_setup_failure_is_the_supervisor_error_reason() {
    let t = Tree::new();
    let rep = t.join("r.json");
    let rep_s = rep.display().to_string();
    let out = Run::new(&["/bin/true"])
        .sup(&["--report", &rep_s, "--workdir", "/no/such/dir"])
        .supervised();
    assert_eq!(out.code, Some(125), "{}", out.dump());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.dump());
    assert!(lines[0].starts_with("supervisor: "), "{}", out.dump());
    let r = read_report(&rep);
    assert_eq!(r["reason"], "supervisor_error", "{r}");
    assert!(r["exit_code"].is_null(), "no guest ran: {r}");
    assert!(
        r["message"]
            .as_str()
            .is_some_and(|m| m.contains("/no/such/dir")),
        "{r}"
    );
}
