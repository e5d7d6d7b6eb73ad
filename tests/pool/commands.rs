//! The pool (`supervisor pool`, `supervisor run --pool`): a command run
//! through a pool's sandbox behaves as the same command under a cold
//! `supervisor run` (exit codes and their one line, stdio, environment,
//! signals, the report); every sandbox is fresh; the client's death
//! takes the guest with it. The daemon's own refusals, stop and users
//! are `daemon.rs`'s.
//!
//! Each test starts its own daemon (socket in a temp dir) and stops it by
//! its pid.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::pool::Pool;
use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// `script` through the pool, and under a cold `supervisor run`.
fn both(pool: &Pool, run: Run) -> (Out, Out) {
    let pooled = run.clone().sup(&pool.flag()).supervised();
    (pooled, run.supervised())
}

#[test]
fn exit_codes_and_their_lines_are_run_s() {
    let pool = Pool::start(&[]);
    let cases: &[(&[&str], i32)] = &[
        (&["/bin/sh", "-c", "exit 0"], 0),
        (&["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], 3),
        (&["/bin/sh", "-c", "kill -TERM $$"], 143),
        (&["/etc/passwd"], 126),
        (&["no-such-command-here"], 127),
    ];
    for (argv, code) in cases {
        let (pooled, cold) = both(&pool, Run::new(argv));
        assert_eq!(pooled.code, Some(*code), "{argv:?}: {}", pooled.dump());
        assert_eq!(
            (&pooled.stdout, &pooled.stderr),
            (&cold.stdout, &cold.stderr),
            "{argv:?}: pooled {} cold {}",
            pooled.dump(),
            cold.dump()
        );
    }
}

#[test]
fn stdin_stdout_and_stderr_are_the_client_s() {
    let pool = Pool::start(&[]);
    let run = Run::sh("tr a-z A-Z; echo to-stderr >&2", &[]).stdin(b"hello pool\n");
    let native = run.native();
    let pooled = run.sup(&pool.flag()).supervised().ok("pooled");
    assert_eq!(pooled.stdout, "HELLO POOL\n");
    assert_eq!(
        (&pooled.stdout, &pooled.stderr),
        (&native.stdout, &native.stderr)
    );
}

#[test]
fn the_environment_is_the_one_run_builds_and_the_directory_the_pool_s() {
    let pool = Pool::start(&[]);
    let run = Run::new(&["/usr/bin/env"])
        .env("COPIED", "from-client")
        .env("NOT_PASSED", "x")
        .sup(&["--env", "SET=1", "--env", "COPIED"]);
    let (pooled, cold) = both(&pool, run);
    let pooled = pooled.ok("pooled env");
    assert!(pooled.stdout.contains("SET=1\n"), "{}", pooled.dump());
    assert!(pooled.stdout.contains("COPIED=from-client\n"));
    assert!(!pooled.stdout.contains("NOT_PASSED"));
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(String::from).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&pooled.stdout), sorted(&cold.stdout));
    // The client's cwd (/) is not used: the pool's is.
    let pwd = Run::new(&["/bin/pwd"]).sup(&pool.flag()).supervised();
    let pool_dir = pool.socket.parent().expect("dir").display().to_string();
    assert_eq!(pwd.ok("pwd").stdout.trim(), pool_dir);
}

#[test]
fn every_sandbox_is_fresh() {
    let pool = Pool::start(&["--size", "1"]);
    let mut boot_ids = Vec::new();
    for _ in 0..3 {
        let out = Run::sh(
            "ls /tmp; echo x > /tmp/left-by-an-earlier-run; cat /proc/sys/kernel/random/boot_id",
            &[],
        )
        .sup(&pool.flag())
        .supervised()
        .ok("a pooled run");
        let mut lines = out.stdout.lines();
        let boot_id = lines.next_back().expect("boot id").to_string();
        // (The pool's starting directory, in the host's /tmp, is bound there.)
        assert!(
            !lines.any(|l| l == "left-by-an-earlier-run"),
            "an earlier run's file: {}",
            out.dump()
        );
        assert!(!boot_ids.contains(&boot_id), "a sandbox served twice");
        boot_ids.push(boot_id);
    }
}

