//! Helpers of the OCI runtime tests (`tests/oci/cli.rs`, `tests/oci/docker.rs`):
//! a busybox-static root file system, a bundle around it, and the runtime's
//! commands run with a private `--root` and `--log`.
//!
//! Not here: what any single test expects.

use super::*;

/// The busybox-static binary (Debian `busybox-static`).
pub const BUSYBOX: &str = "/bin/busybox";

/// Applets the rootfs links to busybox.
const APPLETS: &[&str] = &[
    "sh", "echo", "cat", "sleep", "ls", "true", "false", "env", "hostname", "pwd", "id", "kill",
    "wc", "head", "tr", "dd", "stat", "touch",
];

/// Whether busybox-static is installed (a static binary runs in any rootfs).
pub fn have_busybox() -> bool {
    let Ok(out) = Command::new("file").arg("-L").arg(BUSYBOX).output() else {
        return Path::new(BUSYBOX).is_file();
    };
    String::from_utf8_lossy(&out.stdout).contains("statically linked")
}

/// Fills `root` with busybox and its applets in /bin, and empty /etc, /tmp, /data.
pub fn busybox_rootfs(root: &Path) {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir rootfs/bin");
    std::fs::copy(BUSYBOX, bin.join("busybox")).expect("copy busybox");
    for a in APPLETS {
        std::os::unix::fs::symlink("busybox", bin.join(a)).expect("applet link");
    }
    for d in ["etc", "tmp", "data", "proc", "dev", "sys"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir rootfs dir");
    }
}

/// A bundle directory: `rootfs/` (busybox) and a config.json from
/// `supervisor spec`, changed by `edit`.
pub fn bundle(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    busybox_rootfs(&dir.join("rootfs"));
    let spec = Command::new(bin())
        .args(["spec", "--bundle"])
        .arg(dir)
        .output()
        .expect("run spec");
    assert!(spec.status.success(), "spec: {spec:?}");
    let path = dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read config")).expect("config json");
    config["process"]["terminal"] = false.into();
    edit(&mut config);
    std::fs::write(&path, config.to_string()).expect("write config");
}

/// The runtime with its own state root and log.
pub struct Runtime {
    pub root: PathBuf,
    pub log: PathBuf,
}

impl Runtime {
    pub fn new(dir: &Path) -> Runtime {
        Runtime {
            root: dir.join("state"),
            log: dir.join("runtime.log"),
        }
    }

    /// The command line `supervisor --root R --log L --log-format json ARGS`.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("--root")
            .arg(&self.root)
            .arg("--log")
            .arg(&self.log)
            .args(["--log-format", "json"])
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Runs a command to its end (stdio captured).
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.cmd(args).output().expect("run the runtime")
    }

    /// The host pids of container `id`'s processes (`ps --format json`),
    /// at least one.
    pub fn pids(&self, id: &str) -> Vec<i32> {
        let ps = self.run(&["ps", "--format", "json", id]);
        let pids: Vec<i32> = serde_json::from_slice(&ps.stdout).expect("ps json");
        assert!(!pids.is_empty(), "{ps:?}");
        pids
    }

    /// `update --resources - ID` with `json` on its stdin.
    pub fn update(&self, id: &str, json: &[u8]) -> std::process::Output {
        use std::io::Write;
        let mut up = (self.cmd(&["update", "--resources", "-", id]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the runtime");
        up.stdin.take().map(|mut i| i.write_all(json));
        up.wait_with_output().expect("wait for update")
    }

    /// `state ID` as JSON (panics if it fails).
    pub fn state(&self, id: &str) -> serde_json::Value {
        let out = self.run(&["state", id]);
        assert!(out.status.success(), "state {id}: {out:?}");
        serde_json::from_slice(&out.stdout).expect("state json")
    }
}

/// A busybox script for a writable root: creates and opens for reading and writing at the root, in a
/// directory made there, and beneath a granted entry; busybox `touch`
/// opens `O_RDWR | O_CREAT`.
pub const ROOT_WRITES: &str = "true <> /n3; echo create $?; \
    echo x > /made; true <> /made; echo made $?; \
    busybox mkdir /d; true <> /d/f; echo sub $?; \
    touch /x 2>&1; echo touch $?; \
    echo hi 1<> /d/g; cat /d/g; \
    true <> /tmp/t; echo tmp $?; \
    touch /x 2>&1; echo again $?";

/// What [`ROOT_WRITES`] prints natively (`tests/fs/root_writes.rs`).
pub const ROOT_WRITES_NATIVE: &str = "create 0\nmade 0\nsub 0\ntouch 0\nhi\ntmp 0\nagain 0\n";

/// The `supervisor` entry's start in `path` (/etc/subuid or /etc/subgid).
pub fn supervisor_start(path: &str) -> u32 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .find_map(|l| {
            l.strip_prefix("supervisor:")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no supervisor entry in {path}:\n{text}"))
}

/// Read from the host, each of `pids` runs with every uid and gid (real,
/// effective, saved, filesystem) in the range of 65536 from `start`: none
/// is host root. A process listed that has left by the time its status is
/// read (a short-lived one of the container's) is passed over, but at
/// least one must be there to check.
pub fn assert_on_range(pids: &[i32], start: u32) {
    let mut checked = 0;
    for p in pids {
        let ids = host_ids_of(*p);
        if ids.is_empty() && !std::path::Path::new(&format!("/proc/{p}")).exists() {
            continue;
        }
        assert_eq!(ids.len(), 8, "/proc/{p}/status");
        assert!(
            ids.iter().all(|id| (start..start + 65536).contains(id)),
            "/proc/{p}/status: {ids:?}"
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "none of the container's processes {pids:?} is left to check"
    );
}

/// The `Uid:` and `Gid:` fields of `/proc/PID/status`, read from the host.
pub fn host_ids_of(pid: i32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("Uid:") || l.starts_with("Gid:"))
        .flat_map(|l| l.split_whitespace().skip(1).map(|n| n.parse().unwrap()))
        .collect()
}
