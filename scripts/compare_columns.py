"""The columns of scripts/compare: how each way of running a command
(native, `supervisor run`, a baseline binary, the pool, bwrap, runsc,
sandlock; the OCI columns are compare_oci.py's) is made, with its prefix,
its scratch directory and its note, and one timed run of an argv (or of
several copies at once).

Owns the columns and their runs; not the workloads
(compare_workloads.py) nor the table (scripts/compare).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import compare_oci
from compare_oci_state import failure as oci_failure, timed_run
from compare_workloads import _DATA, PY, ROOT

ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root" if os.geteuid() == 0 else os.environ.get("HOME", "/"),
    "LANG": os.environ.get("LANG", "C.UTF-8"),
    "TERM": os.environ.get("TERM", "dumb"),
}

# The native column's prefix for the workloads that list the processes they
# see (compare_workloads.OWN_PIDS): a pid namespace and procfs of their own.
NATIVE_OWN_PIDS = (["unshare"] + ([] if os.geteuid() == 0 else ["--user", "--map-root-user"])
                   + ["--pid", "--fork", "--mount-proc", "--"])


def fs_type(path):
    """File-system type of the mount holding path (from /proc/self/mounts)."""
    best, kind = "", "?"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and (path == parts[1] or path.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) >= len(best):
                        best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


_SCRATCH = []  # [path] once chosen; [path, "mounted"] when we mounted it


def native_scratch(dry_run=False):
    """Scratch dir for the columns that write to the host (native, sandlock).

    As root: a fresh tmpfs mounted for this run (a fresh tmpfs is what the
    sandboxes get, and it is measurably faster than a long-lived /dev/shm);
    else /dev/shm when it is a tmpfs; else /tmp.
    """
    if _SCRATCH:
        return _SCRATCH[0]
    if dry_run:
        _SCRATCH[:] = ["SCRATCH"]  # a dry run prints command lines: nothing to mount
        return _SCRATCH[0]
    if os.geteuid() == 0 and shutil.which("mount"):
        d = tempfile.mkdtemp(prefix="compare-scratch-")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g,mode=1777", "tmpfs", d],
                           capture_output=True)
        if r.returncode == 0:
            _SCRATCH[:] = [d, "mounted"]
            return d
        os.rmdir(d)
    if os.path.isdir("/dev/shm") and fs_type("/dev/shm") == "tmpfs" and os.access("/dev/shm", os.W_OK):
        _SCRATCH[:] = ["/dev/shm"]
    else:
        _SCRATCH[:] = ["/tmp"]
    return _SCRATCH[0]


def release_scratch():
    if len(_SCRATCH) == 2:
        subprocess.run(["umount", _SCRATCH[0]], capture_output=True)
        try:
            os.rmdir(_SCRATCH[0])
        except OSError:
            pass


class Column:
    """One way of running a command: a prefix and a scratch directory."""

    def __init__(self, name, prefix, scratch, note=""):
        self.name, self.prefix, self.scratch, self.note = name, prefix, scratch, note
        self.skip = None  # reason, when the whole column is skipped
        self.ratio_to = "native"  # the column whose median the ratio is to

    def supports(self, workload):
        return True

    def describe(self, name, cmd, own_pids=False):
        """The command lines one run of a row is (what --dry-run prints)."""
        return [self.argv(cmd, own_pids)]

    def run(self, name, cmd, own_pids, timeout, copies=1):
        return run_once(self.argv(cmd, own_pids), timeout, copies)

    def argv(self, cmd, own_pids=False):
        data = _DATA[0] if _DATA else ""
        prefix = list(self.prefix)
        if own_pids and self.name == "native":
            prefix = NATIVE_OWN_PIDS + prefix
        if data and any("{data}" in a for a in cmd):
            # The data directory, read-only, where the sandbox would not show it.
            ro = ["--ro", f"{data}:{data}"]
            extra = {"supervisor": ro, "baseline": ro, "sandlock": ["-r", data]}
            at = prefix.index("--") if "--" in prefix else len(prefix)
            prefix[at:at] = extra.get(self.name, [])
        return prefix + [a.replace("{scratch}", self.scratch).replace("{data}", data) for a in cmd]


def which(name, *extra):
    found = shutil.which(name, path=ENV["PATH"] + ":" + os.path.expanduser("~/.cargo/bin"))
    if found:
        return found
    for p in extra:
        if os.access(p, os.X_OK):
            return p
    return None


def make_columns(args):
    cols = [Column("native", [], native_scratch(args.dry_run))]
    fresh = " mounted for this run" if len(_SCRATCH) == 2 else ""
    cols[0].note = f"scratch {cols[0].scratch} ({fs_type(cols[0].scratch)}{fresh})"

    sup = args.supervisor or os.path.join(ROOT, "target/release/supervisor")
    c = Column("supervisor", [sup, "run", "--"], "/tmp", "`supervisor run -- CMD`; scratch: the layer's /tmp")
    if not os.access(sup, os.X_OK):
        c.skip = f"{sup} not found (run `cargo build --release`)"
    cols.append(c)

    if args.baseline:
        # Another supervisor binary (a copy of the build before a change),
        # in the same interleaved rounds.
        c = Column("baseline", [args.baseline, "run", "--"], "/tmp",
                   f"`{args.baseline} run -- CMD` (the binary a change is measured against)")
        if not os.access(args.baseline, os.X_OK):
            c.skip = f"{args.baseline} not found"
        cols.append(c)

    if args.columns and "pool" in args.columns.split(","):
        # `supervisor run --pool`: a pool of the same binary, started once
        # the data directory exists (start_pool), stopped at the end.
        sock = os.path.join(pool_dir(), "pool.sock")
        c = Column("pool", [sup, "run", "--pool", sock, "--"], "/tmp",
                   f"`supervisor run --pool S -- CMD`, S: `supervisor pool --socket S --size 16` "
                   "started from / (with the data directory read-only when a workload needs it); "
                   f"before each of its rounds of a burst (16 at once), an untimed {POOL_REFILL_S:g} s "
                   "pause, so that the 16 sandboxes the round before used are set up again")
        c.socket = sock
        if not os.access(sup, os.X_OK):
            c.skip = f"{sup} not found"
        cols.append(c)

    if args.columns and "baseline-pool" in args.columns.split(","):
        # The same pool of the baseline binary: a change to a pooled run
        # measured against the build before it, in the same rounds.
        sock = os.path.join(pool_dir(), "pool.sock")
        base = args.baseline or ""
        c = Column("baseline-pool", [base, "run", "--pool", sock, "--"], "/tmp",
                   f"`{base} run --pool S -- CMD`, S: a pool of that binary, as the pool column's")
        c.socket = sock
        if not os.access(base, os.X_OK):
            c.skip = f"--baseline {base!r} not found"
        cols.append(c)

    bwrap = which("bwrap")
    c = Column(
        "bwrap",
        [bwrap or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
         "--unshare-all", "--die-with-parent", "--"],
        "/tmp",
        "`bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent`",
    )
    if not bwrap:
        c.skip = "bwrap not installed (apt-get install bubblewrap, or --install)"
    cols.append(c)

    runsc = which("runsc")
    c = Column("runsc", [runsc or "runsc", "--network=none", "do"], "/tmp",
               "`runsc --network=none do` (default platform; never kvm)")
    if not runsc:
        c.skip = "runsc not installed (apt-get install runsc, or --install)"
    elif os.geteuid() != 0:
        c.prefix[1:1] = ["--rootless"]
    cols.append(c)

    sandlock = which("sandlock")
    scratch = native_scratch()  # sandlock has no private /tmp: it writes where native does
    c = Column(
        "sandlock",
        [sandlock or "sandlock", "run", "-r", "/usr", "-r", "/lib", "-r", "/lib64", "-r", "/etc",
         "-w", scratch, "--"],
        scratch,
        f"`sandlock run -r /usr -r /lib -r /lib64 -r /etc -w {scratch}` (-w added for the "
        f"writing workloads; scratch: host {scratch}, {fs_type(scratch)})",
    )
    if not sandlock:
        c.skip = "sandlock not installed (cargo install sandlock-cli --locked, or --install)"
    cols.append(c)

    named = args.columns.split(",") if args.columns else []
    tools = {"runc": which("runc"), "dockerd": which("dockerd"), "docker": which("docker"),
             "supervisor": sup, "python": PY}
    for name in compare_oci.OCI_COLUMNS:
        if name in named:  # only when named, as pool
            cols.append(compare_oci.OciColumn(name, tools, ENV))

    if args.columns:
        wanted = args.columns.split(",")
        unknown = set(wanted) - {c.name for c in cols}
        if unknown:
            sys.exit(f"compare: unknown column(s): {', '.join(sorted(unknown))}")
        cols = [c for c in cols if c.name in wanted or c.name == "native"]
    return cols


# The columns that run through a pool of their own binary.
POOLED = ("pool", "baseline-pool")
_POOL = []  # the pooled columns' daemons, once started
_POOL_DIRS = []  # the pool column's socket directory, once made (also by --dry-run)


def pool_dir():
    """A fresh directory for the pool's socket; stop_pool removes it."""
    d = tempfile.mkdtemp(prefix="compare-pool-")
    _POOL_DIRS.append(d)
    return d

