//! Under `--memory`, `free` and /proc/meminfo tell the sandbox's own
//! memory (its cgroup's `memory.stat`): a program's anonymous memory is
//! `used`, a tmpfs file is `shared` and `buff/cache` (and `used`: without
//! swap it cannot be reclaimed, so it is not `available`, as on the
//! host), and free's columns add up: used + free + buff/cache is total
//! plus shared. The host's figures (its cache, its Shmem) show nowhere.

use crate::common;
use common::*;

/// Allocates and touches N bytes of anonymous memory and writes N bytes
/// to a tmpfs file, reading `free -b` before and after; prints `ok` for
/// each relation that holds, else what it saw.
const ALLOCATE: &str = r#"
import subprocess
N = 64 << 20
def free():
    out = subprocess.run(["free", "-b"], capture_output=True, text=True).stdout
    row = next(l for l in out.splitlines() if l.startswith("Mem:")).split()[1:]
    return dict(zip(["total", "used", "free", "shared", "cache", "available"], map(int, row)))
def check(name, holds, seen):
    print(f"ok {name}" if holds else f"FAIL {name}: {seen}")
before = free()
hog = bytearray(N)
for i in range(0, N, 4096):
    hog[i] = 1
with open("/dev/shm/file", "wb") as f:
    for _ in range(N >> 20):
        f.write(b"y" * (1 << 20))
after = free()
for name, m in (("before", before), ("after", after)):
    check(f"{name} adds up", m["used"] + m["free"] + m["cache"] == m["total"] + m["shared"], m)
    check(f"{name} within the limit", max(m.values()) == m["total"], m)
rise = {k: after[k] - before[k] for k in after}
check("anon and file are used", rise["used"] >= 2 * N - (4 << 20), rise)
check("the file is shared", rise["shared"] >= N and after["shared"] <= after["cache"], rise)
check("the file is cache, the anon is not", N <= rise["cache"] < 2 * N, rise)
kb = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/meminfo") if l.endswith(" kB\n")}
check("Shmem is shared", kb["Shmem"] * 1024 == after["shared"], kb)
check("anon is AnonPages", kb["AnonPages"] << 10 >= N, kb)
check("no line above MemTotal",
      all(v <= kb["MemTotal"] for k, v in kb.items() if not k.startswith("Vmalloc")), kb)
"#;

#[test]
fn free_tells_the_sandbox_s_anon_and_tmpfs_memory() {
    let out = Run::new(&["/usr/bin/python3", "-c", ALLOCATE])
        .sup(&["--memory", "512m"])
        .supervised()
        .ok("allocate under --memory");
    let want = [
        "ok before adds up",
        "ok before within the limit",
        "ok after adds up",
        "ok after within the limit",
        "ok anon and file are used",
        "ok the file is shared",
        "ok the file is cache, the anon is not",
        "ok Shmem is shared",
        "ok anon is AnonPages",
        "ok no line above MemTotal",
    ];
    assert_eq!(
        out.stdout,
        want.map(|l| format!("{l}\n")).concat(),
        "{}",
        out.dump()
    );
}
