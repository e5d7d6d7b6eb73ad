//! What the guest sees of its limits: under `--memory` and `--cpus`, free, /proc/meminfo, nproc, os.cpu_count(),
//! sched_getaffinity, /proc/cpuinfo and /sys/devices/system/cpu show the
//! limits, however the guest spells the path to the /proc files; with no
//! limits the same tools answer as natively; and sched_getaffinity's errors
//! are the kernel's either way.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
/// 512 MiB: a whole number of kB, so `free -b` shows it exactly.
const LIMIT: &str = "512m";
const LIMIT_BYTES: u64 = 512 << 20;
const MEMTOTAL: &str = "MemTotal:         524288 kB";

fn limited(script: &str, cpus: &str) -> Out {
    Run::sh(script, &[])
        .sup(&["--memory", LIMIT, "--cpus", cpus])
        .supervised()
}

fn host_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn tools_see_the_limits() {
    let script = "free -b | awk '/^Mem:/ {print $2}'; grep MemTotal /proc/meminfo; \
                  grep -E '^Swap(Total|Free):' /proc/meminfo | awk '{print $2}' | tr '\\n' ' '; echo; \
                  nproc; grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online; \
                  getconf _NPROCESSORS_ONLN; getconf _NPROCESSORS_CONF; \
                  /usr/bin/python3 -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'";
    let out = limited(script, "1").ok("limited tools");
    let want = format!("{LIMIT_BYTES}\n{MEMTOTAL}\n0 0 \n1\n1\n0\n1\n1\n1 1\n");
    assert_eq!(out.stdout, want, "{}", out.dump());
}

#[test]
fn two_cpus_when_the_host_has_them() {
    if host_cpus() < 2 {
        skip!("one CPU on this host");
    }
    let script = "nproc; grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online; \
                  ls -d /sys/devices/system/cpu/cpu* | wc -l; \
                  grep ^processor /proc/cpuinfo | tr -d '\\t' | tr '\\n' ' '";
    let out = limited(script, "2").ok("two cpus");
    assert_eq!(
        out.stdout,
        "2\n2\n0-1\n2\nprocessor: 0 processor: 1 ",
        "{}",
        out.dump()
    );
}

