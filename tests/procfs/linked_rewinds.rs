//! Rewinds that need no round trip: the preload's `lseek` marks the
//! rewind of a file a directory links (`sandbox/guest/rewind_mark.c`;
//! no served /proc file is one, each is a memfd), and the filter passes
//! it. Each program runs natively and supervised; the output must match,
//! and the report counts the rewinds the supervisor served.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

/// Rewinds through the lseek symbol (`os.lseek`, as Python's `seek(0)`
/// makes them) of files a directory links, as many of each as the first
/// argument says: a file of the view, and `/proc/meminfo` without
/// `--memory` (procfs's own file, installed as it is), whose rewind still
/// reads fresh; then one of `/proc/stat`, a served file.
const LINKED_REWINDS: &str = r#"
import os, sys
rounds = int(sys.argv[1])
f = os.open("/etc/hostname", os.O_RDONLY)
text = os.read(f, 4096)
m = os.open("/proc/meminfo", os.O_RDONLY)
first = os.read(m, 9)
same = 0
for _ in range(rounds):
    same += os.lseek(f, 0, os.SEEK_SET) == 0 and os.read(f, 4096) == text
    same += os.lseek(m, 0, os.SEEK_SET) == 0 and os.read(m, 9) == first
print("rewinds read the same:", same == 2 * rounds)
s = os.open("/proc/stat", os.O_RDONLY)
os.read(s, 65536)
print("stat rewound:", os.lseek(s, 0, os.SEEK_SET), os.read(s, 4))
"#;

/// The serviced lseek calls of a supervised run of [`LINKED_REWINDS`]
/// with `rounds`, whose output must be native's.
fn served_rewinds(rounds: &str) -> u64 {
    let run = Run::new(&[PY, "-c", LINKED_REWINDS, rounds]);
    let native = run.native().ok("native");
    assert!(
        native.stdout.ends_with("stat rewound: 0 b'cpu '\n"),
        "{}",
        native.dump()
    );
    let (out, report) = run.supervised_reported();
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    serviced(&report, "lseek")
}

/// The preload marks the rewind of a linked file (no served file is one:
/// each is a memfd), which then passes the filter: 50 rounds of the two
/// rewinds above are serviced no more than none (on a binary without the
/// mark, 100 more were); `/proc/stat`'s is, as are the C library's own
/// seeks of the run's start.
#[test]
fn rewinds_of_linked_files_take_no_round_trip() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no preload");
    }
    let none = served_rewinds("0");
    assert!(none >= 1, "the rewind of /proc/stat was not serviced");
    assert_eq!(served_rewinds("50"), none);
}