/// `--warm`: paths looked up in the idle sandbox (missing ones skipped)
/// leave nothing the command could see: a directory it lists has the
/// access time a cold run's has (listing without `O_NOATIME` would have
/// moved it past the modification time: the layer's /tmp and /etc),
/// and the command runs as cold.
#[test]
fn warming_leaves_nothing_the_command_can_see() {
    let flags = [
        "--size",
        "1",
        "--warm",
        "/tmp",
        "--warm",
        "/etc",
        "--warm",
        "/usr/lib",
        "--warm",
        "/no/such/path",
    ];
    warmed_runs_as_cold(&Pool::start(&flags), Run::sh(WARMED, &[]));
    // Unprivileged, the host's directories are not ours (no O_NOATIME).
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start_as(&flags, Some((uid, gid)), &tbin);
    warmed_runs_as_cold(&pool, Run::sh(WARMED, &[]).user(uid, gid).bin(&tbin));
}

/// Says which of the layer's directories were listed before it ran.
const WARMED: &str = "for d in /tmp /etc; do \
    [ \"$(stat -c %X.%x $d)\" \\> \"$(stat -c %Y.%y $d)\" ] && echo \"$d listed\"; done; \
    ls /etc | grep -c passwd; python3 -c 'import encodings; print(1)'";

fn warmed_runs_as_cold(pool: &Pool, run: Run) {
    for _ in 0..2 {
        let (pooled, cold) = both(pool, run.clone());
        let cold = cold.ok("a cold run");
        assert_eq!(cold.stdout, "1\n1\n", "{}", cold.dump());
        assert_eq!(pooled.ok("a warmed run").stdout, cold.stdout);
    }
}

/// A client's `--timeout` ends its command as a cold run's does (its
/// line, its code, the report's limit); a pool's own shorter timeout
/// holds against a client's longer one.
#[test]
fn a_client_s_timeout_ends_its_command_as_cold() {
    let open = Pool::start(&[]);
    let strict = Pool::start(&["--timeout", "0.4"]);
    let dir = Tree::new();
    let sleep = || Run::sh("echo up; sleep 30", &[]);
    let timeout = |t: &str| vec!["--timeout".to_string(), t.to_string()];
    let cold = sleep().sup(&timeout("0.4")).supervised();
    assert_eq!(cold.code, Some(137), "{}", cold.dump());
    assert!(
        cold.stderr.contains("timeout after 0.4 s"),
        "{}",
        cold.dump()
    );
    for (pool, flags) in [(&open, timeout("0.4")), (&strict, timeout("30"))] {
        let report = dir.join("run.json").display().to_string();
        let out = sleep()
            .sup(&pool.flag())
            .sup(&flags)
            .sup(&["--report".to_string(), report.clone()])
            .supervised();
        assert_eq!(
            (out.code, &out.stdout, &out.stderr),
            (cold.code, &cold.stdout, &cold.stderr),
            "{flags:?}: {}",
            out.dump()
        );
        let json = read_report(Path::new(&report));
        assert_eq!(json["limits"]["timeout_s"], 0.4, "{json}");
    }
}

#[test]
fn the_report_comes_through_the_pool() {
    let pool = Pool::start(&[]);
    let dir = Tree::new();
    let report = dir.join("run.json");
    let out = Run::sh("exit 3", &[])
        .sup(&pool.flag())
        .sup(&["--report".to_string(), report.display().to_string()])
        .supervised();
    assert_eq!(out.code, Some(3), "{}", out.dump());
    let json = read_report(&report);
    assert_eq!(json["reason"], "exited", "{json}");
    assert_eq!(json["exit_code"], 3, "{json}");
    assert!(json["processes_started"].as_u64().is_some(), "{json}");
}

/// A report that cannot be written: one line, and 125 for a command that
/// exited 0 (its own code otherwise), pooled as cold.
#[test]
fn an_unwritable_report_is_one_line_pooled_as_cold() {
    let pool = Pool::start(&[]);
    let dir = Tree::new();
    let report = dir
        .join("no-such-dir")
        .join("run.json")
        .display()
        .to_string();
    for (script, code) in [("exit 0", 125), ("exit 3", 3)] {
        let run = Run::sh(script, &[]).sup(&["--report".to_string(), report.clone()]);
        let (pooled, cold) = both(&pool, run);
        for out in [&pooled, &cold] {
            assert_eq!(out.code, Some(code), "{script}: {}", out.dump());
            assert_eq!(out.stderr.lines().count(), 1, "{script}: {}", out.dump());
            assert!(
                out.stderr.contains("cannot write report"),
                "{script}: {}",
                out.dump()
            );
        }
    }
}

