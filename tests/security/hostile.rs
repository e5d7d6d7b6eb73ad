//! Every syscall the policy table services, against hostile arguments
//! (tests/c/hostile.c): bad pointers (NULL, 1, a PROT_NONE page, a kernel
//! address, a string or struct running into an unmapped page), bad lengths
//! (0, negative, huge, high bits set), bad fds (-1, huge, closed, a pipe, an
//! O_PATH fd) and bad flags (all bits, unknown bits). The guest runs natively
//! and under `supervisor run --rw` (as root, and as the unprivileged user
//! `tester` when it exists), both in a fresh network namespace; the
//! one-line-per-case outputs and the resulting scratch trees must be equal,
//! the supervisor must exit with the guest's status and print no panic.
//!
//! The list of serviced calls comes from `supervisor policy`: a call added to
//! the table without a case here fails [`every_serviced_call_has_cases`].
//! The few cases whose answer legitimately differs are in [`KNOWN`], each
//! with its reason. Also: threads that unmap and re-map the buffer a
//! serviced call is reading or writing (the call must come back, with
//! success or an errno the guest could get natively).

use crate::common;
use common::*;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// Cases whose supervised answer differs from the kernel's, and why. The
/// key is the case name (what precedes ": " in the guest's line).
const KNOWN: &[(&str, &str)] = &[
    // A non-blocking TCP connect to a loopback port nobody listens on
    // (the sockets are non-blocking): Linux answers EINPROGRESS and
    // reports the refusal through SO_ERROR; the netstack finds no name at
    // once and refuses (docs/network.md, "Names": "none: ECONNREFUSED").
    ("connect tcp len=high_bits_len", NB_REFUSED),
    ("connect tcp len=long", NB_REFUSED),
    ("connect tcp addr=misaligned", NB_REFUSED),
    ("connect tcp6 len=high_bits_len", NB_REFUSED),
    ("connect tcp6 len=short", NB_REFUSED),
    ("connect tcp6 len=long", NB_REFUSED),
    ("connect tcp6 addr=misaligned", NB_REFUSED),
    // Options the netstack does not model (ENOPROTOOPT for each).
    ("getsockopt tcp_congestion", UNMODELLED),
    (
        "setsockopt tcp_congestion name=no_nul_to_unmapped",
        UNMODELLED,
    ),
    ("setsockopt ip_add_membership val=short", UNMODELLED),
    // accept with a bad address or length while a connection is pending:
    // both answer EFAULT/EINVAL, but the kernel has taken the connection
    // and drops it; the netstack puts it back in the listener's queue
    // (accept.rs: "none is lost"), so the next accept gets it.
    ("accept4 pending lenptr=one", ACCEPT_KEEPS),
    ("accept pending drain_after one", ACCEPT_KEEPS),
    ("accept4 pending lenptr=prot_none", ACCEPT_KEEPS),
    ("accept pending drain_after prot_none", ACCEPT_KEEPS),
    ("accept4 pending lenptr=kernel", ACCEPT_KEEPS),
    ("accept pending drain_after kernel", ACCEPT_KEEPS),
    ("accept4 pending lenptr=straddling_unmapped", ACCEPT_KEEPS),
    (
        "accept pending drain_after straddling_unmapped",
        ACCEPT_KEEPS,
    ),
    ("accept pending len=minus1 drain", ACCEPT_KEEPS),
    // sendto with a NULL address and data passes the filter (the table's
    // NULL_ARG4_DATA_ARG2): the host `AF_UNIX` socket answers an
    // unconnected send with ENOTCONN where UDP says EDESTADDRREQ.
    ("sendto addr=null", PASSES_TO_UNIX),
    // A served /proc file opened with RESOLVE_CACHED: the kernel's procfs
    // lookups are not all cached (EAGAIN, natively too: whether
    // `/proc/self/status` is depends on what the machine looked up before);
    // the supervisor's own lookup may wait, which the flag permits (open.rs,
    // openat2).
    ("openat2 /proc/meminfo resolve=cached", CACHED),
    ("openat2 /proc/cpuinfo resolve=cached", CACHED),
    ("openat2 /proc/stat resolve=cached", CACHED),
    ("openat2 /proc/self/status resolve=cached", CACHED),
    ("openat2 /proc/uptime resolve=cached", CACHED),
    ("openat2 /proc/loadavg resolve=cached", CACHED),
    // O_TRUNC asks for write access: the host's root has CAP_DAC_OVERRIDE
    // over /proc (fd), the guest's namespaced root has not (EACCES); as
    // an unprivileged user both are EACCES.
    ("openat /proc/meminfo flags=trunc", TRUNC_PRIV),
    ("openat /proc/cpuinfo flags=trunc", TRUNC_PRIV),
    ("openat /proc/stat flags=trunc", TRUNC_PRIV),
    ("openat /proc/self/status flags=trunc", TRUNC_PRIV),
    ("openat /proc/uptime flags=trunc", TRUNC_PRIV),
    ("openat /proc/loadavg flags=trunc", TRUNC_PRIV),
];
const CACHED: &str = "RESOLVE_CACHED on a served /proc file";
const TRUNC_PRIV: &str = "write access to /proc depends on the host root's capabilities";
const NB_REFUSED: &str = "non-blocking loopback connect refused at once";
const UNMODELLED: &str = "option the netstack does not model";
const ACCEPT_KEEPS: &str = "a failed accept keeps the connection queued";
const PASSES_TO_UNIX: &str = "answered by the host AF_UNIX socket";