#[test]
fn more_cpus_than_the_host_is_the_host() {
    let script = "nproc; cat /sys/devices/system/cpu/online";
    let out = limited(script, "4096").ok("many cpus");
    let native = Run::sh(script, &[]).native().ok("native");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// Every spelling of /proc/meminfo and /proc/cpuinfo the guest might try.
const DODGES: &str = r#"
import os
def first(f):
    with f: return f.readline().rstrip("\n")
print(first(open("/proc/meminfo")))
print(first(open("/proc/./meminfo")))
print(first(open("/proc/1/../meminfo")))
print(first(open("/proc/self/../meminfo")))
print(first(open("//proc//meminfo")))
os.symlink("/proc/meminfo", "/tmp/m")
print(first(open("/tmp/m")))
os.symlink("/proc", "/tmp/p")
print(first(open("/tmp/p/meminfo")))
d = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
print(first(os.fdopen(os.open("meminfo", os.O_RDONLY, dir_fd=d))))
print(first(os.fdopen(os.open("../proc/meminfo", os.O_RDONLY, dir_fd=d))))
os.chdir("/proc")
print(first(open("meminfo")))
p = os.open("/proc/meminfo", os.O_PATH)
print(first(open(f"/proc/self/fd/{p}")))
print(first(open(f"/dev/fd/{p}")))
n = sum(l.startswith("processor") for l in open("/proc/./cpuinfo"))
m = sum(l.startswith("processor") for l in open(os.open("cpuinfo", os.O_RDONLY, dir_fd=d)))
print(n, m)
f = os.open("/proc/meminfo", os.O_RDONLY)
try:
    os.write(f, b"x")
    print("written")
except OSError as e:
    print("write", e.errno)
"#;

#[test]
fn no_path_dodges_the_synthetic_files() {
    let out = Run::new(&[PY, "-c", DODGES])
        .sup(&["--memory", LIMIT, "--cpus", "1"])
        .supervised()
        .ok("dodges");
    let mut want = format!("{MEMTOTAL}\n").repeat(12);
    want.push_str(&format!("1 1\nwrite {}\n", libc::EBADF));
    assert_eq!(out.stdout, want, "{}", out.dump());
}

#[test]
fn without_limits_the_guest_sees_the_host() {
    let script = "nproc; grep MemTotal /proc/meminfo; grep -c ^processor /proc/cpuinfo; \
                  getconf _NPROCESSORS_ONLN; getconf _NPROCESSORS_CONF; \
                  cat /sys/devices/system/cpu/online /sys/devices/system/cpu/possible \
                  /sys/devices/system/cpu/present; \
                  /usr/bin/python3 -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'";
    let native = Run::sh(script, &[]).native().ok("native");
    let out = Run::sh(script, &[]).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// sched_getaffinity through syscall(2): for each pid that names the
/// caller (0, its pid, its tid; from the main thread and another one),
/// each length and each pointer, the return value or errno, and how many
/// CPUs the mask holds.
const AFFINITY: &str = r#"
import ctypes, errno, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_sched_getaffinity = 204
buf = ctypes.create_string_buffer(16384)
def call(pid, n, ptr):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(SYS_sched_getaffinity), ctypes.c_long(pid),
                     ctypes.c_long(n), ctypes.c_void_p(ptr))
    if r < 0:
        return errno.errorcode[ctypes.get_errno()]
    return f"{r} bytes, {sum(bin(b).count('1') for b in buf.raw[:r])} cpus"
def run(where):
    for name, pid in (("0", 0), ("pid", os.getpid()), ("tid", threading.get_native_id())):
        for n in (0, 4, 7, 8, 12, 16, 128, 1024, 8192, 16384, 1 << 29, (1 << 29) + 8):
            for pname, ptr in (("buf", ctypes.addressof(buf)), ("bad", 1), ("null", 0)):
                print(where, name, n, pname, call(pid, n, ptr))
run("main")
t = threading.Thread(target=run, args=("thread",))
t.start(); t.join()
"#;

#[test]
fn sched_getaffinity_errors_are_the_kernels() {
    let run = Run::new(&[PY, "-c", AFFINITY]);
    let native = run.native().ok("native");
    let t = Tree::new();
    let report = t.path().join("report.json");
    let out = run
        .clone()
        .sup(&["--report".as_ref(), report.as_os_str()])
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    let serviced = &read_report(&report)["syscalls"]["serviced"]["sched_getaffinity"];
    assert!(serviced.as_u64() > Some(0), "not serviced: {serviced}");
    assert!(native.stdout.contains("main 0 0 buf EINVAL"));
    assert!(native.stdout.contains("main 0 7 buf EINVAL"));
    assert!(native.stdout.contains("main 0 128 bad EFAULT"));

    // Under a cpu limit: the same lengths and errors, one CPU.
    let out = run.clone().sup(&["--cpus", "1"]).supervised().ok("one cpu");
    let one = as_one_cpu(&native.stdout);
    assert_eq!(out.stdout, one, "{}", out.dump());
}

/// sched_getaffinity of other tasks: a child process, a thread of it,
/// the parent, and a pid that names nobody (ESRCH), each as CPUs counted,
/// with a too-short length (EINVAL before ESRCH, as the kernel checks).
const OTHERS: &str = r#"
import ctypes, errno, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(pid, n):
    buf = ctypes.create_string_buffer(1024)
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(204), ctypes.c_long(pid), ctypes.c_long(n), buf)
    if r < 0:
        return errno.errorcode[ctypes.get_errno()]
    return f"{r} bytes, {sum(bin(b).count('1') for b in buf.raw[:r])} cpus"
