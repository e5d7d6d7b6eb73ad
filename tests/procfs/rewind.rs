//! Readers that keep a /proc file open and rewind it (`lseek(fd, 0,
//! SEEK_SET)`, as procps's `vmstat 1` and `top -d` do, and Python's
//! `f.seek(0)`) see fresh figures in the sandbox, as natively; every other
//! seek, and rewinds of other files, behave as natively (same results,
//! errors, descriptor flags). Each program runs natively and supervised
//! (also as the unprivileged user `tester`); the figures differ, the
//! properties must match.

use crate::common;
use common::pool::Pool;
use common::*;

const PY: &str = "/usr/bin/python3";

/// Rewinds a plain file first (before the sandbox has served any file,
/// when a rewind is not looked at), then reads /proc/stat and
/// /proc/uptime, lets a child burn a second of CPU time, rewinds both and
/// reads again.
const REWIND_READER: &str = r#"
import os, subprocess, sys
with open("/etc/hostname") as plain:
    text = plain.read()
    plain.seek(0)
    assert plain.read() == text
def busy(text):
    f = [int(x) for x in text.splitlines()[0].split()[1:]]
    return sum(f) - f[3] - f[4]
stat = open("/proc/stat")
up = open("/proc/uptime")
fd = stat.fileno()
first = busy(stat.read())
up0 = float(up.read().split()[0])
burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"
subprocess.run([sys.executable, "-c", burn], check=True)
stat.seek(0)
second = busy(stat.read())
up.seek(0)
up1 = float(up.read().split()[0])
print("cpu time grew" if second - first >= 50 else f"cpu time stuck: {first} then {second}")
print("uptime grew" if up1 >= up0 + 1.0 else f"uptime stuck: {up0} then {up1}")
print("same fd" if stat.fileno() == fd else "fd changed")
print("cloexec kept" if not os.get_inheritable(fd) else "cloexec lost")
"#;

#[test]
fn a_rewinding_reader_sees_the_cpu_time_grow() {
    let run = Run::new(&[PY, "-c", REWIND_READER]);
    let native = run.native().ok("native");
    let out = run.supervised().ok("supervised");
    let want = "cpu time grew\nuptime grew\nsame fd\ncloexec kept\n";
    assert_eq!(native.stdout, want, "natively: {}", native.dump());
    assert_eq!(out.stdout, want, "supervised: {}", out.dump());
}

#[test]
fn a_rewinding_reader_sees_the_cpu_time_grow_as_tester() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let run = Run::new(&[PY, "-c", REWIND_READER]).user(uid, gid).bin(bin);
    let out = run.supervised().ok("supervised as tester");
    let want = "cpu time grew\nuptime grew\nsame fd\ncloexec kept\n";
    assert_eq!(out.stdout, want, "as tester: {}", out.dump());
}

/// Seeks of every kind on a served file, a plain file, a pipe and a bad
/// descriptor; the descriptor flags a rewind must keep.
const SEEKS: &str = r#"
import errno, os, tempfile
out = []
r, w = os.pipe()
for name, fd in [("pipe", r), ("bad fd", 999)]:
    try:
        out.append(f"{name} {os.lseek(fd, 0, os.SEEK_SET)}")
    except OSError as e:
        out.append(f"{name} {errno.errorcode[e.errno]}")
tmp, path = tempfile.mkstemp()
os.write(tmp, b"hello")
os.close(tmp)
fd = os.open(path, os.O_RDONLY)
os.read(fd, 2)
out.append(f"file rewind {os.lseek(fd, 0, os.SEEK_SET)} {os.read(fd, 5)!r}")
os.unlink(path)
s = os.open("/proc/stat", os.O_RDONLY | os.O_NONBLOCK)
os.set_inheritable(s, True)
out.append(f"stat read {os.read(s, 4)!r}")
out.append(f"stat seek {os.lseek(s, 2, os.SEEK_SET)} {os.read(s, 2)!r}")
out.append(f"stat cur {os.lseek(s, 0, os.SEEK_CUR)}")
out.append(f"stat rewind {os.lseek(s, 0, os.SEEK_SET)} {os.read(s, 4)!r}")
out.append(f"stat rewind cur {os.lseek(s, 0, os.SEEK_CUR)}")
out.append(f"nonblocking {not os.get_blocking(s)} inheritable {os.get_inheritable(s)}")
d = os.dup(s)
out.append(f"dup rewind {os.lseek(d, 0, os.SEEK_SET)} {os.read(d, 3)!r}")
m = open("/proc/meminfo")
out.append(f"meminfo {m.readline().split(':')[0]}")
m.seek(0)
out.append(f"meminfo again {m.readline().split(':')[0]}")
print("\n".join(out))
"#;

