//! scripts/compare's OCI columns (scripts/compare_oci.py): what each
//! column runs (`--dry-run`: the same flags for runc and `supervisor`,
//! the ratio of a supervisor column to its runc column), and one real
//! run of the bundle columns, `runc run` against `supervisor` create,
//! start, wait and delete, whose cells must hold figures, not failures.
//! Nothing here looks at the figures themselves. The docker columns run
//! only in `--dry-run` here: their dockerd would race `docker.rs`'s for
//! the host's IPv6 switches, which each puts back as it found them.
//! The pool column's socket directory goes at the end of a dry run, an
//! error and Ctrl-C.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{bin, Tree};

const COLUMNS: &str = "oci-runc,oci-supervisor,docker-runc,docker-supervisor";

fn compare(args: &[&str]) -> Output {
    compare_cmd(args).output().expect("run scripts/compare")
}

fn compare_cmd(args: &[&str]) -> Command {
    compare_via(Command::new("/usr/bin/python3"), args)
}

/// `cmd` (python3, or a command that runs it) with the script and `args`.
fn compare_via(mut cmd: Command, args: &[&str]) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compare");
    cmd.arg(script)
        .arg("--supervisor")
        .arg(bin())
        .args(args)
        .stdin(Stdio::null());
    cmd
}

/// What is in `dir` (the script's TMPDIR), sorted.
fn left_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the script's TMPDIR")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn compare_leaves_no_pool_directory_after_a_dry_run_or_an_error() {
    let tmp = Tree::new();
    let columns = ["supervisor,pool", "pool,oci-crun"];
    for (args, ok) in [
        (&["--dry-run", "--columns", columns[0]], true),
        (&["--dry-run", "--columns", columns[1]], false),
    ] {
        let out = compare_cmd(args)
            .env("TMPDIR", tmp.path())
            .output()
            .expect("run scripts/compare");
        assert_eq!(out.status.success(), ok, "{args:?}: {out:?}");
        if ok {
            let all = text(&out);
            let pool = lines_of(&all, "true", "pool");
            assert_eq!(pool.len(), 1, "{all}");
            assert!(
                pool[0].contains(&format!("{}/compare-pool-", tmp.s())),
                "{all}"
            );
        }
        assert_eq!(left_in(tmp.path()), Vec::<String>::new(), "{args:?}");
    }
}

#[test]
fn compare_interrupted_stops_its_pool_and_removes_its_directory() {
    let tmp = Tree::new();
    // SIGINT at its default: python ignores it for good when started
    // with it ignored (as a background job's children are).
    let mut python = Command::new("env");
    python.args(["--default-signal=INT", "/usr/bin/python3"]);
    let args = [
        "--runs",
        "100000",
        "--columns",
        "pool",
        "--workloads",
        "true",
    ];
    let mut child = compare_via(python, &args)
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("run scripts/compare");
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    // Interrupted (as Ctrl-C: the whole group) once the pool listens.
    let socket_made = || {
        left_in(tmp.path())
            .iter()
            .any(|n| n.starts_with("compare-pool-") && tmp.join(n).join("pool.sock").exists())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket_made() && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        thread::sleep(Duration::from_millis(50));
    }
    let started = socket_made();
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::SIGINT);
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::SIGKILL);
            panic!("scripts/compare did not end within 60 s of SIGINT");
        }
        thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(started, "the pool never listened: {out:?}");
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(left_in(tmp.path()), Vec::<String>::new(), "{out:?}");
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines `--dry-run` printed for row `row` in column `col`.
fn lines_of(out: &str, row: &str, col: &str) -> Vec<String> {
    let prefix = format!("{row} / {col}: ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// The word after `--bundle` in a command line.
fn bundle_of(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace().skip_while(|w| *w != "--bundle");
    words.next();
    words.next()
}

#[test]
fn compare_dry_run_names_the_same_container_for_runc_and_supervisor() {
    let out = compare(&[
        "--dry-run",
        "--columns",
        COLUMNS,
        "--workloads",
        "true,py_pass,sixteen",
    ]);
    let all = text(&out);
    assert!(out.status.success(), "{out:?}");
    for (col, base) in [
        ("oci-runc", "native"),
        ("oci-supervisor", "oci-runc"),
        ("docker-runc", "native"),
        ("docker-supervisor", "docker-runc"),
    ] {
        assert!(
            all.contains(&format!("{col}: ratio to {base}\n")),
            "{col}: {all}"
        );
    }
    for row in ["true", "py_pass"] {
        // Docker: the same command line but for the runtime.
        let runc = lines_of(&all, row, "docker-runc");
        let sup = lines_of(&all, row, "docker-supervisor");
        assert_eq!(runc.len(), 1, "{all}");
        assert!(runc[0].contains(" run --rm "), "{all}");
        assert!(runc[0].contains("--runtime=runc"), "{all}");
        assert_eq!(
            runc[0].replace("--runtime=runc", "--runtime=supervisor"),
            sup[0],
            "{all}"
        );
        // The bundle: runc's run against create, start, wait, delete.
        let runc = lines_of(&all, row, "oci-runc");
        let sup = lines_of(&all, row, "oci-supervisor");
        assert_eq!(runc.len(), 1, "{all}");
        assert!(runc[0].contains(" run --bundle "), "{all}");
        assert_eq!(sup.len(), 4, "{all}");
        assert_eq!(bundle_of(&runc[0]), bundle_of(&sup[0]), "{all}");
        assert!(sup[0].contains(" create "), "{all}");
        assert!(sup[1].contains(" start "), "{all}");
        assert!(sup[3].contains(" delete "), "{all}");
    }
    // The burst of 16 is not a container row.
    for col in COLUMNS.split(',') {
        assert_eq!(lines_of(&all, "sixteen", col), ["–"], "{all}");
    }

    let bad = compare(&["--dry-run", "--columns", "oci-crun"]);
    assert!(!bad.status.success(), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown column(s): oci-crun"),
        "{bad:?}"
    );
}

#[test]
fn compare_runs_a_bundle_under_runc_and_under_supervisor() {
    if !common::is_root() {
        skip!("the OCI columns need root");
    }
    if !common::have("runc") {
        skip!("no runc (apt-get install runc; docker.io brings it)");
    }
    let out = compare(&[
        "--runs",
        "1",
        "--columns",
        "oci-runc,oci-supervisor",
        "--workloads",
        "true,py_pass",
    ]);
    let all = text(&out);
    assert!(out.status.success(), "{out:?}");
    assert!(!all.contains("skipped"), "{all}");
    assert!(!all.contains("fail†"), "{all}");
    for row in ["`/bin/true`", "`python3 -c pass`"] {
        let line = all
            .lines()
            .find(|l| l.starts_with(&format!("| {row} |")))
            .unwrap_or_else(|| panic!("no row {row}: {all}"));
        // native, oci-runc (x native), oci-supervisor (x oci-runc): three figures.
        assert_eq!(line.matches(" ms").count(), 3, "{line}");
        assert_eq!(line.matches("x)").count(), 2, "{line}");
    }
}
