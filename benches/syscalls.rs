//! Per-syscall overhead and startup benchmarks (`cargo bench`).
//!
//! Owns: the criterion suite. It does not own the guest program it drives
//! (tests/c/bench_guest.c, compiled here with `cc -O2`) beyond its protocol.
//!
//! Per-call costs are measured INSIDE one long-lived guest process: one copy of
//! bench_guest runs natively and one under `supervisor run`; criterion's
//! `iter_custom` sends "NAME N" on the guest's stdin and the guest answers with
//! the nanoseconds N iterations took (CLOCK_MONOTONIC around the loop). So no
//! sandbox start-up and no pipe traffic enter a per-call figure. Startup is
//! measured separately by spawning `/bin/true` natively and supervised.
//!
//! The bare notification round trip (`notify_roundtrip/supervised`) is a
//! DENIED call, `acct(NULL)`: the supervisor answers EPERM without any work.
//!
//! Stable benchmark ids (group/function): openat_close (through the C
//! library: a fast read, passing the filter marked, where the guest is
//! fenced), openat_trapped (the same open by syscall(2), unmarked: always
//! serviced), usr_open (a file of the host's /usr, never remembered),
//! proc_self_open (`/proc/self/stat`, served by the supervisor under the
//! fence), proc_uptime_read (open + read + close of `/proc/uptime`, which
//! the sandbox makes from a census of its tasks), newfstatat,
//! newfstatat_miss, readlinkat, faccessat, getdents64_100, getcwd,
//! opendir_close, inotify_watch (add + rm of a watch on the bench tree, a
//! `--ro` bind of the host's), create_unlink (in /tmp supervised, /dev/shm natively)
//! (serviced or as the policy decides), lseek_rewind (serviced: a rewind may re-serve a
//! /proc file), read_4k, mmap_4k, lseek_cur, write_4k, getpid (passthrough), each with
//! `native` and `supervised`; notify_roundtrip/supervised; startup/true_native
//! startup/true_supervised and startup/true_supervised_limits (every
//! limit flag set); GROUP/supervised_limits for the LIMITED_GROUPS, from a
//! second supervised guest with every limit set. A summary of medians and ratios (to native and
//! to the round trip) is printed at the end.
//!
//! Environment: SUPERVISOR_BIN overrides the supervisor binary (default: the
//! one cargo built); BENCH_NO_SUPERVISED=1 runs the native halves only.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

mod common;

use common::{median, record, supervisor_bin, Guest, Samples};
use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;

type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Where the bench tree appears inside the sandbox (`--ro TMP:/bench`).
const GUEST_ROOT: &str = "/bench";
/// `supervisor run` flags of the startup bench with every limit set.
const LIMIT_FLAGS: &[&str] = &[
    "run",
    "--memory=1g",
    "--cpus=2",
    "--pids=1000",
    "--timeout=600",
    "--cpu-time=600",
    "--output-limit=1g",
    "--nofile=1024",
];

/// The same limits on the long-lived guest of the per-call benches (its
/// wall-clock cap is a day: a bench with a long measurement time must not
/// meet it).
const GUEST_LIMIT_FLAGS: &[&str] = &[
    "--memory=1g",
    "--cpus=2",
    "--pids=1000",
    "--timeout=86400",
    "--cpu-time=86400",
    "--output-limit=1g",
    "--nofile=1024",
];

/// The groups also measured in a guest under every limit
/// (`GROUP/supervised_limits`): issue 5 wants the limits to cost nothing
/// measurable on the hot path, serviced or passed through.
const LIMITED_GROUPS: &[&str] = &[
    "openat_close",
    "newfstatat",
    "read_4k",
    "write_4k",
    "getpid",
    "notify_roundtrip",
];

/// (criterion group, guest command, has a native half).
const CALLS: &[(&str, &str, bool)] = &[
    ("openat_close", "openat_close", true),
    ("openat_trapped", "openat_trapped", true),
    ("usr_open", "usr_open", true),
    ("proc_self_open", "proc_open", true),
    ("proc_uptime_read", "proc_uptime", true),
    ("newfstatat", "newfstatat", true),
    ("newfstatat_miss", "stat_miss", true),
    ("readlinkat", "readlinkat", true),
    ("faccessat", "faccessat", true),
    ("getdents64_100", "getdents64", true),
    ("getcwd", "getcwd", true),
    ("opendir_close", "opendir_close", true),
    ("inotify_watch", "inotify_watch", true),
    ("create_unlink", "create_unlink", true),
    ("read_4k", "read4k", true),
    ("mmap_4k", "mmap4k", true),
    ("lseek_rewind", "lseek_rewind", true),
    ("lseek_cur", "lseek_cur", true),
    ("write_4k", "write4k", true),
    ("getpid", "getpid", true),
    // Never native: acct(NULL) as root would really switch accounting off.
    ("notify_roundtrip", "roundtrip", false),
];

