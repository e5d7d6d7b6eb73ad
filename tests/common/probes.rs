//! Running and judging the two C probes, shared by tests/fs/fsprobe.rs,
//! tests/security/denied.rs and tests/security/unprivileged.rs.
//!
//! - [`fsprobe`]: tests/c/fsprobe.c natively on `base/a` and supervised on
//!   `base/b` (`--rw base:base`), then [`judge_fsprobe`] compares them.
//! - [`DENIED`] and [`check_denied`]: what tests/c/denied.c must print under
//!   the supervisor and what the report must count.

use super::*;

/// fsprobe cases whose result depends on capabilities: root natively has
/// them (DAC override, CAP_MKNOD, CAP_DAC_READ_SEARCH), root in the sandbox
/// has none. Compared only when the invoker is not root.
pub const PRIV_DEPENDENT: &[&str] = &[
    "open_mode000_rd",
    "open_mode444_wr",
    "access_mode000_r",
    "mknod_chr",
    "empty_path_linkat",
];

/// Tree entries those cases create natively as root only.
const PRIV_DEPENDENT_ENTRIES: &[&str] = &["chr1", "flink_empty"];

/// Never compared: chown to an id that is not ours succeeds natively as root
/// and must fail in the sandbox (the guest's user namespace maps one id).
/// Checked instead by [`judge_fsprobe`].
const CHOWN_OTHER: &[&str] = &["chown_other", "chown_other_stat"];

/// Outputs and trees of one fsprobe pair.
pub struct FsProbe {
    pub pair: Pair,
    pub native: Out,
    pub supervised: Out,
}

/// Run fsprobe natively and supervised (as `user` if given, which must own
/// nothing special: the pair is handed to it first). The guest has one id
/// (`--userns-range none`, root's default being a range): the cases above
/// are judged against that guest, whose chown to another id must fail.
pub fn fsprobe(user: Option<(u32, u32)>, bin: &Path) -> FsProbe {
    let prog = c_prog("fsprobe");
    let pair = Pair::new(|_| {});
    if let Some((u, g)) = user {
        pair.base.give_to(u, g);
    }
    let mut native = Run::new(&[prog.as_os_str(), pair.a.as_os_str()]);
    native.user = user;
    let native_out = native.native();
    let mut sup = Run::new(&[prog.as_os_str(), pair.b.as_os_str()])
        .sup(&c_mounts())
        .rw(pair.base.path())
        .sup(&["--userns-range", "none"])
        .bin(bin);
    sup.user = user;
    let sup_out = sup.supervised();
    FsProbe {
        pair,
        native: native_out,
        supervised: sup_out,
    }
}

fn keep(line: &str, privileged: bool) -> bool {
    let name = line.split(':').next().unwrap_or("");
    let chown_other = CHOWN_OTHER.contains(&name);
    let priv_dependent = privileged && PRIV_DEPENDENT.contains(&name);
    !(chown_other || priv_dependent)
}

