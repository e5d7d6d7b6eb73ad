//! `/proc/self` and `/proc/thread-self` name the caller, whoever it is:
//! the main thread, one of many threads (short-lived ones one after
//! another, whose host tids come and go), forked children, and the new
//! image after a thread other than the leader execs (which takes over
//! the leader's tid). The sandbox resolves these names itself and keeps
//! each thread's ids in its pid namespace between calls
//! (`sandbox/src/trap/pidfds.rs`), so a stale id would show here as a
//! wrong pid. Checked against the same script run natively, as root and
//! as the unprivileged user `tester`.

use crate::common;
use common::*;

const SCRIPT: &str = r#"
import os, sys, threading

def first_field(path):
    with open(path) as f:
        return int(f.read().split()[0])

def names_me():
    return (first_field("/proc/self/stat") == os.getpid()
            and first_field("/proc/thread-self/stat") == threading.get_native_id())

if sys.argv[1:2] == ["after-exec"]:
    print("after exec", names_me(), os.getpid() == int(sys.argv[2]))
    sys.exit(0)

print("main", names_me())

seen = []
def record():
    seen.append(names_me())
together = [threading.Thread(target=record) for _ in range(16)]
for t in together:
    t.start()
for t in together:
    t.join()
for _ in range(200):
    t = threading.Thread(target=record)
    t.start()
    t.join()
print("threads", len(seen), all(seen))

bad = 0
for _ in range(60):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if names_me() else 1)
    _, status = os.waitpid(pid, 0)
    bad += status != 0
print("children", bad)

print("main again", names_me())
sys.stdout.flush()

def exec_from_thread():
    os.execv(sys.executable, [sys.executable, "-c", SCRIPT, "after-exec", str(os.getpid())])
threading.Thread(target=exec_from_thread).start()
threading.Event().wait(30)
"#;

const EXPECTED: &str =
    "main True\nthreads 216 True\nchildren 0\nmain again True\nafter exec True True\n";

fn run() -> Run {
    // The script passes itself to the exec as SCRIPT.
    let code = format!("SCRIPT = {SCRIPT:?}\n{SCRIPT}");
    Run::new(&["/usr/bin/python3", "-c", &code])
}

fn check(out: Out, who: &str) {
    let out = out.ok(who);
    assert_eq!(out.stdout, EXPECTED, "{who}: {}", out.dump());
}

#[test]
fn proc_self_names_the_caller() {
    let native = run().native();
    check(native, "native");
    check(run().supervised(), "supervised");
}

#[test]
fn proc_self_names_the_caller_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    check(run().user(uid, gid).bin(bin).supervised(), "tester");
}

/// Paths that leave the caller's directory with `..` and name `self` or
/// `thread-self` again read the caller's files, as natively (the second
/// `self` is the caller's, not the supervisor's).
#[test]
fn proc_self_after_dotdot_names_the_caller() {
    let script = r#"
import os
for p in ["/proc/self/../self/stat", "/proc/thread-self/../../../self/stat",
          "/proc/self/task/../../self/stat", "/proc/self/../thread-self/stat"]:
    print(p, int(open(p).read().split()[0]) == os.getpid())
"#;
    let native = Run::new(&["/usr/bin/python3", "-c", script])
        .native()
        .ok("native");
    let supervised = Run::new(&["/usr/bin/python3", "-c", script])
        .supervised()
        .ok("supervised");
    assert!(!native.stdout.contains("False"), "{}", native.dump());
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
}
