//! The guest holds no privilege and cannot regain one (issue 2): every
//! capability set is empty, no_new_privs is set, and the securebits stop
//! uid 0 from gaining capabilities on exec or setuid, locked so the guest
//! cannot undo them. `SECBIT_KEEP_CAPS` stays settable (iputils' `ping`
//! sets it before its socket call) and gives nothing: capabilities stay
//! empty after it, after a setuid and after an exec. As root and as an
//! unprivileged user, with one id (`--userns-range none`, which root's
//! default is not): under a range the guest's root holds Docker's default
//! set in its own namespace instead (`tests/security/ids.rs`).

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";

/// Prints the guest's capability sets, no_new_privs and securebits; sets
/// KEEP_CAPS, changes uid where it may, execs, and prints them again.
const PROBE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
PR_GET_SECUREBITS, PR_SET_SECUREBITS, PR_SET_KEEPCAPS = 27, 28, 8
def show(tag):
    fields = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"):
            fields[k] = v.strip()
    print(tag, " ".join("%s=%s" % kv for kv in sorted(fields.items())),
          "securebits=%#x" % libc.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0))
if sys.argv[1:] == ["again"]:
    show("after-exec")
    sys.exit(0)
show("start")
print("set-keepcaps", libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
print("clear-securebits", libc.prctl(PR_SET_SECUREBITS, 0, 0, 0, 0), ctypes.get_errno())
try:
    os.setuid(os.getuid())
except OSError as e:
    print("setuid", e.errno)
show("after-setuid")
sys.stdout.flush()
os.execv(sys.executable, [sys.executable, "-c", open("/proc/self/cmdline").read().split("\0")[2], "again"])
"#;

/// The probe's output: nothing held at any point; KEEP_CAPS (bit 4) set by
/// the guest shows until the exec clears it, as the kernel does.
fn expected() -> String {
    let sets = "CapAmb=0000000000000000 CapBnd=0000000000000000 CapEff=0000000000000000 \
                CapInh=0000000000000000 CapPrm=0000000000000000 NoNewPrivs=1";
    format!(
        "start {sets} securebits=0xcf\nset-keepcaps 0\nclear-securebits -1 1\n\
         after-setuid {sets} securebits=0xdf\nafter-exec {sets} securebits=0xcf\n"
    )
}

fn check(run: Run) {
    let out = run.supervised();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, expected(), "{}", out.dump());
}

#[test]
fn guest_has_no_capabilities_and_cannot_regain_any() {
    check(Run::new(&[PY, "-c", PROBE]).sup(&["--userns-range", "none"]));
}

#[test]
fn unprivileged_guest_has_no_capabilities_and_cannot_regain_any() {
    if !is_root() {
        skip!("needs root to switch to uid 1001");
    }
    check(Run::new(&[PY, "-c", PROBE]).user(1001, 1001));
}

/// The seed's operational check (`ping -c 1 8.8.8.8` fails with a clear
/// message): the guest may not reach outside (ping's ping socket opens,
/// its route probe is unreachable), and says so, not on an earlier
/// prctl. In a fresh network namespace.
#[test]
fn ping_fails_on_the_socket_with_a_clear_message() {
    if !is_root() || !have("ping") {
        skip!("needs root (unshare -n) and ping");
    }
    let mut run = Run::new(&["ping", "-c", "1", "-W", "1", "8.8.8.8"]);
    run.wrap = vec!["unshare".into(), "-n".into()];
    let out = run.supervised();
    assert_eq!(out.code, Some(2), "{}", out.dump());
    assert!(
        out.stderr.contains("connect: Network is unreachable") && !out.stderr.contains("prctl"),
        "{}",
        out.dump()
    );
}
