//! A plain read by a clean path under /proc takes the direct route
//! (`procfs/src/direct.rs`: opened beneath the view's procfs with no
//! symlink followed, named by its path); any other spelling of the same
//! file takes the general one (resolved, named by `readlink`, reopened).
//! Both must answer alike: the same text (its stable part), the same
//! errno, the guest's `O_NONBLOCK` and close-on-exec, for a process's
//! files, `self`, `thread-self`, `mounts` and `net`, the sandbox's own
//! global files, symlinks and magic links (which the route leaves to the
//! general one), directories, pids that are gone, and reads the kernel
//! refuses the caller (a process that is not dumpable). Checked against the
//! same script run natively, as root and as the unprivileged `tester`.

use crate::common;
use common::*;

const SCRIPT: &str = r#"
import ctypes, errno, os, threading

libc = ctypes.CDLL(None, use_errno=True)
O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC = os.O_NOFOLLOW, os.O_NONBLOCK, os.O_CLOEXEC

def opened(path, flags):
    # The C library's open with exactly these flags (os.open adds O_CLOEXEC).
    fd = libc.open(path.encode(), flags)
    if fd < 0:
        return errno.errorcode[ctypes.get_errno()]
    try:
        fl = (os.get_blocking(fd), os.get_inheritable(fd))
        try:
            data = os.read(fd, 1 << 16)
        except OSError as e:
            data = errno.errorcode[e.errno]
        return (fl, data)
    finally:
        os.close(fd)

def stable(path, r):
    # What does not change between two reads of the file.
    if isinstance(r, str) or isinstance(r[1], str):
        return r
    fl, data = r
    name = path.rsplit("/", 1)[-1]
    if name == "stat" and b")" in data:
        data = data.rsplit(b")", 1)[0]
    elif name == "status":
        keep = (b"Name", b"Tgid", b"Pid", b"PPid", b"Uid", b"Gid", b"Cpus_allowed_list")
        data = b"".join(l for l in data.splitlines(True) if l.split(b":")[0] in keep)
    elif name in ("uptime", "loadavg", "stat") and path.count("/") == 2:
        data = [len(l.split()) for l in data.splitlines()][:1]
    elif "/net/" in path:
        data = data.splitlines()[:1]
    elif name == "exe":
        data = data[:4]
    return (fl, data)

def show(r):
    if isinstance(r, str):
        return r
    fl, data = r
    return "ok blocking=%s inheritable=%s%s" % (fl[0], fl[1], " " + data if isinstance(data, str) else "")

child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
me, parent = os.getpid(), os.getppid()
# A process that is not dumpable: its environ and auxv only a tracer
# may read (the unprivileged caller's read is refused, on either route).
r, w = os.pipe()
dumpless = os.fork()
if dumpless == 0:
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    os.close(w)
    os.read(r, 1)
    os._exit(0)
os.close(r)
while open(f"/proc/{dumpless}/stat").read().split()[2] not in "SD":
    pass
paths = [
    ("DUMPLESS/environ", f"/proc/{dumpless}/environ"), ("DUMPLESS/auxv", f"/proc/{dumpless}/auxv"),
    ("ME/stat", f"/proc/{me}/stat"), ("ME/status", f"/proc/{me}/status"),
    ("ME/cmdline", f"/proc/{me}/cmdline"), ("ME/environ", f"/proc/{me}/environ"),
    ("ME/mountinfo", f"/proc/{me}/mountinfo"), ("ME/task/ME/stat", f"/proc/{me}/task/{me}/stat"),
    ("PARENT/stat", f"/proc/{parent}/stat"), ("GONE/stat", f"/proc/{child}/stat"),
] + [(p, p) for p in [
    "/proc/self/stat", "/proc/self/status", "/proc/thread-self/stat", "/proc/self/ctty",
    "/proc/self/exe", "/proc/self/task", "/proc/self/fd", "/proc/self/mounts", "/proc/mounts",
    "/proc/net/unix", "/proc/self/net/tcp", "/proc/uptime", "/proc/loadavg", "/proc/stat",
    "/proc/self/no-such-file",
]]
flag_sets = [os.O_RDONLY, os.O_RDONLY | O_CLOEXEC, os.O_RDONLY | O_NONBLOCK, os.O_RDONLY | O_NOFOLLOW]

def spellings(p):
    # The same file by the general route: a `.`, a doubled slash.
    head, tail = p.rsplit("/", 1)
    return [p, f"{head}/./{tail}", p.replace("/proc/", "/proc//", 1)]

def check(label, path):
    for flags in flag_sets:
        results = [stable(path, opened(s, flags)) for s in spellings(path)]
        same = all(r == results[0] for r in results)
        print(label, flags, show(results[0]), "same" if same else f"DIFFER {results}")

for label, p in paths:
    check(label, p)
# From a thread: thread-self is its own.
t = threading.Thread(target=check, args=("thread", "/proc/thread-self/status"))
t.start()
t.join()
os.close(w)
os.waitpid(dumpless, 0)
"#;

fn run() -> Run {
    Run::new(&["/usr/bin/python3", "-c", SCRIPT])
}

fn check(supervised: Out, native: &str, who: &str) {
    let out = supervised.ok(who);
    assert!(!out.stdout.contains("DIFFER"), "{who}: {}", out.dump());
    assert_eq!(out.stdout, native, "{who}: {}", out.dump());
}

#[test]
fn direct_and_general_routes_answer_alike() {
    let native = run().native().ok("native");
    assert!(!native.stdout.contains("DIFFER"), "{}", native.dump());
    assert!(
        native.stdout.contains("/proc/self/ctty 0 ENOENT"),
        "{}",
        native.dump()
    );
    check(run().supervised(), &native.stdout, "supervised");
}

#[test]
fn direct_and_general_routes_answer_alike_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let native = run().user(uid, gid).native().ok("native tester");
    assert!(!native.stdout.contains("DIFFER"), "{}", native.dump());
    check(
        run().user(uid, gid).bin(bin).supervised(),
        &native.stdout,
        "tester",
    );
}
