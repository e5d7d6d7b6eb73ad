//! Threads natively and supervised: glibc's pthread_create and
//! posix_spawn try `clone3` first, which the filter answers ENOSYS
//! itself, and fall back to `clone` (tests/c/threads.c; Python's
//! threading and concurrent.futures). Outputs must be equal, the threads
//! real (the report's `processes_started`), and the report must count no
//! `clone3`: the supervisor never sees it. A raw `clone3` that the
//! kernel serves natively gets ENOSYS, what glibc's probe expects.

use crate::common;
use common::*;
use std::path::Path;

const PY: &str = "/usr/bin/python3";

/// Threads the C program starts besides its loop: eight at once, and the
/// child of one posix_spawn.
const C_EXTRA_TASKS: u64 = 9;

const PY_THREADS: &str = r#"
import concurrent.futures, threading
lock = threading.Lock()
seen = []
def work(i):
    with lock:
        seen.append(i)
    return i * i
ts = [threading.Thread(target=work, args=(i,)) for i in range(40)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("threads", len(seen), sum(seen))
with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
    print("pool", sum(ex.map(work, range(200))))
print("alive", threading.active_count())
"#;

/// The report at `path`; fails the test when it has no `denied` map or
/// counts `clone3` as denied or serviced.
fn assert_no_clone3_counted(path: &Path) -> serde_json::Value {
    let rep = read_report(path);
    assert!(
        rep["syscalls"]["denied"].is_object(),
        "no denied map: {rep}"
    );
    let counted = probes::uncounted_counted(&rep);
    assert!(counted.is_empty(), "{counted:?}");
    rep
}

/// One run of `threads N` natively and supervised (as `user` when
/// given, with `bin`), compared; the report checked.
fn c_threads_match_native(user: Option<(u32, u32)>, bin: &Path) {
    let dir = Tree::new();
    if let Some((u, g)) = user {
        dir.give_to(u, g);
    }
    let report = dir.join("report.json");
    let n: u64 = 300;
    let mut run = Run::new(&[c_prog("threads").display().to_string(), n.to_string()])
        .sup(&c_mounts())
        .rw(dir.path())
        .sup(&["--report".to_string(), report.display().to_string()])
        .bin(bin);
    run.user = user;
    let native = run.native().ok("threads natively");
    let out = run.supervised().ok("threads supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&[
        "together: 8 threads, counter 36",
        "posix_spawn true: exited 0",
    ]);
    let rep = assert_no_clone3_counted(&report);
    let started = rep["processes_started"].as_u64().unwrap_or(0);
    assert!(
        started > n + C_EXTRA_TASKS,
        "{started} tasks started for {n} + {C_EXTRA_TASKS} threads: {rep}"
    );
}

#[test]
fn c_threads_and_spawns_match_native_and_count_no_clone3() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    c_threads_match_native(None, &bin());
}

#[test]
fn c_threads_match_native_for_an_unprivileged_invoker() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    c_threads_match_native(Some((uid, gid)), &bin);
}

#[test]
fn python_threads_match_native_and_count_no_clone3() {
    let dir = Tree::new();
    let report = dir.join("report.json");
    let run = Run::new(&[PY, "-c", PY_THREADS])
        .rw(dir.path())
        .sup(&["--report".to_string(), report.display().to_string()]);
    let native = run.native().ok("python threads natively");
    let out = run.supervised().ok("python threads supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&["threads 40 780", "alive 1"]);
    assert_no_clone3_counted(&report);
}

/// A raw clone3 of a child: the kernel makes it natively; the sandbox
/// answers ENOSYS from its filter, uncounted.
#[test]
fn raw_clone3_gets_enosys_where_the_kernel_makes_a_child() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let dir = Tree::new();
    let report = dir.join("report.json");
    let run = Run::new(&[c_prog("threads").display().to_string(), "clone3".into()])
        .sup(&c_mounts())
        .rw(dir.path())
        .sup(&["--report".to_string(), report.display().to_string()]);
    let native = run.native().ok("clone3 natively");
    if native.stdout.trim() == "clone3: ENOSYS" {
        skip!("this kernel has no clone3");
    }
    assert_eq!(
        native.stdout,
        "clone3: child exited 7\n",
        "{}",
        native.dump()
    );
    let out = run.supervised().ok("clone3 supervised");
    assert_eq!(out.stdout, "clone3: ENOSYS\n", "{}", out.dump());
    assert_no_clone3_counted(&report);
}