/// The bench tree: bin/bench_guest and data/ with exactly 100 entries.
fn make_tree(root: &Path) -> Result<(), String> {
    let err = |what: &str, e: std::io::Error| format!("bench tree: {what}: {e}");
    let data = root.join("data");
    fs::create_dir_all(root.join("bin")).map_err(|e| err("mkdir bin", e))?;
    fs::create_dir_all(data.join("sub")).map_err(|e| err("mkdir data/sub", e))?;
    fs::write(data.join("f000"), vec![b'x'; 4096]).map_err(|e| err("f000", e))?;
    for i in 1..98 {
        fs::write(data.join(format!("f{i:03}")), b"bench\n").map_err(|e| err("file", e))?;
    }
    symlink("f000", data.join("link")).map_err(|e| err("link", e))?;
    let n = fs::read_dir(&data).map_err(|e| err("list", e))?.count();
    if n != 100 {
        return Err(format!("bench tree: data/ has {n} entries, want 100"));
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/bench_guest.c");
    let out = root.join("bin/bench_guest");
    let status = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .map_err(|e| format!("cannot run cc (install gcc): {e}"))?;
    if !status.success() {
        return Err(format!("cc -O2 {} failed: {status}", src.display()));
    }
    Ok(())
}

/// `supervisor run --ro ROOT:/bench [EXTRA] -- CMD...` as a Command.
fn supervised(root: &Path, extra: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(supervisor_bin());
    c.arg("run")
        .arg("--ro")
        .arg(format!("{}:{GUEST_ROOT}", root.display()));
    c.args(extra).arg("--").args(cmd);
    c
}

/// The long-lived bench guest under `supervisor run [FLAGS]`, or None
/// (with a note) when it does not start.
fn supervised_guest(root: &Path, label: &'static str, flags: &[&str]) -> Option<Guest> {
    let guest_bin = format!("{GUEST_ROOT}/bin/bench_guest");
    let guest_data = format!("{GUEST_ROOT}/data");
    let mut extra = vec!["--env", "BENCH_GUEST_SUPERVISED=1"];
    extra.extend_from_slice(flags);
    let cmd = supervised(root, &extra, &[&guest_bin, &guest_data]);
    Guest::spawn(label, cmd)
        .map_err(|e| eprintln!("note: {label} guest did not start: {e}: its half skipped"))
        .ok()
}

/// True when `supervisor run -- /bin/true` works; prints why not otherwise.
fn supervisor_works(root: &Path) -> bool {
    if std::env::var_os("BENCH_NO_SUPERVISED").is_some() {
        eprintln!("note: BENCH_NO_SUPERVISED set: native halves only");
        return false;
    }
    match supervised(root, &[], &["/bin/true"])
        .stdout(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("note: `supervisor run -- /bin/true` failed ({s}): native halves only");
            false
        }
        Err(e) => {
            eprintln!(
                "note: cannot run {}: {e}: native halves only",
                supervisor_bin().display()
            );
            false
        }
    }
}

/// Registers `label` in `group` for guest command `call`, after probing it
/// once in the guest (a call the supervisor cannot serve yet is skipped).
fn bench_call(g: &mut Group, group: &str, samples: &Samples, guest: &mut Guest, call: &str) {
    let id = format!("{group}/{}", guest.label);
    if let Err(e) = guest.run(call, 1) {
        eprintln!("note: skipping {id}: {e}");
        return;
    }
    let samples = Arc::clone(samples);
    g.bench_function(guest.label, move |b| {
        b.iter_custom(|iters| {
            let d = guest.run(call, iters).unwrap_or_else(|e| panic!("{e}"));
            record(&samples, &id, d, iters);
            d
        })
    });
}

fn bench_startup(g: &mut Group, samples: &Samples, name: &str, mut make: impl FnMut() -> Command) {
    let samples = Arc::clone(samples);
    let key = format!("startup/{name}");
    g.bench_function(name, move |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let status = make().stdout(Stdio::null()).status().expect("spawn");
                assert!(status.success(), "{key}: {status}");
            }
            let d = start.elapsed();
            record(&samples, &key, d, iters);
            d
        })
    });
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// The directory criterion writes to, found the way criterion finds it:
/// $CRITERION_HOME, $CARGO_TARGET_DIR/criterion, else <target>/criterion
/// from this executable's path (<target>/release/deps/syscalls-HASH).
fn criterion_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(Path::new(&target).join("criterion"));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