#[test]
fn seeks_behave_as_natively() {
    let run = Run::new(&[PY, "-c", SEEKS]);
    let native = run.native().ok("native");
    let out = run.supervised().ok("supervised");
    assert!(
        native.stdout.contains("stat rewind 0 b'cpu ") && native.stdout.contains("pipe ESPIPE"),
        "{}",
        native.dump()
    );
    assert_eq!(out.stdout, native.stdout, "supervised: {}", out.dump());
    let limited = run.clone().sup(&["--memory", "256m", "--cpus", "1"]);
    let out = limited.supervised().ok("supervised under limits");
    assert_eq!(out.stdout, native.stdout, "under limits: {}", out.dump());
}

/// A rewind of /proc/stat renders a fresh text for that open file
/// description, as procfs does: a `dup` of it and a forked child's copy
/// share the text and the offset. The child rewinds through its copy and
/// reads the first word (the parent's offset moves with it) while it lives
/// (so `processes`, the forks, or the highest pid, has grown); the parent
/// reads on through its `dup`, then rewinds through the `dup` and reads
/// through the first descriptor.
const SHARED_REWIND: &str = r#"
import os
def procs(text):
    return int(next(l for l in text.splitlines() if l.startswith("processes ")).split()[1])
def read_all(fd):
    parts = []
    while True:
        part = os.read(fd, 65536)
        if not part:
            return b"".join(parts).decode()
        parts.append(part)
fd = os.open("/proc/stat", os.O_RDONLY)
first = read_all(fd)
dup = os.dup(fd)
print("dup at the end" if os.lseek(dup, 0, os.SEEK_CUR) == len(first) else "dup elsewhere")
pid = os.fork()
if pid == 0:
    os.lseek(fd, 0, os.SEEK_SET)
    os._exit(0 if os.read(fd, 4) == b"cpu " else 1)
print("child read", os.waitpid(pid, 0)[1])
print("offset after the child's read", os.lseek(dup, 0, os.SEEK_CUR))
second = "cpu " + read_all(dup)
print("fresh" if procs(second) > procs(first) else f"stale: {procs(first)} {procs(second)}")
print("rewound through the dup", os.lseek(dup, 0, os.SEEK_SET), os.lseek(fd, 0, os.SEEK_CUR))
third = read_all(fd)
print("whole" if third.startswith("cpu ") and "\nbtime " in third else f"part: {third[:20]!r}")
"#;

#[test]
fn a_rewind_is_shared_by_dups_and_forked_copies() {
    let run = Run::new(&[PY, "-c", SHARED_REWIND]);
    let native = run.native().ok("native");
    let want = "dup at the end\nchild read 0\noffset after the child's read 4\nfresh\n\
                rewound through the dup 0 0\nwhole\n";
    assert_eq!(native.stdout, want, "natively: {}", native.dump());
    // As root, the supervisor's id is not the guest's: the memfd is
    // rewritten in place. Unprivileged, a rewind swaps it (docs/procfs.md).
    if is_root() {
        let out = run.supervised().ok("supervised");
        assert_eq!(out.stdout, want, "supervised: {}", out.dump());
        let limited = run.clone().sup(&["--cpus", "1"]);
        let out = limited.supervised().ok("supervised under --cpus");
        assert_eq!(out.stdout, want, "under --cpus: {}", out.dump());
    }
}

