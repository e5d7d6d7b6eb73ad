"""The runs of the `oci-runc` and `oci-supervisor` columns of
scripts/compare: `runc run` of a bundle, and `supervisor` create, start,
a wait for the container's process (this process a child subreaper, as
an engine's shim is) and delete; the orphans a subreaper inherits reaped.

Owns one timed run each: which bundle, and the table, are the callers'.
"""

import ctypes
import os
import signal
import subprocess
import tempfile
import threading
import time

from compare_oci_state import STATE, failure, timed_run, work_dir


def run_runc(runc, root, bundle_dir, cid, timeout, env):
    """`runc run`: (ns, None) or (None, reason)."""
    def delete():
        subprocess.run([runc, "--root", root, "delete", "--force", cid], capture_output=True)
    return timed_run([runc, "--root", root, "run", "--bundle", bundle_dir, cid], env, timeout,
                     on_timeout=delete)


def become_subreaper():
    """PR_SET_CHILD_SUBREAPER: orphans below this process become its children."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans(keep=()):
    """Reaps this process's ended children that no Popen waits for: as a
    subreaper it inherits orphans (the engine's shims, a sandbox's
    leftovers), which would otherwise stay zombies until it exits."""
    me = os.getpid()
    keep = set(keep) | ({STATE.dockerd.pid} if STATE.dockerd else set())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in keep:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z" and int(fields[1]) == me:
            try:
                os.waitpid(int(entry), os.WNOHANG)
            except ChildProcessError:
                pass


def run_supervisor(sup, root, bundle_dir, cid, timeout, env):
    """create, start, wait for the container's process, delete: (ns, None) or (None, reason)."""
    base = [sup, "--root", root]
    pid_file = os.path.join(root, cid + ".pid")
    # The container's stdio is create's: a file, not a pipe, so that create
    # returns while the (waiting) container holds it.
    with tempfile.TemporaryFile(dir=work_dir()) as err:
        t0 = time.perf_counter_ns()
        c = subprocess.run(base + ["create", "--bundle", bundle_dir, "--pid-file", pid_file, cid],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                           env=env, cwd="/")
        if c.returncode != 0:
            subprocess.run(base + ["delete", "--force", cid], capture_output=True)
            err.seek(0)
            return None, "create: " + failure(c.returncode, err.read().decode(errors="replace"))
        with open(pid_file) as f:
            pid = int(f.read().strip())
        s = subprocess.run(base + ["start", cid], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
        if s.returncode != 0:
            subprocess.run(base + ["delete", "--force", cid], capture_output=True)
            os.waitpid(pid, 0)
            return None, "start: " + failure(s.returncode, s.stderr.decode(errors="replace"))
        timer = threading.Timer(timeout, lambda: os.kill(pid, signal.SIGKILL))
        timer.start()
        _, status = os.waitpid(pid, 0)
        timer.cancel()
        d = subprocess.run(base + ["delete", cid], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
        t1 = time.perf_counter_ns()
        os.unlink(pid_file)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            why = "timeout" if code == -signal.SIGKILL else "container"
            return None, f"{why}: " + failure(code, err.read().decode(errors="replace"))
        if d.returncode != 0:
            return None, "delete: " + failure(d.returncode, d.stderr.decode(errors="replace"))
    return t1 - t0, None
