//! pause/resume of a guest that is mid-notification: a shell loop of
//! `[ -e /etc/passwd ]` (a stat the supervisor services), frozen and
//! thawed again and again. The monitor serves those calls, so it must
//! never sit in the frozen cgroup: a guest thread waiting for its answer
//! could not freeze, and the freezer would stay FREEZING (v1) or never
//! report `frozen 1` (v2), with the container hung.
//!
//! Under cgroup v1 the runtime uses the freezer hierarchy. For v2 each
//! runtime command runs in a private mount namespace (`unshare -m`) in
//! which the v1 hierarchies are unmounted, so the runtime finds only the
//! cgroup2 mount (`/sys/fs/cgroup/unified`, which has no controllers
//! here: `cgroup.freeze` is core to v2), and in a v2 cgroup the test
//! creates beneath its own.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::oci::{bundle, have_busybox, Runtime};
use common::{bin, Tree};
use serde_json::json;

/// Rounds of pause and resume.
const ROUNDS: usize = 20;

/// The guest: stat calls the supervisor services, without end.
const STAT_LOOP: &str = "while :; do [ -e /etc/passwd ]; done";

/// How the runtime is run: as is (v1), or in a mount namespace with only
/// the cgroup2 hierarchy, from within v2 cgroup `.0`.
struct Runner<'a> {
    rt: &'a Runtime,
    v2_cgroup: Option<PathBuf>,
}

/// Joins the v2 cgroup `$1`, unmounts every v1 hierarchy, execs the rest.
const ONLY_V2: &str = r#"cg=$1; shift
echo $$ > "$cg/cgroup.procs" || exit 1
for m in /sys/fs/cgroup/*; do
  [ "$m" = /sys/fs/cgroup/unified ] || umount -l "$m" || exit 1
done
exec "$@""#;

impl Runner<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let Some(cg) = &self.v2_cgroup else {
            return self.rt.cmd(args);
        };
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            ONLY_V2,
            "sh",
        ])
        .arg(cg)
        .arg(bin())
        .arg("--root")
        .arg(&self.rt.root)
        .arg("--log")
        .arg(&self.rt.log)
        .args(["--log-format", "json"])
        .args(args)
        .stdin(std::process::Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().expect("run the runtime");
        let log = fs::read_to_string(&self.rt.log).unwrap_or_default();
        assert!(out.status.success(), "{args:?}: {out:?}\nlog: {log}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn status(&self, id: &str) -> String {
        let state: serde_json::Value = serde_json::from_str(&self.ok(&["state", id])).unwrap();
        state["status"].as_str().unwrap_or_default().to_string()
    }
}

/// Creates and starts `id` running [`STAT_LOOP`], pauses and resumes it
/// [`ROUNDS`] times (each pause must finish: the runtime waits for the
/// kernel to report it frozen), and deletes it; the anchor's pid.
fn freeze_and_thaw(r: &Runner, dir: &Path, id: &str, check: impl Fn(i32, &[i32])) {
    bundle(dir, |c| {
        c["process"]["args"] = json!(["sh", "-c", STAT_LOOP])
    });
    let pid_file = dir.join("pid");
    let pid_arg = pid_file.to_str().unwrap();
    // The guest inherits create's stdio: files, not pipes read to their end.
    let created = r
        .cmd(&[
            "create",
            "--bundle",
            dir.to_str().unwrap(),
            "--pid-file",
            pid_arg,
            id,
        ])
        .stdout(fs::File::create(dir.join("stdout")).unwrap())
        .stderr(fs::File::create(dir.join("stderr")).unwrap())
        .status()
        .expect("create");
    let log = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert!(created.success(), "create: {log}");
    let anchor: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    r.ok(&["start", id]);
    for round in 0..ROUNDS {
        r.ok(&["pause", id]);
        assert_eq!(r.status(id), "paused", "round {round}");
        if round == 0 {
            let pids: Vec<i32> =
                serde_json::from_str(&r.ok(&["ps", "--format", "json", id])).unwrap();
            check(anchor, &pids);
        }
        r.ok(&["resume", id]);
        assert_eq!(r.status(id), "running", "round {round}");
    }
    r.ok(&["delete", "--force", id]);
}

/// The `0::` (v2) line of process `pid`'s cgroups.
fn v2_cgroup_of(pid: i32) -> String {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let line = text.lines().find_map(|l| l.strip_prefix("0::"));
    line.unwrap_or_default().to_string()
}

fn freezer_of(pid: i32) -> String {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let line = text.lines().find(|l| l.contains(":freezer:"));
    line.unwrap_or_default().to_string()
}

#[test]
fn a_guest_in_serviced_calls_freezes_and_thaws_under_v1() {
    if !have_busybox() || !common::is_root() || !Path::new("/sys/fs/cgroup/freezer").is_dir() {
        skip!("needs busybox-static, root and the v1 freezer");
    }
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let r = Runner {
        rt: &rt,
        v2_cgroup: None,
    };
    freeze_and_thaw(&r, t.path(), "stat-v1", |anchor, pids| {
        assert!(!pids.is_empty());
        for p in pids {
            assert_ne!(
                freezer_of(*p),
                freezer_of(anchor),
                "{p} shares the anchor's freezer"
            );
        }
    });
}

/// A v2 cgroup beneath the root of the cgroup2 mount (this process's own
/// v2 cgroup here), removed on drop.
struct V2Cgroup(PathBuf);

impl Drop for V2Cgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

#[test]
fn a_guest_in_serviced_calls_freezes_and_thaws_under_v2() {
    let unified = Path::new("/sys/fs/cgroup/unified");
    let own = v2_cgroup_of(std::process::id() as i32);
    if !have_busybox() || !common::is_root() || !unified.join("cgroup.procs").exists() {
        skip!("needs busybox-static, root and cgroup2 at /sys/fs/cgroup/unified");
    }
    if Command::new("unshare").arg("--help").output().is_err() {
        skip!("needs unshare (util-linux)");
    }
    let own_dir = unified.join(own.trim_start_matches('/'));
    let cg = V2Cgroup(own_dir.join(format!("oci-pause-{}", std::process::id())));
    fs::create_dir_all(&cg.0).expect("create the test's v2 cgroup");
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let r = Runner {
        rt: &rt,
        v2_cgroup: Some(cg.0.clone()),
    };
    freeze_and_thaw(&r, t.path(), "stat-v2", |anchor, pids| {
        // The runtime used v2: the sandbox in the container's frozen
        // `sandbox` leaf, and the anchor with it (where the engine's shim,
        // which finds the cgroup by the anchor's pid, sees the guest's OOM
        // kills); the monitor beside them, in the `monitor` leaf.
        assert!(
            v2_cgroup_of(anchor).ends_with("/stat-v2/sandbox"),
            "{}",
            v2_cgroup_of(anchor)
        );
        assert!(!pids.is_empty());
        for p in pids {
            assert!(
                v2_cgroup_of(*p).ends_with("/stat-v2/sandbox"),
                "{}",
                v2_cgroup_of(*p)
            );
        }
        let events = fs::read_to_string(cg.0.join("stat-v2/sandbox/cgroup.events")).unwrap();
        assert!(events.lines().any(|l| l == "frozen 1"), "{events}");
    });
    assert!(
        !cg.0.join("stat-v2").exists(),
        "delete removes the container's cgroup"
    );
}