child = subprocess.Popen(["/usr/bin/python3", "-c",
    "import threading, time, sys; t = threading.Thread(target=time.sleep, args=(30,), daemon=True); t.start(); print(t.native_id, flush=True); sys.stdin.read()"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
thread = int(child.stdout.readline())
for name, pid in (("child", child.pid), ("thread", thread), ("parent", os.getppid()), ("nobody", 4194303)):
    print(name, call(pid, 1024), call(pid, 0))
child.stdin.close(); child.wait()
"#;

#[test]
fn sched_getaffinity_of_other_tasks_tells_the_limit() {
    let run = Run::new(&[PY, "-c", OTHERS]);
    let native = run.native().ok("native");
    let out = run.clone().supervised().ok("no limit");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    assert!(
        native.stdout.contains("nobody ESRCH EINVAL"),
        "{}",
        native.stdout
    );
    let out = run.sup(&["--cpus", "1"]).supervised().ok("one cpu");
    let one = as_one_cpu(&native.stdout);
    assert_eq!(out.stdout, one, "{}", out.dump());
}

/// A native affinity transcript as it reads under `--cpus 1`: every mask
/// of the host's CPUs one CPU.
fn as_one_cpu(native: &str) -> String {
    let cpus = format!(" bytes, {} cpus", host_cpus());
    native.replace(&cpus, " bytes, 1 cpus")
}

const SYSINFO: &str = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
print(0 < os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
print(libc.sysinfo(None), ctypes.get_errno())
"#;

/// sysinfo(2) (glibc's _SC_PHYS_PAGES) tells the memory limit; without
/// one, the kernel's answer; a bad pointer is EFAULT either way.
#[test]
fn sysinfo_tells_the_memory_limit() {
    let run = Run::new(&[PY, "-c", SYSINFO]);
    let native = run.native().ok("native sysinfo");
    let unlimited = run.clone().supervised().ok("sysinfo without a limit");
    assert_eq!(unlimited.stdout, native.stdout);
    let out = run.sup(&["--memory", LIMIT]).supervised().ok("sysinfo");
    let want = format!("{LIMIT_BYTES}\nTrue\n-1 {}\n", libc::EFAULT);
    assert_eq!(out.stdout, want, "{}", out.dump());
}

/// sysinfo(2)'s `procs`: three threads, a child and init beside the
/// guest's main thread: six tasks, as many as the guest's own /proc
/// lists (natively the host's count, so no native run to compare).
const PROCS: &str = r#"
import ctypes, glob, subprocess, threading
class Sysinfo(ctypes.Structure):
    _fields_ = [("uptime", ctypes.c_long), ("loads", ctypes.c_ulong * 3),
                ("ram", ctypes.c_ulong * 6), ("procs", ctypes.c_ushort),
                ("pad", ctypes.c_ushort), ("high", ctypes.c_ulong * 2),
                ("mem_unit", ctypes.c_uint), ("tail", ctypes.c_char * 8)]
libc = ctypes.CDLL(None, use_errno=True)
done = threading.Event()
threads = [threading.Thread(target=done.wait) for _ in range(3)]
for t in threads:
    t.start()
child = subprocess.Popen(["/bin/sleep", "60"])
info = Sysinfo()
rc = libc.sysinfo(ctypes.byref(info))
print(rc, info.procs, len(glob.glob("/proc/[0-9]*/task/[0-9]*")))
child.kill()
child.wait()
done.set()
"#;

#[test]
fn sysinfo_counts_the_sandbox_s_tasks() {
    let out = Run::new(&[PY, "-c", PROCS])
        .supervised()
        .ok("sysinfo procs");
    assert_eq!(out.stdout, "0 6 6\n", "{}", out.dump());
}

/// sysinfo(2)'s shared RAM under `--memory` is the sandbox's own tmpfs
/// memory (its cgroup's `shmem`, as its /proc/meminfo's Shmem), and its
/// buffer RAM 0 (as Buffers), not the host's figures.
const SHARED: &str = r#"
import ctypes
class Info(ctypes.Structure):
    _fields_ = [("uptime", ctypes.c_long), ("loads", ctypes.c_ulong * 3),
                ("totalram", ctypes.c_ulong), ("freeram", ctypes.c_ulong),
                ("sharedram", ctypes.c_ulong), ("bufferram", ctypes.c_ulong),
                ("pad", ctypes.c_char * 64)]
libc = ctypes.CDLL(None, use_errno=True)
def info():
    i = Info()
    assert libc.sysinfo(ctypes.byref(i)) == 0, ctypes.get_errno()
    return i
def shmem():
    for l in open("/proc/meminfo"):
        if l.startswith("Shmem:"):
            return int(l.split()[1]) * 1024
before = info()
with open("/dev/shm/big", "wb") as f:
    f.write(b"x" * (64 << 20))
after = info()
grew = after.sharedram - before.sharedram
print("grew by the file", 60 << 20 <= grew <= 72 << 20)
print("within the limit", after.sharedram <= after.totalram)
print("as meminfo's Shmem", abs(after.sharedram - shmem()) <= 8 << 20)
print("buffers", after.bufferram)
"#;

#[test]
fn sysinfo_shared_ram_is_the_sandbox_s() {
    let out = Run::new(&[PY, "-c", SHARED])
        .sup(&["--memory", LIMIT])
        .supervised()
        .ok("sysinfo");
    assert_eq!(
        out.stdout,
        "grew by the file True\nwithin the limit True\nas meminfo's Shmem True\nbuffers 0\n",
        "{}",
        out.dump()
    );
}
