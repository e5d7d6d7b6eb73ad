"""What the OCI columns of scripts/compare made, for clean-up: the work
dir (the image's root file system, the bundles, the runtimes' roots),
the script's dockerd and what it changed, and why the image or dockerd
could not be made; the image's name, how a failed command is put in one
line, and one timed run of a command (every column's, scripts/compare's
too).

Owns the record only: making things is scripts/compare_oci_image.py's
and scripts/compare_oci_docker.py's, removing them
scripts/compare_oci_docker.py's `cleanup`.
"""

import os
import subprocess
import tempfile
import time

IMAGE = "compare-python:latest"


class State:
    """What the OCI columns made, for cleanup: the work dir, dockerd."""

    def __init__(self):
        self.dir = None  # temp dir holding the rootfs, bundles, runtimes' roots
        self.dockerd = None  # Popen
        self.docker_dir = None
        self.cgroup_parent = None
        self.ipv6 = []
        self.rootfs_error = None
        self.docker_error = None
        self.seq = 0

    def next_id(self, column):
        self.seq += 1
        return f"compare-{os.getpid()}-{column}-{self.seq}"


STATE = State()


def work_dir():
    if STATE.dir is None:
        STATE.dir = tempfile.mkdtemp(prefix="compare-oci-", dir="/var/tmp")
        os.chmod(STATE.dir, 0o755)
    return STATE.dir


def failure(code, err):
    """A failed command in one line: its exit code and its last line of stderr."""
    lines = err.strip().splitlines()
    return f"exit {code}: {lines[-1][:160] if lines else ''}"


def timed_run(argv, env, timeout, on_timeout=None):
    """One run of argv (stdin and stdout null, cwd /) timed with
    perf_counter_ns: (ns, None), or (None, reason) when it times out
    (after `on_timeout()`, if given) or fails (`failure`). A command that
    cannot start raises OSError."""
    t0 = time.perf_counter_ns()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env, cwd="/", timeout=timeout)
    except subprocess.TimeoutExpired:
        if on_timeout:
            on_timeout()
        return None, f"timeout after {timeout:g} s"
    t1 = time.perf_counter_ns()
    if p.returncode != 0:
        return None, failure(p.returncode, p.stderr.decode(errors="replace"))
    return t1 - t0, None
