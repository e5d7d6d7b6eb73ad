"""The OCI columns of scripts/compare: containers under runc and under
`supervisor` as an OCI runtime, the same image and flags for both.

- `oci-runc`: `runc run` of a prepared bundle (runc creates, starts,
  waits for and deletes the container in one command).
- `oci-supervisor`: the same bundle through `supervisor create`, `start`,
  a wait for the container's process and `delete`, what runc's `run` does
  (`supervisor` has no foreground `run`: that name is the sandbox's).
  The script is a child subreaper, as an engine's shim is, so the
  container's process (the anchor `create` leaves behind) becomes its
  child and is waited for with waitpid, as `runc run` waits for its own.
- `docker-runc`, `docker-supervisor`: `docker run --rm --network none
  --tmpfs /tmp` of the same image with `--runtime=runc` and
  `--runtime=supervisor`, through a dockerd of the script's own (data
  root, exec root, socket and config file in a temp dir, the runtime
  registered in that config file as README says, no bridge, no iptables,
  `--cgroup-parent` of its own), stopped by pid at the end; the machine's
  Docker configuration is never read or written.

The helpers are modules of their own: the image and the bundles
(scripts/compare_oci_image.py), the runs of `oci-runc` and
`oci-supervisor` (scripts/compare_oci_runners.py), the script's dockerd
and the clean-up of everything made (scripts/compare_oci_docker.py),
what was made and where (scripts/compare_oci_state.py).

Owns the OCI columns only: timing, rows and the table are scripts/compare's.
"""

import os
import subprocess

from compare_oci_docker import cleanup, docker_env, start_dockerd  # noqa: F401  (cleanup: scripts/compare's)
from compare_oci_image import bundle, make_rootfs
from compare_oci_runners import become_subreaper, reap_orphans, run_runc, run_supervisor  # noqa: F401  (reap_orphans: scripts/compare's)
from compare_oci_state import IMAGE, STATE, timed_run, work_dir

# Rows whose programs the image holds (or the data directory, bound in).
OCI_WORKLOADS = {"true", "py_pass", "py_imports", "numpy", "pandas", "groupby", "walk", "files",
                 "sqlite", "http", "ps", "psutil", "static_reads", "go_reads", "musl_reads"}
OCI_COLUMNS = ("oci-runc", "oci-supervisor", "docker-runc", "docker-supervisor")


class OciColumn:
    """One OCI column: how a row runs through a runtime, with or without Docker.

    The same interface as scripts/compare's Column (name, note, skip,
    scratch, ratio_to, supports, describe, run)."""

    def __init__(self, name, tools, env):
        self.name = name
        self.via, self.runtime = name.split("-", 1)  # ("oci" | "docker", "runc" | "supervisor")
        self.tools, self.env = tools, env
        self.scratch = "/tmp"
        self.skip = None
        self.ratio_to = "native" if self.runtime == "runc" else f"{self.via}-runc"
        self.root = os.path.join(work_dir(), "state-" + self.runtime) if self.via == "oci" else None
        flags = "`docker run --rm --network none --tmpfs /tmp --runtime=%s`" % self.runtime
        self.note = {
            "oci-runc": "`runc run` of a bundle (runc spec's config, read-only root, tmpfs /tmp)",
            "oci-supervisor": "`supervisor create`, `start`, wait for the container's process, "
                              "`delete`, of the same bundle (what `runc run` does); ratio to oci-runc",
            "docker-runc": flags + " through the script's own dockerd",
            "docker-supervisor": flags + " through the same dockerd; ratio to docker-runc",
        }[name] + "; image: the host's python3, its libraries and /usr/bin/true; scratch: /tmp, a tmpfs"
        needs = {"oci": ["runc"] + (["supervisor"] if self.runtime == "supervisor" else []),
                 "docker": ["dockerd", "docker", "supervisor"]}[self.via]
        missing = [t for t in needs if not tools.get(t) or not os.access(tools[t], os.X_OK)]
        if os.geteuid() != 0:
            self.skip = "needs root (containers, a dockerd of its own)"
        elif missing:
            self.skip = "not found: " + ", ".join(missing)

    def supports(self, workload):
        return workload in OCI_WORKLOADS

    def args(self, cmd, data):
        return [a.replace("{scratch}", self.scratch).replace("{data}", data) for a in cmd]

    def docker_argv(self, cmd, data):
        argv = [self.tools["docker"], "run", "--rm", "--network", "none", "--tmpfs", "/tmp",
                f"--runtime={self.runtime}"]
        for k, v in self.env.items():
            argv += ["-e", f"{k}={v}"]
        if data and any("{data}" in a for a in cmd):
            argv += ["-v", f"{data}:{data}:ro"]
        return argv + [IMAGE] + self.args(cmd, data)

    def bundle_dir(self, name):
        return os.path.join(work_dir(), "bundles", name)

    def describe(self, name, cmd, data, own_pids=False):
        if self.via == "docker":
            return [self.docker_argv(cmd, data)]
        b, cid = self.bundle_dir(name), "ID"
        if self.runtime == "runc":
            return [[self.tools["runc"], "--root", self.root, "run", "--bundle", b, cid]]
        sup = [self.tools["supervisor"], "--root", self.root]
        return [sup + ["create", "--bundle", b, "--pid-file", "PIDFILE", cid], sup + ["start", cid],
                ["(waitpid of the pid in PIDFILE, the script being a child subreaper)"],
                sup + ["delete", cid]]

    def run(self, name, cmd, data, timeout):
        if self.via == "docker":
            return timed_run(self.docker_argv(cmd, data), docker_env(self.env), timeout)
        uses_data = data if any("{data}" in a for a in cmd) else ""
        b = bundle(self.tools["runc"], make_rootfs(self.tools["python"]), name,
                   self.args(cmd, data), self.env, uses_data)
        os.makedirs(self.root, exist_ok=True)
        cid = STATE.next_id(self.runtime)
        if self.runtime == "runc":
            return run_runc(self.tools["runc"], self.root, b, cid, timeout, self.env)
        return run_supervisor(self.tools["supervisor"], self.root, b, cid, timeout, self.env)


def prepare(cols, env):
    """Makes the image (and dockerd) the live OCI columns need; skips the columns it cannot serve."""
    live = [c for c in cols if isinstance(c, OciColumn) and not c.skip]
    if not live:
        return
    tools = live[0].tools
    rootfs = make_rootfs(tools["python"])
    if rootfs is None:
        for c in live:
            c.skip = "no image: " + STATE.rootfs_error
        return
    if any(c.runtime == "supervisor" and c.via == "oci" for c in live):
        become_subreaper()
    docker = [c for c in live if c.via == "docker"]
    if docker and not start_dockerd(tools["dockerd"], tools["docker"], tools["supervisor"], rootfs, env):
        for c in docker:
            c.skip = STATE.docker_error


def cleanup_containers(cols):
    """Deletes any container a column's runtime still lists (an interrupted run's)."""
    for c in cols:
        if isinstance(c, OciColumn) and c.root and os.path.isdir(c.root):
            binary = c.tools["runc" if c.runtime == "runc" else "supervisor"]
            ids = subprocess.run([binary, "--root", c.root, "list", "-q"], capture_output=True,
                                 text=True).stdout.split()
            for cid in ids:
                subprocess.run([binary, "--root", c.root, "delete", "--force", cid], capture_output=True)