/// Words of `supervisor policy` naming the calls it services (the
/// "service" row, and the conditional rows' calls whose condition or
/// fallback says "serviced").
fn serviced_calls() -> BTreeSet<String> {
    let out = Run::new(&["policy"])
        .supervisor_raw(&["policy"])
        .ok("policy");
    let mut set = BTreeSet::new();
    for line in out.stdout.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let (class, calls) = (cells[1], cells[3]);
        if class == "service" {
            set.extend(calls.split(", ").map(str::to_owned));
        } else if class.starts_with("pass if") {
            // "name (condition; else fallback); name (...)"
            for entry in calls.split("); ") {
                if let Some((name, cond)) = entry.split_once(" (") {
                    if cond.contains("serviced") {
                        set.insert(name.trim().to_owned());
                    }
                }
            }
        }
    }
    assert!(
        set.len() > 30,
        "parsed too few serviced calls: {set:?}\n{}",
        out.stdout
    );
    set
}

/// Case name → result, in order, from the guest's output.
fn cases(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter(|l| !l.starts_with('#') && *l != "done")
        .filter_map(|l| l.rsplit_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The syscall a case exercises: its first word.
fn syscall_of(case: &str) -> &str {
    case.split(' ').next().unwrap_or(case)
}

/// The shell line both sides run through: a fresh network namespace with
/// only loopback up, then (for an unprivileged run) the user switch.
fn netns_wrap(user: Option<(u32, u32)>) -> Vec<String> {
    let drop_to = match user {
        Some((u, g)) => format!("setpriv --reuid={u} --regid={g} --clear-groups -- "),
        None => String::new(),
    };
    let script = format!("ip link set lo up && exec {drop_to}\"$@\"");
    ["unshare", "-n", "sh", "-c", &script, "sh"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

struct Sweep {
    native: Out,
    supervised: Out,
    pair: Pair,
}

/// Run `hostile [race] DIR` natively on pair.a and supervised on pair.b.
fn sweep(race: bool, user: Option<(u32, u32)>, sup_bin: &Path) -> Sweep {
    sweep_in(race, user, sup_bin, None)
}

/// [`sweep`], the supervisor started in `limits` (a safety cgroup) with
/// `--cpus 1 --memory 512m`, which sends sysinfo, sched_getaffinity and
/// the /proc files through their limit-aware branches.
fn sweep_in(
    race: bool,
    user: Option<(u32, u32)>,
    sup_bin: &Path,
    limits: Option<&cgroups::SafetyCgroup>,
) -> Sweep {
    let prog = c_prog("hostile");
    let pair = Pair::new(|_| {});
    if let Some((u, g)) = user {
        pair.base.give_to(u, g);
    }
    let mode: &[&str] = if race { &["race"] } else { &[] };
    let wrap = netns_wrap(user);
    let mut argv: Vec<String> = wrap.clone();
    argv.push(prog.display().to_string());
    argv.extend(mode.iter().map(|s| s.to_string()));
    argv.push(pair.a.display().to_string());
    let native = Run::new(&argv).native();
    let mut sup = Run::new(&[prog.as_os_str()])
        .sup(&c_mounts())
        .rw(pair.base.path())
        .bin(sup_bin);
    sup.argv.extend(mode.iter().map(|s| s.into()));
    sup.argv.push(pair.b.clone().into());
    if let Some(cg) = limits {
        sup = cg.wrap(sup.sup(&["--cpus", "1", "--memory", "512m"]));
    }
    sup.wrap.extend(wrap.iter().map(|s| s.into()));
    sup.timeout = Duration::from_secs(40);
    let supervised = sup.supervised();
    Sweep {
        native,
        supervised,
        pair,
    }
}

/// The supervisor answered every case and exited as the guest did.
fn assert_clean(s: &Sweep) {
    assert_eq!(
        s.native.code,
        Some(0),
        "native run failed:\n{}",
        s.native.dump()
    );
    let err = &s.supervised.stderr;
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "the supervisor panicked:\n{}",
        s.supervised.dump()
    );
    assert_eq!(
        s.supervised.code,
        Some(0),
        "the supervised guest did not exit 0 (125: the supervisor failed):\n{}",
        s.supervised.dump()
    );
    assert!(
        s.supervised.stdout.ends_with("done\n") || s.supervised.stdout.contains("race "),
        "the supervised guest stopped early:\n{}",
        s.supervised.dump()
    );
}

/// Compare case by case; known differences are only required to be there.
fn judge(s: &Sweep) {
    assert_clean(s);
    let known: BTreeMap<&str, &str> = KNOWN.iter().copied().collect();
    let (n, v) = (cases(&s.native.stdout), cases(&s.supervised.stdout));
    let names = |c: &[(String, String)]| c.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(names(&n), names(&v), "the two runs ran different cases");
    let stale: Vec<_> = known
        .keys()
        .filter(|k| !n.iter().any(|(c, _)| c == *k))
        .collect();
    assert!(
        stale.is_empty(),
        "KNOWN names cases the guest does not run: {stale:?}"
    );
    let mut bad = String::new();
    for ((case, want), (_, got)) in n.iter().zip(&v) {
        if want == got {
            continue;
        }
        match known.get(case.as_str()) {
            Some(why) => {
                eprintln!("known difference: {case}: native {want}, supervised {got} ({why})")
            }
            None => bad += &format!("{case}: native {want}, supervised {got}\n"),
        }
    }
    assert!(bad.is_empty(), "hostile cases answered differently:\n{bad}");
    assert_same(
        "scratch trees after the sweep",
        &snapshot_text(&s.pair.a),
        &snapshot_text(&s.pair.b),
    );
}

/// Why the sweeps cannot run here, if they cannot: they need `cc`,
/// `unshare`, and root for the network namespace.
fn cannot_sweep() -> Option<&'static str> {
    if !have("cc") || !have("unshare") {
        return Some("no C compiler (cc) or unshare");
    }
    if !is_root() {
        return Some("needs root (network namespace)");
    }
    None
}

#[test]
fn every_serviced_call_has_cases() {
    if let Some(why) = cannot_sweep() {
        skip!("{why}");
    }
    let s = sweep(false, None, &bin());
    assert_clean(&s);
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for (case, _) in cases(&s.native.stdout) {
        *count.entry(syscall_of(&case).to_owned()).or_default() += 1;
    }
    let missing: Vec<_> = serviced_calls()
        .into_iter()
        .filter(|c| !count.contains_key(c))
        .collect();
    eprintln!("hostile cases by syscall: {count:?}");
    assert!(
        missing.is_empty(),
        "serviced calls without hostile cases in tests/c/hostile.c: {missing:?}"
    );
}

#[test]
fn hostile_arguments_match_native_as_root() {
    if let Some(why) = cannot_sweep() {
        skip!("{why}");
    }
    judge(&sweep(false, None, &bin()));
}

#[test]
fn hostile_arguments_match_native_as_tester() {
    if let Some(why) = cannot_sweep() {
        skip!("{why}");
    }
    if !have("setpriv") {
        skip!("no setpriv");
    }
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    judge(&sweep(false, Some((uid, gid)), &bin));
}

#[test]
fn hostile_arguments_match_native_under_limits() {
    if let Some(why) = cannot_sweep() {
        skip!("{why}");
    }
    let Some(cg) = cgroups::SafetyCgroup::new("hostile", 2 << 30, 256) else {
        skip!("no cgroup to start the supervisor in");
    };
    judge(&sweep_in(false, None, &bin(), Some(&cg)));
}

/// Guest memory unmapped and re-mapped by one thread while another is in a
/// serviced call that reads or writes it: every call comes back with
/// success or an errno the kernel gives for such memory.
#[test]
fn memory_races_get_answers() {
    if let Some(why) = cannot_sweep() {
        skip!("{why}");
    }
    let s = sweep(true, None, &bin());
    assert_clean(&s);
    let lines = |o: &Out| o.stdout.lines().filter(|l| l.starts_with("race ")).count();
    assert!(lines(&s.native) > 20, "{}", s.native.dump());
    assert_eq!(
        lines(&s.supervised),
        lines(&s.native),
        "{}",
        s.supervised.dump()
    );
    assert!(
        !s.supervised.stdout.contains("unexpected"),
        "a racing call got an errno the kernel would not give:\n{}",
        s.supervised.dump()
    );
}
