//! The host-kernel surface (docs/policy.md's policy table): which of the
//! 17 kernel entry points of public exploits' first steps a guest reaches
//! (tests/c/surface.c, checked against a native run and the supervisor's
//! trace), and how programs fare with the primitives the sandbox refuses
//! or answers itself (surface/primitives.py, run natively and inside).

use std::collections::BTreeMap;

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

/// The entry points left reachable, each for the programs that need it
/// (docs/policy.md, "The 17 entry points"): splice is sendfile's cousin,
/// madvise(DONTNEED) is in every allocator, `user.*` xattrs are what
/// `cp -a`, rsync -X and Python's shutil.copystat copy, and glibc's
/// getifaddrs is an rtnetlink dump of the guest's own namespace.
const REACHABLE: &[&str] = &[
    "splice_ro_file_to_pipe",
    "madvise_dontneed",
    "setxattr_user",
    "rtnetlink_socket",
    "rtnetlink_dump",
];

/// The cases that succeed whether the kernel or the supervisor answered,
/// and the call whose trace line says which.
const ANSWERED: &[(&str, &str)] = &[
    ("sync", "sync("),
    ("mbind", "mbind("),
    ("set_mempolicy", "set_mempolicy("),
];

fn lines(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn at_most_eight_of_the_seventeen_exploit_entry_points_are_reachable() {
    if !have("cc") {
        skip!("no C compiler (cc)");
    }
    let prog = c_prog("surface").display().to_string();
    // Natively every probe reaches the kernel: the refusals below are the
    // sandbox's, not this kernel's or file system's.
    let dir = Tree::new();
    let native = Run::new(&[prog.as_str(), &dir.path().display().to_string()]).native();
    let native = lines(&native.ok("surface natively").stdout);
    assert_eq!(native.len(), 18, "{native:?}");
    for (case, v) in &native {
        assert!(v == "reached" || v == "0", "natively {case}: {v}");
    }

    let log = dir.join("trace.log");
    let out = Run::new(&[prog.as_str(), "/tmp"])
        .sup(&c_mounts())
        .sup(&[format!("--trace={}", log.display())])
        .supervised()
        .ok("surface under the supervisor");
    let got = lines(&out.stdout);
    let trace = std::fs::read_to_string(&log).expect("trace");
    let mut reached = Vec::new();
    for (case, v) in &got {
        if case == "set_mempolicy_default" {
            assert_eq!(v, "0", "set_mempolicy(MPOL_DEFAULT) answers 0");
            continue;
        }
        let answered = ANSWERED.iter().find(|(c, _)| c == case);
        match answered {
            Some((_, call)) => {
                assert_eq!(v, "0", "{case}: the supervisor's answer");
                let line = trace.lines().find(|l| l.contains(call));
                let line = line.unwrap_or_else(|| panic!("{case} not trapped:\n{trace}"));
                if line.contains("<passed to the kernel>") {
                    reached.push(case.as_str());
                }
            }
            None if v == "reached" => reached.push(case.as_str()),
            None => assert!(v.starts_with("refused E"), "{case}: {v}"),
        }
    }
    assert_eq!(got.len(), 18, "{}", out.dump());
    assert_eq!(reached, {
        let mut r = REACHABLE.to_vec();
        r.sort();
        r
    });
    assert!(reached.len() <= 8, "{} of 17 reachable", reached.len());
}

#[test]
fn refused_and_answered_primitives_leave_programs_working() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/security/surface/primitives.py"
    );
    let dir = Tree::new();
    let native = Run::new(&[PY, script, &dir.path().display().to_string()]).native();
    let native = native.ok("primitives.py natively").stdout;
    let inside = Run::new(&[PY, script, "/tmp"])
        .ro(std::path::Path::new(script).parent().unwrap())
        .supervised()
        .ok("primitives.py under the supervisor")
        .stdout;
    let same = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("same "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        same(&inside),
        same(&native),
        "inside:\n{inside}\nnatively:\n{native}"
    );
    let own: BTreeMap<_, _> = inside
        .lines()
        .filter_map(|l| l.strip_prefix("own "))
        .filter_map(|l| l.split_once(": "))
        .collect();
    let want: BTreeMap<&str, &str> = [
        ("aio path", "fallback after ENOSYS"),
        ("msgget", "ENOSYS"),
        ("mq_open", "ENOSYS"),
        ("get_mempolicy", "(0, 0, 0, 0)"),
        ("mems allowed", "(0, 1, 0)"),
        ("set_mempolicy bind 0", "0"),
        ("madvise MERGEABLE", "EINVAL"),
        ("mlock", "EPERM"),
        ("pkey_alloc", "ENOSYS"),
        ("FS_IOC_GETFLAGS", "ENOTTY"),
        ("F_SETLEASE", "EINVAL"),
        ("PR_GET_TSC", "EINVAL"),
        ("PR_SET_MM_MAP", "0"),
        ("PR_SET_MM_MAP exe_fd", "EPERM"),
        ("PR_SET_MM_START_BRK", "EPERM"),
        ("personality ADDR_NO_RANDOMIZE", "EPERM"),
        ("personality READ_IMPLIES_EXEC", "EPERM"),
        ("eventfd", "ENOSYS"),
        ("sync_file_range", "ENOSYS"),
        ("landlock", "ENOSYS"),
    ]
    .into_iter()
    .collect();
    assert_eq!(own, want, "inside:\n{inside}");
}

/// `setarch -R` (ADDR_NO_RANDOMIZE) is refused as Docker refuses it, with
/// setarch's own one-line error; plain `setarch x86_64` (PER_LINUX) works.
#[test]
fn setarch_without_randomization_is_refused_and_plain_setarch_works() {
    if !have("setarch") {
        skip!("no setarch (util-linux)");
    }
    let plain = Run::new(&["setarch", "x86_64", "/bin/echo", "ok"]).supervised();
    assert_eq!(plain.ok("setarch x86_64").stdout, "ok\n");
    let norand = Run::new(&["setarch", "x86_64", "-R", "/bin/echo", "ok"]).supervised();
    assert_ne!(norand.code, Some(0), "{}", norand.dump());
    assert!(
        norand.stderr.contains("Operation not permitted"),
        "{}",
        norand.dump()
    );
    let native = Run::new(&["setarch", "x86_64", "-R", "/bin/echo", "ok"]).native();
    assert_eq!(native.ok("setarch -R natively").stdout, "ok\n");
}
