//! The ids a guest reads in /proc are its own, as its `id` says: the
//! kernel prints a process's `status` (`Uid:`, `Gid:`, `Groups:`) and
//! `loginuid` for the user namespace of whoever opened the file, and the
//! supervisor opens them for the guest (`procfs/src/guest_ids.rs`). Read
//! through `grep`, `ps` (its USER, UID and GID columns) and a Python
//! parse of `/proc/1/status` and `/proc/self/status` (a read, a rewind
//! and a read again), as root (the guest's ids on the `supervisor`
//! range, also through a pool, with a cpu limit, and with supplementary
//! groups the range does not map: the overflow id 65534, as in `id`),
//! as root with `--userns-range none`, and as `tester` with its own id
//! alone and with its subordinate range (`auto`). As root the output is
//! the same as natively in a pid namespace of its own (all 0).

use crate::common;
use common::pool::Pool;
use common::*;

/// What the guest prints: `id`'s view (the kernel's answers to the
/// calls), then the same ids as /proc and the tools that read it say.
const SCRIPT: &str = r#"
echo "id $(id -u) $(id -g) $(id -un) | $(id -G)"
grep -E '^(Uid|Gid|Groups):' /proc/self/status
grep -E '^(Uid|Gid):' /proc/$$/task/$$/status | sed 's/^/task /'
echo "ps1 $(ps -o user=,uid=,gid= -p 1)"
echo "ps $(ps -o user=,uid=,gid= -p $$)"
python3 -c '
import os
def ids(path):
    with open(path) as f:
        first = f.read()
        f.seek(0)
        again = f.read()
    def lines(text):
        return {l.split(":")[0]: l.split()[1:] for l in text.splitlines()
                if l.startswith(("Uid:", "Gid:", "Groups:"))}
    return lines(first), lines(again)
init, init_again = ids("/proc/1/status")
me, me_again = ids("/proc/self/status")
print("py rewind", init == init_again and me == me_again)
print("py init", " ".join(init["Uid"]), "|", " ".join(init["Gid"]))
print("py self", me["Uid"] == [str(i) for i in os.getresuid()] + [str(os.getuid())],
      me["Gid"] == [str(i) for i in os.getresgid()] + [str(os.getgid())],
      sorted(me["Groups"]) == sorted(str(g) for g in os.getgroups()))
'
"#;

/// The script's output, checked line by line against what its `id`
/// printed: every id /proc gives is the guest's. Returns the guest's
/// (uid, gid).
fn check_against_id(out: &Out, who: &str) -> (u32, u32) {
    let text = &out.stdout;
    let line = |prefix: &str| -> Vec<&str> {
        let found = text.lines().find_map(|l| l.strip_prefix(prefix));
        let found = found.unwrap_or_else(|| panic!("{who}: no {prefix:?} in {}", out.dump()));
        found.split_whitespace().collect()
    };
    let id = line("id ");
    let (uid, gid, name) = (id[0], id[1], id[2]);
    let id_groups: Vec<&str> = id[4..].to_vec();
    let all = |v: Vec<&str>, want: &str| v.len() == 4 && v.iter().all(|x| *x == want);
    assert!(all(line("Uid:"), uid), "{who}: Uid: {}", out.dump());
    assert!(all(line("Gid:"), gid), "{who}: Gid: {}", out.dump());
    assert!(
        all(line("task Uid:"), uid),
        "{who}: task Uid: {}",
        out.dump()
    );
    assert!(
        all(line("task Gid:"), gid),
        "{who}: task Gid: {}",
        out.dump()
    );
    // `id -G` is the effective gid and the supplementary groups.
    let groups = line("Groups:");
    assert!(
        groups.iter().all(|g| id_groups.contains(g))
            && id_groups.iter().all(|g| *g == gid || groups.contains(g)),
        "{who}: Groups: {}",
        out.dump()
    );
    // ps's USER is the name `id -un` gives; init runs as the command's user.
    assert_eq!(line("ps "), [name, uid, gid], "{who}: {}", out.dump());
    assert_eq!(line("ps1 "), [name, uid, gid], "{who}: {}", out.dump());
    let py_init = format!("{uid} {uid} {uid} {uid} | {gid} {gid} {gid} {gid}");
    assert!(
        text.contains(&format!("py init {py_init}\n")),
        "{who}: {}",
        out.dump()
    );
    assert!(
        text.contains("py rewind True\npy init") && text.contains("py self True True True\n"),
        "{who}: {}",
        out.dump()
    );
    let number = |s: &str| s.parse().unwrap_or_else(|_| panic!("{who}: {s}"));
    (number(uid), number(gid))
}

fn run() -> Run {
    Run::sh(SCRIPT, &[])
}

