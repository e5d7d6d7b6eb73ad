//! Helpers of the container-engine tests (`tests/oci/docker.rs`,
//! `tests/oci/podman.rs`, `tests/oci/containerd.rs`), which start a real
//! engine with this runtime registered: the busybox image's rootfs
//! tarball, this process's cgroup (some engines get a cgroup parent
//! beneath it), the cleanup an engine leaves (mounts, cgroup directories
//! beneath a parent of ours or of the engine's own), and an
//! engine client command run with a watchdog.
//!
//! Not here: any engine's configuration or what a test expects.

use super::*;

/// Makes `<dir>/image.tar`: the busybox-static rootfs ([`oci::busybox_rootfs`])
/// as a plain tarball (what `docker import` and `podman import` take).
pub fn busybox_tarball(dir: &Path) -> PathBuf {
    let root = dir.join("image-rootfs");
    oci::busybox_rootfs(&root);
    // Writable by every user, as an image's /tmp is.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
        .expect("chmod tmp");
    let tar = dir.join("image.tar");
    let made = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()
        .expect("tar");
    assert!(made.success(), "tar of the busybox rootfs failed");
    tar
}

/// Our path in the memory hierarchy (v1), from /proc/self/cgroup.
pub fn own_memory_cgroup() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines()
        .find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, c, path) = (p.next()?, p.next()?, p.next()?);
            c.split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .map(|p| p.trim_end_matches('/').to_string())
}

/// Lazily unmounts every mount point beneath `dir`, deepest first.
pub fn unmount_beneath(dir: &Path) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(PathBuf::from))
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in points {
        let _ = nix::mount::umount2(&p, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// Removes the (empty) cgroup directories an engine and the runtime made
/// for a cgroup parent in each v1 hierarchy: everything beneath the
/// parent (deepest first: Podman's `conmon` child), the parent, and its
/// ancestors down to (not including) this process's own cgroup there.
pub fn remove_cgroup_parent(parent: &str) {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in own.lines() {
        let mut p = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(own_path)) = (p.next(), p.next(), p.next()) else {
            continue;
        };
        let Some(first) = ctrls
            .split(',')
            .find(|c| !c.is_empty() && !c.starts_with("name="))
        else {
            continue;
        };
        let base = Path::new("/sys/fs/cgroup").join(ctrls.trim_start_matches("name="));
        let base = if base.exists() {
            base
        } else {
            Path::new("/sys/fs/cgroup").join(first)
        };
        let mut dir = PathBuf::from(parent);
        if !dir.starts_with(own_path) || dir == Path::new(own_path) {
            continue;
        }
        remove_children(&base.join(dir.strip_prefix("/").unwrap_or(&dir)));
        while dir.starts_with(own_path) && dir != Path::new(own_path) {
            let _ = std::fs::remove_dir(base.join(dir.strip_prefix("/").unwrap_or(&dir)));
            if !dir.pop() {
                break;
            }
        }
    }
}

/// Removes the cgroup directories beneath `dir` (not `dir`), deepest first.
fn remove_children(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            remove_children(&e.path());
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// The cgroup directories beneath an engine's own cgroup parent (Docker's
/// `/docker`, Podman's `/libpod_parent` under the cgroupfs manager), in
/// every mounted hierarchy, as they were before the test's engine ran:
/// what is there afterwards and was not before is the test's to find
/// ([`EngineCgroups::left`]) and remove ([`EngineCgroups::remove_left`]),
/// with the parent itself when the test's engine made it.
pub struct EngineCgroups {
    /// The parent's directory in each hierarchy, and whether it existed.
    parents: Vec<(PathBuf, bool)>,
    before: std::collections::BTreeSet<PathBuf>,
}

impl EngineCgroups {
    /// The directories beneath `parent` (a path from each hierarchy's root) now.
    pub fn snapshot(parent: &str) -> EngineCgroups {
        let rel = parent.trim_start_matches('/');
        let parents: Vec<(PathBuf, bool)> = cgroup_mount_points()
            .into_iter()
            .map(|m| m.join(rel))
            .map(|d| {
                let existed = d.is_dir();
                (d, existed)
            })
            .collect();
        let before = parents.iter().flat_map(|(d, _)| dirs_beneath(d)).collect();
        EngineCgroups { parents, before }
    }

    /// The directories beneath the parent that were not there before.
    pub fn left(&self) -> Vec<PathBuf> {
        (self.parents.iter())
            .flat_map(|(d, _)| dirs_beneath(d))
            .filter(|d| !self.before.contains(d))
            .collect()
    }

    /// Removes [`Self::left`] (deepest first: no process is left in them
    /// once the engine is stopped) and each parent the engine made, if empty.
    pub fn remove_left(&self) {
        let mut left = self.left();
        left.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        for d in left {
            let _ = std::fs::remove_dir(d);
        }
        for (d, existed) in &self.parents {
            if !existed {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

/// Where each cgroup hierarchy (v1 and v2) is mounted.
fn cgroup_mount_points() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let fstype = right.split(' ').next()?;
            let point = left.split(' ').nth(4)?;
            matches!(fstype, "cgroup" | "cgroup2").then(|| PathBuf::from(point))
        })
        .collect()
}

/// Every directory beneath `dir` (not `dir`), at any depth.
fn dirs_beneath(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(dirs_beneath(&e.path()));
            out.push(e.path());
        }
    }
    out
}

/// Calls `done` every 50 ms until it holds (true) or `limit` has passed
/// (false).
pub fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits up to 60 s for the daemon `name` to answer `up`; its `log` goes
/// into the error.
pub fn wait_until_up(
    name: &str,
    up: impl Fn() -> bool,
    log: impl Fn() -> String,
) -> Result<(), String> {
    match poll_until(Duration::from_secs(60), up) {
        true => Ok(()),
        false => Err(format!("{name} did not come up:\n{}", log())),
    }
}

/// Stops a daemon the test started: SIGTERM, up to 20 s to exit, then
/// SIGKILL; reaped either way.
pub fn stop_daemon(child: &mut std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGTERM);
    if !poll_until(Duration::from_secs(20), || {
        !matches!(child.try_wait(), Ok(None))
    }) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Runs `cmd` with `stdin` written to it and stdout/stderr captured;
/// killed (and the test fails) after 60 s.
pub fn output_with_watchdog(mut cmd: Command, stdin: &[u8]) -> std::process::Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin);
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let watchdog = std::thread::spawn(move || {
        for _ in 0..600 {
            std::thread::sleep(Duration::from_millis(100));
            if nix::sys::signal::kill(pid, None).is_err() {
                return false;
            }
        }
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGKILL);
        true
    });
    let out = child.wait_with_output().expect("engine client output");
    assert!(!watchdog.join().unwrap_or(false), "{what} hung");
    out
}

/// An output's stdout, as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An output's status, stdout and stderr, for assertion messages.
pub fn dump(out: &std::process::Output) -> String {
    format!(
        "{:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