# A burst takes every sandbox of the pool; the daemon sets up their
# replacements one at a time (about 10 ms each here), so the next burst
# would otherwise time the pool's set-ups, not its runs.
POOL_REFILL_S = 1.0
# How long stop_pool waits for the daemon to end on SIGTERM before SIGKILL.
POOL_STOP_S = 10


def start_pool(cols):
    """Starts the pool column's daemon (16 sandboxes: the widest workload)."""
    for c in cols:
        if c.name not in POOLED or c.skip:
            continue
        flags = ["--ro", f"{_DATA[0]}:{_DATA[0]}"] if _DATA else []
        argv = [c.prefix[0], "pool", "--socket", c.socket, "--size", "16"] + flags
        _POOL.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      env=ENV, cwd="/"))
        deadline = time.monotonic() + 10
        while not os.path.exists(c.socket) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(1)  # its sandboxes set up, one at a time
        if not os.path.exists(c.socket):
            c.skip = "the pool did not start"


def stop_pool():
    """Stops the pool's daemon and removes its socket's directory: at the
    end of every run, a dry run, an error and Ctrl-C (compare's finally)."""
    for p in _POOL:
        p.terminate()
        try:
            p.wait(timeout=POOL_STOP_S)
        except subprocess.TimeoutExpired:  # a daemon that does not stop must not hold the script
            p.kill()
            p.wait()
    _POOL.clear()
    for d in _POOL_DIRS:
        shutil.rmtree(d, ignore_errors=True)
    _POOL_DIRS.clear()


def run_copies(argv, copies, timeout):
    """`copies` of argv started at once: (ns until the last ends, None),
    or (None, reason) if any failed."""
    t0 = time.perf_counter_ns()
    try:
        ps = [subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=ENV, cwd="/") for _ in range(copies)]
    except OSError as e:
        return None, f"cannot start: {e}"
    failure = None
    for p in ps:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            failure = failure or f"timeout after {timeout:g} s"
            continue
        if p.returncode != 0 and not failure:
            failure = oci_failure(p.returncode, err.decode(errors="replace"))
    t1 = time.perf_counter_ns()
    return (None, failure) if failure else (t1 - t0, None)


def run_once(argv, timeout, copies=1):
    """(elapsed_ns, None) on success, (None, reason) on failure."""
    if copies > 1:
        return run_copies(argv, copies, timeout)
    try:
        return timed_run(argv, ENV, timeout)
    except OSError as e:
        return None, f"cannot start: {e}"
