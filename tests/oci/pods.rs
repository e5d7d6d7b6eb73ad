//! What the containers of one pod share besides the network, through
//! Docker: `--ipc container:A` joins A's sandbox's IPC namespace (SysV
//! shared memory and semaphores made in one are the other's, both ways,
//! and a container of its own sees none of them, as natively under
//! `unshare -i`); `--pid container:A` keeps the sandbox's own pid
//! namespace (the path names A's anchor's, the host's: docs/oci.md). The
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

/// `--ipc container:A` and `--pid container:A` under Docker.
pub fn shared_namespaces(e: &impl EngineCli, image: &str) {
    let volume = probe_volume();
    let make = format!("{PROBE} ipc-make 4242 from-a && exec sleep 1000");
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
    // A container of its own has an IPC namespace of its own: none there.
    let alone = e.run(&["--rm", "-v", &volume, image, PROBE, "ipc-read", "4242"]);
    assert_eq!(alone.status.code(), Some(1), "{}", dump(&alone));
    assert!(
        stdout(&alone).starts_with("no ipc 4242"),
        "{}",
        dump(&alone)
    );
    // --pid container:ipc-a names the anchor's pid namespace, the host's:
    // the sandbox keeps its own, whose pid 1 is its init, and shows no
    // host process and none of A's: what a container of its own shows
    // (pid 1's name, and as many processes).
    // (The shell counts by its own glob: a pipeline's second process may
    // or may not have started when the first lists /proc.)
    let script = "cat /proc/1/comm; set -- /proc/[0-9]*; echo $#";
    let pid = e.run(&[
        "--rm",
        "--pid",
        "container:ipc-a",
        image,
        "sh",
        "-c",
        script,
    ]);
    let own = e.run(&["--rm", image, "sh", "-c", script]);
    assert!(own.status.success(), "{}", dump(&own));
    assert_eq!(stdout(&pid), stdout(&own), "{}", dump(&pid));
    e.ok(&["rm", "-f", "ipc-a"]);
}