/// Criterion's median estimate (ns) for `id` = "group/function".
fn criterion_median(dir: Option<&Path>, id: &str) -> Option<f64> {
    let path = dir?.join(id).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&fs::read(path).ok()?).ok()?;
    json.get("median")?.get("point_estimate")?.as_f64()
}

/// Markdown table: medians, supervised/native, supervised/round trip.
fn print_summary(samples: &Samples) {
    let map = match samples.lock() {
        Ok(m) => m.clone(),
        Err(_) => return,
    };
    let dir = criterion_dir();
    let get = |k: &str| {
        let own = map.get(k)?;
        criterion_median(dir.as_deref(), k).or_else(|| median(own))
    };
    let rt = get("notify_roundtrip/supervised");
    let rt_limited = get("notify_roundtrip/supervised_limits");
    println!("\nSummary (criterion's median per call; round trip = denied acct(NULL)):\n");
    println!("| bench | native | supervised | sup/native | sup/round trip |");
    println!("|---|---:|---:|---:|---:|");
    let mut rows: Vec<(String, &str, &str)> = CALLS
        .iter()
        .map(|(g, _, _)| (g.to_string(), "native", "supervised"))
        .collect();
    rows.extend(
        LIMITED_GROUPS
            .iter()
            .map(|g| (g.to_string(), "native", "supervised_limits")),
    );
    rows.push(("startup".into(), "true_native", "true_supervised"));
    rows.push(("startup".into(), "true_native", "true_supervised_limits"));
    for (group, nat, sup) in rows {
        let n = get(&format!("{group}/{nat}"));
        let s = get(&format!("{group}/{sup}"));
        if n.is_none() && s.is_none() {
            continue;
        }
        let cell = |x: Option<f64>| x.map(fmt_ns).unwrap_or_else(|| "–".into());
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "–".into(),
        };
        let vs_rt = match (group.as_str(), sup) {
            ("startup", _) => "–".into(),
            (_, "supervised_limits") => ratio(s, rt_limited),
            _ => ratio(s, rt),
        };
        println!(
            "| {group}{} | {} | {} | {} | {vs_rt} |",
            if sup.ends_with("_limits") {
                " (all limits)"
            } else {
                ""
            },
            cell(n),
            cell(s),
            ratio(s, n)
        );
    }
}

fn main() {
    let mut c = common::criterion();
    let tmp = tempfile::Builder::new()
        .prefix("supervisor-bench")
        .tempdir()
        .expect("tempdir");
    let root = tmp.path().to_path_buf();
    make_tree(&root).unwrap_or_else(|e| panic!("{e}"));
    let samples: Samples = Arc::default();

    let mut native = Command::new(root.join("bin/bench_guest"));
    native.arg(root.join("data"));
    // create_unlink's scratch: a tmpfs, as the sandbox's /tmp is.
    native.env("BENCH_GUEST_SCRATCH", "/dev/shm");
    let mut native = Guest::spawn("native", native).unwrap_or_else(|e| panic!("{e}"));

    let (mut sup, mut limited) = (None, None);
    if supervisor_works(&root) {
        sup = supervised_guest(&root, "supervised", &[]);
        limited = supervised_guest(&root, "supervised_limits", GUEST_LIMIT_FLAGS);
    }

    for &(group, call, has_native) in CALLS {
        let mut g = c.benchmark_group(group);
        if has_native {
            bench_call(&mut g, group, &samples, &mut native, call);
        }
        if let Some(guest) = sup.as_mut() {
            bench_call(&mut g, group, &samples, guest, call);
        }
        if let Some(guest) = limited.as_mut().filter(|_| LIMITED_GROUPS.contains(&group)) {
            bench_call(&mut g, group, &samples, guest, call);
        }
        g.finish();
    }
    drop(native);
    drop(sup);
    drop(limited);

    let mut g = c.benchmark_group("startup");
    bench_startup(&mut g, &samples, "true_native", || {
        Command::new("/bin/true")
    });
    if supervisor_works(&root) {
        bench_startup(&mut g, &samples, "true_supervised", || {
            let mut cmd = Command::new(supervisor_bin());
            cmd.args(["run", "--", "/bin/true"]);
            cmd
        });
        // Every limit set: a cgroup (created, joined, removed), the
        // janitor, the watchdog and the output relay.
        bench_startup(&mut g, &samples, "true_supervised_limits", || {
            let mut cmd = Command::new(supervisor_bin());
            cmd.args(LIMIT_FLAGS).args(["--", "/bin/true"]);
            cmd
        });
    }
    g.finish();

    c.final_summary();
    // `cargo test --benches` runs each bench once (no --bench flag): no figures.
    if std::env::args().any(|a| a == "--bench") {
        print_summary(&samples);
    }
}