/// In the final directory listing, drop the entries only root creates natively.
fn unlist_priv_entries(line: &str, privileged: bool) -> String {
    if !privileged || !line.starts_with("final_listing:") {
        return line.to_owned();
    }
    line.split(' ')
        .filter(|w| !PRIV_DEPENDENT_ENTRIES.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Compare the two runs line by line (paths normalised), then the resulting
/// trees; check that chown to another id failed in the sandbox.
pub fn judge_fsprobe(p: &FsProbe, privileged: bool) {
    assert_eq!(
        p.native.code,
        Some(0),
        "fsprobe natively:\n{}",
        p.native.dump()
    );
    assert_eq!(
        p.supervised.code,
        Some(0),
        "fsprobe supervised:\n{}",
        p.supervised.dump()
    );
    let filt = |s: &str| -> String {
        p.pair
            .norm(s)
            .lines()
            .filter(|l| keep(l, privileged))
            .map(|l| unlist_priv_entries(l, privileged) + "\n")
            .collect()
    };
    let (n, s) = (filt(&p.native.stdout), filt(&p.supervised.stdout));
    assert!(
        n.lines().count() > 250,
        "fsprobe printed too little natively:\n{n}"
    );
    assert_same("fsprobe", &n, &s);

    let chown = p
        .supervised
        .stdout
        .lines()
        .find(|l| l.starts_with("chown_other:"))
        .unwrap_or("");
    assert!(
        chown == "chown_other: EPERM" || chown == "chown_other: EINVAL",
        "chown to another id must fail in the sandbox, got {chown:?}"
    );

    let (mut ta, mut tb) = (snapshot(&p.pair.a), snapshot(&p.pair.b));
    // c2 is the chown_other target.
    let mut skip: Vec<&str> = vec!["c2"];
    if privileged {
        skip.extend_from_slice(PRIV_DEPENDENT_ENTRIES);
    }
    for k in skip {
        ta.remove(k);
        tb.remove(k);
    }
    let fmt = |t: &BTreeMap<String, String>| {
        p.pair.norm(
            &t.iter()
                .map(|(k, v)| format!("{k}: {v}\n"))
                .collect::<String>(),
        )
    };
    assert_same("tree after fsprobe", &fmt(&ta), &fmt(&tb));
}

/// denied.c case → (expected errno under the sandbox, syscall name in the
/// report's "denied" map; None when not counted by name: `clone3`, which
/// the filter answers itself, and a number without a name).
pub const DENIED: &[(&str, &str, Option<&str>)] = &[
    ("mount", "EPERM", Some("mount")),
    ("umount2", "EPERM", Some("umount2")),
    ("pivot_root", "EPERM", Some("pivot_root")),
    ("chroot", "EPERM", Some("chroot")),
    ("unshare", "EPERM", Some("unshare")),
    ("setns", "EPERM", Some("setns")),
    ("ptrace", "EPERM", Some("ptrace")),
    ("process_vm_readv", "EPERM", Some("process_vm_readv")),
    ("process_vm_writev", "EPERM", Some("process_vm_writev")),
    ("bpf", "EPERM", Some("bpf")),
    ("perf_event_open", "EPERM", Some("perf_event_open")),
    ("userfaultfd", "EPERM", Some("userfaultfd")),
    ("io_uring_setup", "ENOSYS", Some("io_uring_setup")),
    ("io_uring_enter", "ENOSYS", Some("io_uring_enter")),
    ("io_uring_register", "ENOSYS", Some("io_uring_register")),
    ("keyctl", "ENOSYS", Some("keyctl")),
    ("add_key", "ENOSYS", Some("add_key")),
    ("request_key", "ENOSYS", Some("request_key")),
    ("clone3", "ENOSYS", None),
    ("clone_newuser", "EPERM", Some("clone")),
    ("clone_newns", "EPERM", Some("clone")),
    ("iopl", "EPERM", Some("iopl")),
    ("ioperm", "EPERM", Some("ioperm")),
    ("syslog", "EPERM", Some("syslog")),
    ("reboot", "EPERM", Some("reboot")),
    ("swapon", "EPERM", Some("swapon")),
    ("swapoff", "EPERM", Some("swapoff")),
    ("acct", "EPERM", Some("acct")),
    ("quotactl", "EPERM", Some("quotactl")),
    ("kexec_load", "EPERM", Some("kexec_load")),
    ("kexec_file_load", "EPERM", Some("kexec_file_load")),
    ("init_module", "EPERM", Some("init_module")),
    ("finit_module", "EPERM", Some("finit_module")),
    ("delete_module", "EPERM", Some("delete_module")),
    ("name_to_handle_at", "EPERM", Some("name_to_handle_at")),
    ("open_by_handle_at", "EPERM", Some("open_by_handle_at")),
    ("socket_packet", "EPERM", Some("socket")),
    ("socket_inet_raw", "EPERM", Some("socket")),
    ("socket_netlink", "EAFNOSUPPORT", Some("socket")),
    ("ioctl_tiocsti", "EPERM", Some("ioctl")),
    ("sethostname", "EPERM", Some("sethostname")),
    ("fanotify_init", "EPERM", Some("fanotify_init")),
    ("pidfd_getfd", "EPERM", Some("pidfd_getfd")),
    ("kcmp", "EPERM", Some("kcmp")),
    ("unknown_1000", "ENOSYS", None),
    ("pthread_create_fallback", "0", None),
];

/// Calls the filter answers itself: never in the report's "denied" map.
pub const UNCOUNTED: &[&str] = &["clone3"];

/// What is wrong with report `rep` counting a call of [`UNCOUNTED`]
/// (denied or serviced): one line each, none when it counts none.
pub fn uncounted_counted(rep: &serde_json::Value) -> Vec<String> {
    UNCOUNTED
        .iter()
        .filter(|name| {
            !rep["syscalls"]["denied"][**name].is_null()
                || !rep["syscalls"]["serviced"][**name].is_null()
        })
        .map(|name| format!("report counts {name:?}, which the filter answers: {rep}"))
        .collect()
}

/// Run denied.c under the supervisor (never natively) with a report, and
/// check every errno and every count. Returns the list of problems.
pub fn check_denied(user: Option<(u32, u32)>, bin: &Path) -> Vec<String> {
    let dir = Tree::new();
    if let Some((u, g)) = user {
        dir.give_to(u, g);
    }
    let report = dir.join("report.json");
    let _ = guard();
    let mut r = Run::new(&[
        c_prog("denied").display().to_string(),
        HOST_MARKER.to_string(),
    ])
    .sup(&c_mounts())
    .rw(dir.path())
    .sup(&["--report".to_string(), report.display().to_string()])
    .bin(bin);
    r.user = user;
    let out = r.supervised();
    let mut bad = Vec::new();
    if out.code != Some(0) {
        bad.push(format!(
            "denied.c exited {:?} (expected 0):\n{}",
            out.code,
            out.dump()
        ));
    }
    let got: BTreeMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .collect();
    for (case, errno, _) in DENIED {
        match got.get(case) {
            Some(v) if v == errno => {}
            other => bad.push(format!("{case}: expected {errno}, got {other:?}")),
        }
    }
    if !report.exists() {
        bad.push("no report written".into());
        return bad;
    }
    let rep = read_report(&report);
    let denied = &rep["syscalls"]["denied"];
    let mut want: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, _, name) in DENIED {
        if let Some(n) = name {
            *want.entry(n).or_default() += 1;
        }
    }
    for (name, n) in want {
        let c = denied[name].as_u64().unwrap_or(0);
        if c < n {
            bad.push(format!(
                "report denied[{name:?}] = {c}, expected >= {n} (denied map: {denied})"
            ));
        }
    }
    bad.extend(uncounted_counted(&rep));
    bad
}
