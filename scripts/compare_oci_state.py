"""What the OCI columns of scripts/compare made, for clean-up: the work
dir (the image's root file system, the bundles, the runtimes' roots),
the script's dockerd and what it changed, and why the image or dockerd
could not be made; the image's name, and how a failed command is put in
one line.

Owns the record only: making things is scripts/compare_oci_image.py's
and scripts/compare_oci_docker.py's, removing them
scripts/compare_oci_docker.py's `cleanup`.
"""

import os
import tempfile

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
