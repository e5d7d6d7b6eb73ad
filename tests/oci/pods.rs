//! What the containers of one pod share besides the network, through
//! Docker: `--ipc container:A` joins A's sandbox's IPC namespace (SysV
//! shared memory and semaphores made in one are the other's, both ways,
//! and a container of its own sees none of them, as natively under
//! `unshare -i`) and binds A's /dev/shm (POSIX shared memory and named
//! semaphores likewise, as natively with one /dev/shm; `--shm-size`
//! sizes a container's own, as `df` shows under runc); `--pid container:A`
//! puts B in A's sandbox's pid namespace (B's /proc is A's, and B's
//! `kill` ends A's process; docs/oci.md). The
//! probe is `tests/c/pod_probe.c`, linked statically and bound into the
//! busybox containers at /probe. The CRI's pod (`cri/mod.rs`) shares
//! IPC and UTS through the pause container.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::built_once;
use crate::common::engine::{dump, poll_until, stdout};
use crate::common::engine_cli::EngineCli;

/// `tests/c/pod_probe.c` linked statically (it runs in the busybox
/// image); the directory it is in is bound at /probe (`probe_mount`).
pub fn pod_probe() -> PathBuf {
    // A probe built elsewhere: the VM's CRI case (tests/vm/cases.sh) has
    // no compiler, so `scripts/vm check` builds it on the host.
    if let Some(built) = std::env::var_os("SUPERVISOR_POD_PROBE") {
        return PathBuf::from(built);
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/pod_probe.c");
    built_once("pod_probe.static", |out| {
        let mut cc = Command::new("cc");
        cc.args(["-O1", "-Wall", "-static", "-o"])
            .arg(out)
            .arg(&src);
        cc
    })
}

/// The probe's directory as a read-only volume at /probe (`-v`).
pub fn probe_volume() -> String {
    let probe = pod_probe();
    let dir = probe.parent().expect("the probe's directory");
    format!("{}:/probe:ro", dir.display())
}

/// The probe's path in a container.
pub const PROBE: &str = "/probe/pod_probe.static";

/// `pod_probe ipc-make KEY TEXT` then `ipc-read KEY` natively, in an IPC
/// namespace of their own: what a reader of the same namespace prints.
pub fn native_ipc_read(key: &str, text: &str) -> String {
    let probe = pod_probe();
    let p = probe.display();
    let script = format!("{p} ipc-make {key} {text} >/dev/null && {p} ipc-read {key}");
    let out = Command::new("unshare")
        .args(["-i", "sh", "-c", &script])
        .output()
        .expect("unshare -i (util-linux)");
    assert!(out.status.success(), "native: {}", dump(&out));
    stdout(&out)
}

/// What `pod_probe posix-read NAME` prints natively after `posix-make
/// NAME TEXT` in the same /dev/shm (a tmpfs of a mount namespace of
/// their own, so the host's /dev/shm is left alone).
pub fn native_posix_read(name: &str, text: &str) -> String {
    let p = pod_probe();
    let p = p.display();
    let script = format!(
        "mount -t tmpfs tmpfs /dev/shm && {p} posix-make {name} {text} >/dev/null && {p} posix-read {name}"
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .expect("unshare -m (util-linux)");
    assert!(out.status.success(), "native: {}", dump(&out));
    stdout(&out)
}

/// `--ipc container:A` and `--pid container:A` under Docker.
pub fn shared_namespaces(e: &impl EngineCli, image: &str) {
    let volume = probe_volume();
    let make = format!(
        "{PROBE} ipc-make 4242 from-a && {PROBE} posix-make /pod-a from-a && exec sleep 1000"
    );
    e.ok(&e.run_args(&[
        "-d",
        "--name",
        "ipc-a",
        "--ipc",
        "shareable",
        "-v",
        &volume,
        image,
        "sh",
        "-c",
        &make,
    ]));
    let expected = native_ipc_read("4242", "from-a");
    let mut last = String::new();
    let made = poll_until(Duration::from_secs(30), || {
        let out = e.output(&["exec", "ipc-a", PROBE, "ipc-read", "4242"]);
        last = dump(&out);
        stdout(&out) == expected
    });
    assert!(made, "ipc-a's own segment: {last}");
    // B, joining A's IPC namespace, reads what A made...
    let joined = ["--rm", "--ipc", "container:ipc-a", "-v", &volume, image];
    let read = e.run(&[&joined[..], &[PROBE, "ipc-read", "4242"]].concat());
    assert_eq!(stdout(&read), expected, "{}", dump(&read));
    // ...and A what B made.
    let made_by_b = e.run(&[&joined[..], &[PROBE, "ipc-make", "4343", "from-b"]].concat());
    assert!(made_by_b.status.success(), "{}", dump(&made_by_b));
    let read = e.ok(&["exec", "ipc-a", PROBE, "ipc-read", "4343"]);
    assert_eq!(read, native_ipc_read("4343", "from-b"));
    // POSIX shared memory in A's /dev/shm, which B binds, both ways.
    let read = e.run(&[&joined[..], &[PROBE, "posix-read", "/pod-a"]].concat());
    let expected = native_posix_read("/pod-a", "from-a");
    assert_eq!(stdout(&read), expected, "{}", dump(&read));
    let made_by_b = e.run(&[&joined[..], &[PROBE, "posix-make", "/pod-b", "from-b"]].concat());
    assert!(made_by_b.status.success(), "{}", dump(&made_by_b));
    let read = e.ok(&["exec", "ipc-a", PROBE, "posix-read", "/pod-b"]);
    assert_eq!(read, native_posix_read("/pod-b", "from-b"));
    // A container of its own has /dev/shm of its own, of the size asked
    // for (`df` as runc's container, Docker's default runtime, shows it).
    let alone = e.run(&["--rm", "-v", &volume, image, PROBE, "posix-read", "/pod-a"]);
    assert_eq!(alone.status.code(), Some(1), "{}", dump(&alone));
    let none = "no posix /pod-a: No such file or directory\n";
    assert_eq!(stdout(&alone), none, "{}", dump(&alone));
    let df = "df -k /dev/shm | awk 'NR == 2 { print $2 }'";
    let sized = ["--rm", "--shm-size", "24m", image, "sh", "-c", df];
    let under_runc = e.output(&[&["run"][..], &sized[..]].concat());
    assert_eq!(stdout(&under_runc), "24576\n", "{}", dump(&under_runc));
    let sized = e.run(&sized);
    assert_eq!(stdout(&sized), stdout(&under_runc), "{}", dump(&sized));
    // A container of its own has an IPC namespace of its own: none there.
    let alone = e.run(&["--rm", "-v", &volume, image, PROBE, "ipc-read", "4242"]);
    assert_eq!(alone.status.code(), Some(1), "{}", dump(&alone));
    assert!(
        stdout(&alone).starts_with("no ipc 4242"),
        "{}",
        dump(&alone)
    );
    // --pid container:ipc-a names A's anchor, whose sandbox's pid
    // namespace B is born in: B's /proc is A's (pid 1 is A's init, A's
    // sleeper has the pid A's own `pidof` gives), and B's kill ends A's
    // sleeper, A's main process, so A stops.
    let script = "cat /proc/1/comm; pidof sleep";
    let in_a = e.ok(&["exec", "ipc-a", "sh", "-c", script]);
    let joined_pid = ["--rm", "--pid", "container:ipc-a", image, "sh", "-c"];
    let seen = e.run(&[&joined_pid[..], &[script]].concat());
    assert_eq!(stdout(&seen), in_a, "{}", dump(&seen));
    let kill = e.run(&[&joined_pid[..], &["kill $(pidof sleep) && echo killed"]].concat());
    assert_eq!(stdout(&kill), "killed\n", "{}", dump(&kill));
    let stopped = poll_until(Duration::from_secs(30), || {
        let state = e.output(&["inspect", "-f", "{{.State.Running}}", "ipc-a"]);
        stdout(&state) == "false\n"
    });
    assert!(stopped, "ipc-a still runs after its sleeper was killed");
    e.ok(&["rm", "-f", "ipc-a"]);
}
