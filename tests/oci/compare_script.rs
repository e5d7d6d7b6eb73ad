//! scripts/compare's OCI columns (scripts/compare_oci.py): what each
//! column runs (`--dry-run`: the same flags for runc and `supervisor`,
//! the ratio of a supervisor column to its runc column), and one real
//! run of the bundle columns, `runc run` against `supervisor` create,
//! start, wait and delete, whose cells must hold figures, not failures.
//! Nothing here looks at the figures themselves. The docker columns run
//! only in `--dry-run` here: their dockerd would race `docker.rs`'s for
//! the host's IPv6 switches, which each puts back as it found them.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::bin;

const COLUMNS: &str = "oci-runc,oci-supervisor,docker-runc,docker-supervisor";

fn compare(args: &[&str]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compare");
    Command::new("/usr/bin/python3")
        .arg(script)
        .arg("--supervisor")
        .arg(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/compare")
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
