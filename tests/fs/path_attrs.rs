//! Times (`utime`, `utimes`, `futimesat`, `utimensat`), `truncate` and
//! `statfs` by path pass the filter: the kernel answers them in the
//! guest's own view as the guest. `tests/fs/path_attrs.py` makes them
//! through Python's `os` and raw `syscall`s with hostile arguments (bad
//! and kernel pointers, negative and huge lengths, out-of-range
//! nanoseconds, unknown flags, bad descriptors), and through coreutils
//! (`truncate -s`, `touch -h -d`, `stat -f`, `df`), natively and
//! supervised on twin trees: the outputs must be equal, and the report
//! must count none of these calls as serviced.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const SCRIPT: &str = concat!(include_str!("syscall.py"), include_str!("path_attrs.py"));
const PASSED: &[&str] = &[
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "truncate",
    "statfs",
];

#[test]
fn times_truncate_and_statfs_by_path_match_native() {
    if let Some(t) = ["truncate", "touch", "stat", "df"]
        .iter()
        .find(|t| !have(t))
    {
        skip!("`{t}` not installed");
    }
    let pair = Pair::new(|_| {});
    let run = |dir: &std::path::Path| Run::new(&[PY, "-c", SCRIPT, &dir.display().to_string()]);
    let native = run(&pair.a).native().ok("native");
    let report = pair.base.join("report.json");
    let sup = run(&pair.b)
        .rw(&pair.b)
        .sup(&["--report".to_string(), report.display().to_string()])
        .supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert!(native.stdout.contains("## coreutils"), "{}", native.stdout);
    assert_same(
        "times, truncate, statfs",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
    let r = read_report(&report);
    let serviced = &r["syscalls"]["serviced"];
    assert!(serviced.is_object(), "{r}");
    for call in PASSED {
        assert!(serviced[call].is_null(), "{call} was serviced: {r}");
    }
}