/// A process's `status` and `/proc/uptime` kept open and rewound through
/// a `dup`: the rewind is the open file description's, as on procfs, so
/// the first descriptor is back at 0 too and reads the fresh text (a
/// thread more; a later uptime). A sandbox set up ahead (a pool's) serves
/// them rewritten in place (`procfs/src/in_place.rs`); a swap would leave
/// the first descriptor at its end, reading nothing.
const SHARED_PROCESS_REWIND: &str = r#"
import os, threading, time
def read_all(fd):
    parts = []
    while True:
        part = os.read(fd, 65536)
        if not part:
            return b"".join(parts).decode()
        parts.append(part)
def field(text, key):
    lines = [l for l in text.splitlines() if l.startswith(key + ":")]
    return int(lines[0].split()[1]) if lines else None
fd = os.open("/proc/self/status", os.O_RDONLY)
first = read_all(fd)
dup = os.dup(fd)
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
print("rewound through the dup", os.lseek(dup, 0, os.SEEK_SET), os.lseek(fd, 0, os.SEEK_CUR))
second = read_all(fd)
ev.set()
th.join()
t0, t1 = field(first, "Threads"), field(second, "Threads")
print("fresh" if t0 is not None and t1 == t0 + 1 else f"stale: {t0} then {t1}")
print("uid", second.split("Uid:")[1].split()[0] if "Uid:" in second else "-")
up = os.open("/proc/uptime", os.O_RDONLY)
a = read_all(up)
dup = os.dup(up)
time.sleep(0.05)
print("uptime rewound", os.lseek(dup, 0, os.SEEK_SET), os.lseek(up, 0, os.SEEK_CUR))
b = read_all(up)
print("uptime fresh" if b and float(b.split()[0]) > float(a.split()[0]) else f"uptime stale: {a!r} {b!r}")
"#;

#[test]
fn a_pooled_status_and_uptime_rewind_is_shared_by_dups() {
    if !is_root() {
        skip!("the memfds are rewritten in place for a root supervisor only");
    }
    let run = Run::new(&[PY, "-c", SHARED_PROCESS_REWIND]);
    let native = run.native().ok("native");
    let want = "rewound through the dup 0 0\nfresh\nuid 0\nuptime rewound 0 0\nuptime fresh\n";
    assert_eq!(native.stdout, want, "natively: {}", native.dump());
    let pool = Pool::start(&[]);
    for round in 0..2 {
        let out = run.clone().sup(&pool.flag()).supervised().ok("pooled");
        assert_eq!(out.stdout, want, "pooled, round {round}: {}", out.dump());
    }
}

/// What a guest root tries on the `/proc/stat` a rewind rewrites in place
/// (its memfd the supervisor's, unmapped in the guest): it cannot make it
/// writable, open it for writing, cut it or write it.
const UNWRITABLE: &str = r#"
import os, sys
fd = os.open(sys.argv[1] if len(sys.argv) > 1 else "/proc/stat", os.O_RDONLY)
tries = [
    ("fchmod", lambda: os.fchmod(fd, 0o666)),
    ("open rw", lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDWR)),
    ("open wo", lambda: os.open(f"/proc/self/fd/{fd}", os.O_WRONLY)),
    ("truncate", lambda: os.truncate(f"/proc/self/fd/{fd}", 0)),
    ("write", lambda: os.write(fd, b"x")),
]
for what, act in tries:
    try:
        act()
        print(what, "done")
    except OSError as e:
        print(what, e.strerror)
os.lseek(fd, 0, os.SEEK_SET)
print(os.read(fd, 4))
"#;

#[test]
fn a_guest_root_cannot_write_the_stat_a_rewind_rewrites() {
    if !is_root() {
        skip!("the memfd is rewritten in place for a root supervisor only");
    }
    let out = Run::new(&[PY, "-c", UNWRITABLE])
        .supervised()
        .ok("supervised");
    let want = "fchmod Operation not permitted\nopen rw Permission denied\n\
                open wo Permission denied\ntruncate Permission denied\n\
                write Bad file descriptor\nb'cpu '\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
}