/// Natively the same script in a pid namespace of its own (its shell
/// is pid 1, as `scripts/compare` runs `ps`).
fn native_in_pid_ns() -> Out {
    let argv = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        SCRIPT,
    ];
    Run::new(&argv).native()
}

#[test]
fn a_root_guest_reads_its_own_ids_in_proc() {
    if !is_root() {
        skip!("needs root");
    }
    let out = run().supervised().ok("supervised");
    assert_eq!(check_against_id(&out, "root"), (0, 0));
    // The supplementary groups are the invoker's, as for the guest: only
    // the id lines are compared.
    let native = native_in_pid_ns().ok("native");
    let ids = |o: &Out| {
        let keep = |l: &&str| !l.starts_with("Groups:") && !l.starts_with("id ");
        o.stdout
            .lines()
            .filter(keep)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&out), ids(&native), "{}\n{}", out.dump(), native.dump());
}

/// Groups the range does not map read as the overflow id, in `id` and
/// in /proc alike.
#[test]
fn unmapped_supplementary_groups_read_as_the_overflow_id() {
    if !is_root() || !have("setpriv") {
        skip!("needs root and setpriv");
    }
    for range in [&[][..], &["--userns-range", "none"][..]] {
        let mut run = run().sup(range);
        run.wrap = ["setpriv", "--groups", "0,4"]
            .map(std::ffi::OsString::from)
            .to_vec();
        let out = run.supervised().ok("supervised");
        check_against_id(&out, &format!("root {range:?}"));
        assert!(
            out.stdout.contains("Groups:\t") && out.stdout.contains("65534"),
            "{range:?}: {}",
            out.dump()
        );
    }
}

#[test]
fn ids_read_as_the_guests_with_a_cpu_limit_through_a_pool_and_alone() {
    if !is_root() {
        skip!("needs root");
    }
    let out = run().sup(&["--cpus", "1"]).supervised().ok("--cpus");
    assert_eq!(check_against_id(&out, "--cpus"), (0, 0));
    let cut = Run::sh("grep Cpus_allowed_list /proc/self/status", &[]);
    let cut = cut.sup(&["--cpus", "1"]).supervised().ok("--cpus list");
    assert!(
        cut.stdout.lines().all(|l| !l.contains(['-', ','])),
        "the cpu limit's cut stays: {}",
        cut.dump()
    );
    let pool = Pool::start(&[]);
    let out = run().sup(&pool.flag()).supervised().ok("pooled");
    assert_eq!(check_against_id(&out, "pooled"), (0, 0));
    let out = run().sup(&["--userns-range", "none"]).supervised();
    assert_eq!(check_against_id(&out.ok("none"), "none"), (0, 0));
}

#[test]
fn an_unprivileged_guest_reads_its_own_ids_in_proc() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let own = run().user(uid, gid).bin(&bin).supervised().ok("tester");
    assert_eq!(check_against_id(&own, "tester"), (uid, gid));
    let has_range = |path: &str| {
        std::fs::read_to_string(path).is_ok_and(|t| t.lines().any(|l| l.starts_with("tester:")))
    };
    if !has_range("/etc/subuid") || !has_range("/etc/subgid") || !have("newuidmap") {
        skip!("tester has no subordinate range (or no newuidmap)");
    }
    let auto = run()
        .user(uid, gid)
        .bin(&bin)
        .sup(&["--userns-range", "auto"]);
    let auto = auto.supervised().ok("tester auto");
    assert_eq!(check_against_id(&auto, "tester auto"), (0, 0));
}

/// The login uid (inherited from the invoker, unchangeable in the
/// guest) reads as the guest's namespace maps it: host 0 is not in the
/// `supervisor` range, so 4294967295, as natively in a user namespace
/// that does not map it.
#[test]
fn the_login_uid_reads_as_the_guests_namespace_maps_it() {
    if !is_root() {
        skip!("needs root");
    }
    let set = "echo 0 > /proc/self/loginuid 2>/dev/null || { echo unset; exit 0; }; exec \"$@\"";
    let read = ["cat", "/proc/self/loginuid"];
    let native = Run::new(&[&["sh", "-c", set, "sh", "unshare", "--user"][..], &read[..]].concat());
    let native = native.native().ok("native");
    if native.stdout == "unset\n" {
        skip!("this process may not set its login uid (no CAP_AUDIT_CONTROL or audit)");
    }
    assert_eq!(native.stdout, "4294967295");
    let bin = bin().display().to_string();
    let guest = [&["sh", "-c", set, "sh", &bin, "run", "--"][..], &read[..]].concat();
    let guest = Run::new(&guest).native().ok("supervised");
    assert_eq!(guest.stdout, native.stdout, "{}", guest.dump());
}