/// Spawns a client running `script`, which prints `up` once running.
#[test]
fn a_signal_to_the_client_reaches_the_guest() {
    let pool = Pool::start(&[]);
    let (mut client, _out) = pool.client_running(&[], "echo up; exec sleep 60");
    let guard = kill_after(client.id(), TIMEOUT);
    kill(Pid::from_raw(client.id() as i32), Signal::SIGINT).expect("kill");
    let status = client.wait().expect("wait");
    drop(guard);
    assert_eq!(status.code(), Some(130), "{status:?}");
}

/// Host pids whose command line is `sleep SECONDS`.
fn sleeping(seconds: &str) -> Vec<String> {
    let wanted = format!("sleep\0{seconds}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline == wanted.as_bytes() {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn the_guest_dies_with_its_client() {
    let pool = Pool::start(&[]);
    let marker = format!(
        "{}.{}",
        600 + std::process::id() % 300,
        std::process::id() % 997
    );
    let (mut client, _out) = pool.client_running(&[], &format!("echo up; exec sleep {marker}"));
    // "up" comes just before the exec.
    let until = Instant::now() + TIMEOUT;
    while sleeping(&marker).len() != 1 {
        assert!(Instant::now() < until, "the guest's sleep is not running");
        std::thread::sleep(Duration::from_millis(10));
    }
    kill(Pid::from_raw(client.id() as i32), Signal::SIGKILL).expect("kill");
    let status = client.wait().expect("wait");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let until = Instant::now() + TIMEOUT;
    while !sleeping(&marker).is_empty() {
        assert!(Instant::now() < until, "the guest outlived its client");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn more_clients_than_sandboxes_wait_for_the_next() {
    let pool = Pool::start(&["--size", "2"]);
    let clients: Vec<Child> = (0..6)
        .map(|i| {
            Command::new(bin())
                .args(["run", "--pool"])
                .arg(&pool.socket)
                .args(["--", "/bin/sh", "-c", &format!("echo client {i}")])
                .stdout(Stdio::piped())
                .spawn()
                .expect("client")
        })
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let guard = kill_after(c.id(), TIMEOUT);
        let out = c.wait_with_output().expect("wait");
        drop(guard);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("client {i}\n")
        );
    }
}

/// Nothing is written after the limit is passed: whether a later write
/// gets out before the kill lands is a race, in either front end.
#[test]
fn the_output_limit_of_the_pool_holds_for_its_clients() {
    let pool = Pool::start(&["--output-limit", "1k"]);
    let run = Run::sh("yes 0123456789 | head -c 100000", &[]);
    let pooled = run.clone().sup(&pool.flag()).supervised();
    let cold = run.sup(&["--output-limit", "1k"]).supervised();
    assert_eq!(pooled.code, Some(137), "{}", pooled.dump());
    assert_eq!(pooled.stdout.len(), 1024);
    assert_eq!((pooled.code, &pooled.stderr), (cold.code, &cold.stderr));
}

/// `--writable-system` given to the pool shapes its sandboxes as it does a
/// cold run's; without it /usr is read-only in both.
#[test]
fn the_pool_s_writable_system_is_run_s() {
    if !is_root() {
        return; // /usr is root's to write, with the flag.
    }
    let name = format!("/usr/sv-pool-writable-{}", std::process::id());
    let run = Run::sh(
        &format!("touch {name} 2>&1 | sed 's/.*: //'; echo done"),
        &[],
    );
    let plain = Pool::start(&[]);
    let (pooled, cold) = both(&plain, run.clone());
    assert_eq!(
        pooled.stdout,
        "Read-only file system\ndone\n",
        "{}",
        pooled.dump()
    );
    assert_eq!(pooled.stdout, cold.stdout, "{}", cold.dump());
    let writable = Pool::start(&["--writable-system"]);
    let pooled = run.clone().sup(&writable.flag()).supervised();
    let cold = run.sup(&["--writable-system"]).supervised();
    assert_eq!(pooled.stdout, "done\n", "{}", pooled.dump());
    assert_eq!(pooled.stdout, cold.stdout, "{}", cold.dump());
    assert!(
        !std::path::Path::new(&name).exists(),
        "{name} reached the host"
    );
}

#[test]
fn a_client_s_trace_goes_to_its_stderr_or_its_file() {
    let pool = Pool::start(&[]);
    // A served /proc file's open, which the fast-reads preload makes
    // again unmarked for the supervisor (a pooled sandbox is set up with
    // the fast-reads filter before the client asks for a trace, so only
    // the trapped calls show).
    let open = r#"openat(AT_FDCWD, "/proc/uptime", O_RDONLY"#;
    let run = Run::sh("cat /etc/hostname; : </proc/uptime", &[]).sup(&pool.flag());
    let plain = run.clone().supervised().ok("untraced");
    assert!(!plain.stderr.contains(open), "{}", plain.dump());
    let to_stderr = run.clone().sup(&["--trace"]).supervised().ok("traced");
    assert_eq!(to_stderr.stdout, "sandbox\n");
    assert!(to_stderr.stderr.contains(open), "{}", to_stderr.dump());
    // A relative FILE is the client's: its cwd, not the pool's.
    let dir = Tree::new();
    let to_file = run.cwd(dir.path()).sup(&["--trace=calls.txt"]).supervised();
    let to_file = to_file.ok("traced to a file");
    assert!(!to_file.stderr.contains(open), "{}", to_file.dump());
    let text = std::fs::read_to_string(dir.join("calls.txt")).expect("trace file");
    assert!(text.contains(open), "{text}");
}

/// `--timeout` and the report's wall time count from the command's
/// start, not from the set-up of a sandbox that then waited idle.
#[test]
fn the_clock_starts_with_the_command_not_the_set_up() {
    let pool = Pool::start(&["--timeout", "1"]);
    // A run, so that a sandbox is ready; then it waits idle past the limit.
    Run::new(&["/bin/true"])
        .sup(&pool.flag())
        .supervised()
        .ok("first");
    std::thread::sleep(Duration::from_millis(1500));
    let dir = Tree::new();
    let report = dir.join("r.json");
    let client = Instant::now();
    let out = Run::new(&["/bin/sleep", "0.2"])
        .sup(&pool.flag())
        .sup(&["--report".to_string(), report.display().to_string()])
        .supervised();
    let client = client.elapsed().as_secs_f64();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let wall = read_report(&report)["wall_time_s"]
        .as_f64()
        .expect("wall time");
    // Within the client's own life, not since the sandbox was set up.
    assert!(
        wall <= client,
        "wall time {wall} s, the client lived {client} s"
    );
    let run = Run::new(&["/bin/sleep", "5"]);
    let pooled = run.clone().sup(&pool.flag()).supervised();
    let cold = run.sup(&["--timeout", "1"]).supervised();
    assert_eq!(pooled.code, Some(137), "{}", pooled.dump());
    assert_eq!(pooled.stderr, cold.stderr);
}

/// A pooled sandbox's late command that is a musl program gets
/// `LD_PRELOAD` naming the fast-reads library (musl's loader reads no
/// preload list) and has it mapped; a glibc one gets no `LD_PRELOAD`
/// (`sandbox/src/launch/fast_reads.rs`).
#[test]
fn a_late_musl_command_gets_the_preload() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let musl = musl_prog("many_reads");
    let glibc = c_prog("many_reads");
    let dir = c_dir().display().to_string();
    let pool = Pool::start(&["--ro", &format!("{dir}:{dir}")]);
    let ask = |prog: &Path, what: &[&str]| {
        let mut argv = vec![prog.as_os_str()];
        argv.extend(what.iter().map(|w| std::ffi::OsStr::new(*w)));
        Run::new(&argv)
            .sup(&pool.flag())
            .supervised()
            .ok("pooled")
            .stdout
    };
    assert_eq!(
        ask(&musl, &["env", "LD_PRELOAD"]),
        "/etc/sandbox-fast-reads.so\n"
    );
    assert_eq!(ask(&musl, &["mapped", "sandbox-fast-reads.so"]), "mapped\n");
    assert_eq!(ask(&glibc, &["env", "LD_PRELOAD"]), "(unset)\n");
    assert_eq!(
        ask(&glibc, &["mapped", "sandbox-fast-reads.so"]),
        "mapped\n"
    );
}