/// The same through a pool, whose sandboxes serve `status` and
/// `/proc/uptime` in place too (from memfds made at their set-up).
#[test]
fn a_guest_root_cannot_write_a_pooled_status_or_uptime() {
    if !is_root() {
        skip!("the memfds are served in place for a root supervisor only");
    }
    let pool = Pool::start(&[]);
    let tries = "fchmod Operation not permitted\nopen rw Permission denied\n\
                 open wo Permission denied\ntruncate Permission denied\n\
                 write Bad file descriptor\n";
    for (file, start) in [
        ("/proc/self/status", "b'Name'"),
        ("/proc/uptime", "b'"),
        ("/proc/stat", "b'cpu '"),
    ] {
        let out = Run::new(&[PY, "-c", UNWRITABLE, file])
            .sup(&pool.flag())
            .supervised()
            .ok(file);
        assert!(
            out.stdout
                .strip_prefix(tries)
                .is_some_and(|read| read.starts_with(start)),
            "{file}: {}",
            out.dump()
        );
    }
}

/// Under `--memory`, a rewound /proc/meminfo shows the guest's own
/// allocation (the sandbox's usage, not the host's).
const MEMINFO: &str = r#"
def free(f):
    f.seek(0)
    return int(next(l for l in f if l.startswith("MemFree:")).split()[1])
f = open("/proc/meminfo")
before = free(f)
hog = bytearray(96 << 20)
for i in range(0, len(hog), 4096):
    hog[i] = 1
after = free(f)
print("free fell" if before - after >= 64 << 10 else f"free stuck: {before} then {after} kB")
"#;

#[test]
fn a_rewound_meminfo_shows_the_guests_allocation() {
    let out = Run::new(&[PY, "-c", MEMINFO])
        .sup(&["--memory", "512m"])
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, "free fell\n", "{}", out.dump());
}

/// A busy loop in the background, then vmstat and top, which keep
/// /proc/stat open and rewind it between samples.
const TOOLS: &str = r#"
/usr/bin/python3 -c 'while True: pass' &
busy=$!
echo "BUSY $busy"
vmstat 1 3
top -b -d 0.5 -n 3 -p "$busy"
kill "$busy"
"#;

/// The `us + sy` of each vmstat sample after the first (which averages
/// since boot), and whether every sample's cpu columns add up to 100.
fn vmstat_busy(out: &str) -> (Vec<u32>, bool) {
    let mut lines = out.lines().skip_while(|l| !l.contains(" us "));
    let Some(header) = lines.next() else {
        return (Vec::new(), false);
    };
    let cols: Vec<&str> = header.split_whitespace().collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(us), Some(sy), Some(id)) = (at("us"), at("sy"), at("id")) else {
        return (Vec::new(), false);
    };
    let rows: Vec<Vec<u32>> = lines
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .collect();
    let adds_up = rows.len() == 3
        && rows.iter().all(|r| {
            let cpu: u32 = r.iter().skip(us).sum();
            (97..=103).contains(&cpu) && r.get(id).is_some()
        });
    let busy = rows
        .iter()
        .skip(1)
        .map(|r| r.get(us).copied().unwrap_or(0) + r.get(sy).copied().unwrap_or(0))
        .collect();
    (busy, adds_up)
}

/// From top's frames after the first: the `us + ni + sy` of the `%Cpu(s)`
/// line (a busy loop started under `nice` counts as `ni`), and the busy
/// process's %CPU.
fn top_busy(out: &str, pid: &str) -> Vec<(f64, f64)> {
    let frames: Vec<&str> = out.split("top - ").skip(1).collect();
    frames
        .iter()
        .skip(1)
        .map(|frame| {
            let summary = frame
                .lines()
                .find_map(|l| l.strip_prefix("%Cpu(s):"))
                .unwrap_or("");
            let field = |name: &str| -> f64 {
                summary
                    .split(',')
                    .find_map(|p| p.trim().strip_suffix(name))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0.0)
            };
            let own = frame
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.first() == Some(&pid))
                .and_then(|w| w.get(8)?.parse().ok())
                .unwrap_or(0.0);
            (field(" us") + field(" ni") + field(" sy"), own)
        })
        .collect()
}

/// The least share (percent) a busy loop shows: on a machine shared with
/// other builds it may get a quarter of one of two CPUs, an eighth of the
/// total; a rewound /proc/stat that never changed would show 0.
const BUSY: u32 = 3;

fn check_tools(out: &Out, who: &str) {
    let pid = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("BUSY "))
        .unwrap_or("?");
    let (vm, adds_up) = vmstat_busy(&out.stdout);
    assert!(adds_up, "{who}: vmstat's cpu columns: {}", out.dump());
    assert!(
        vm.len() == 2 && vm.iter().all(|b| *b >= BUSY),
        "{who}: vmstat does not see the busy loop ({vm:?}): {}",
        out.dump()
    );
    let top = top_busy(&out.stdout, pid);
    assert!(
        top.len() == 2
            && top
                .iter()
                .all(|(all, own)| *all >= f64::from(BUSY) && *own >= f64::from(BUSY)),
        "{who}: top does not see the busy loop ({top:?}): {}",
        out.dump()
    );
}

#[test]
fn vmstat_and_top_see_a_busy_guest() {
    if !have("vmstat") || !have("top") {
        skip!("procps's vmstat or top not installed");
    }
    let run = Run::sh(TOOLS, &[]);
    check_tools(&run.native().ok("native"), "native");
    check_tools(&run.supervised().ok("supervised"), "supervised");
}

/// Rewound per-process files a sandbox serves (`status` under `--cpus`,
/// `mountinfo`, `autogroup`) re-read fresh, as the kernel's: a thread
/// started between two reads shows in `Threads:`, a memory allocation in
/// `VmRSS:`; a rewound `mountinfo` reads the same rewritten text (not the
/// host's) and `autogroup` the same number; the rewound descriptor keeps
/// its number. The output must be the native one.
const PER_PROCESS: &str = r#"
import os, threading
f = open("/proc/self/status")
fd = f.fileno()
def field(k):
    f.seek(0)
    return int(next(l for l in f if l.startswith(k + ":")).split()[1])
t0, rss0 = field("Threads"), field("VmRSS")
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
hog = bytearray(64 << 20)
for i in range(0, len(hog), 4096):
    hog[i] = 1
t1, rss1 = field("Threads"), field("VmRSS")
ev.set()
th.join()
print("threads grew" if t1 == t0 + 1 else f"threads stuck: {t0} then {t1}")
print("rss grew" if rss1 >= rss0 + (32 << 10) else f"rss stuck: {rss0} then {rss1} kB")
print("same fd" if f.fileno() == fd and os.fstat(fd).st_size >= 0 else "fd changed")
m = open("/proc/self/mountinfo")
first = m.read()
m.seek(0)
print("mountinfo same" if m.read() == first else "mountinfo changed")
a = open("/proc/self/autogroup")
first = a.read()
a.seek(0)
print("autogroup same" if a.read() == first else "autogroup changed")
"#;

const PER_PROCESS_WANT: &str = "threads grew\nrss grew\nsame fd\nmountinfo same\nautogroup same\n";

#[test]
fn rewound_per_process_files_read_fresh() {
    let run = Run::new(&[PY, "-c", PER_PROCESS]);
    let native = run.native().ok("native");
    assert_eq!(
        native.stdout,
        PER_PROCESS_WANT,
        "natively: {}",
        native.dump()
    );
    for sup in [&["--cpus", "1"][..], &[]] {
        let out = run.clone().sup(sup).supervised().ok("supervised");
        assert_eq!(
            out.stdout,
            PER_PROCESS_WANT,
            "supervised {sup:?}: {}",
            out.dump()
        );
    }
}

#[test]
fn rewound_per_process_files_read_fresh_as_tester() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let run = Run::new(&[PY, "-c", PER_PROCESS])
        .sup(&["--cpus", "1"])
        .user(uid, gid)
        .bin(bin);
    let out = run.supervised().ok("supervised as tester");
    assert_eq!(out.stdout, PER_PROCESS_WANT, "as tester: {}", out.dump());
}
