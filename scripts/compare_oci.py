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

The image is made from the host's directories, as the OCI tests make
theirs from busybox: /usr/bin/python3 with its standard library (less
its test suite), the dist-packages the rows import (numpy, pandas,
psutil and what they load), /usr/bin/true and /usr/bin/ps, and every
shared library they and the Python extension modules need (ldd), at the
paths ldd names, in Debian's merged-/usr layout, with the loader's cache
made by `ldconfig -r` from the host's ld.so.conf, as a Debian image has it. Bundles use `runc
spec`'s config (read-only root), with the row's command, the script's
environment, a tmpfs at /tmp (Docker's `--tmpfs` options) and the data
directory bound read-only where the row reads it.

Owns the OCI columns only: timing, rows and the table are scripts/compare's.
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

IMAGE = "compare-python:latest"
# What `docker run --tmpfs /tmp` mounts, for the bundles' /tmp too.
TMPFS_OPTIONS = ["nosuid", "nodev", "noexec", "mode=1777", "size=65536k"]
# Rows whose programs the image holds (or the data directory, bound in).
OCI_WORKLOADS = {"true", "py_pass", "py_imports", "numpy", "pandas", "groupby", "walk", "files",
                 "sqlite", "http", "ps", "psutil", "static_reads", "go_reads", "musl_reads"}
OCI_COLUMNS = ("oci-runc", "oci-supervisor", "docker-runc", "docker-supervisor")
# The host sysctls dockerd changes (it turns IPv6 off host-wide); put back at the end.
IPV6_SWITCHES = [f"/proc/sys/net/ipv6/conf/{i}/disable_ipv6" for i in ("all", "default", "lo")]


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


# ---------------------------------------------------------------- the image

def _in_image(path):
    """Where a host path goes in the merged-/usr image (/lib/x -> /usr/lib/x)."""
    for top in ("/lib64/", "/lib/", "/bin/", "/sbin/"):
        if path.startswith(top):
            return "/usr" + path
    return path


def _copy(root, path):
    """Copies the host's file `path` (followed) to the same path in `root`."""
    dest = os.path.join(root, _in_image(path).lstrip("/"))
    if os.path.exists(dest):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(os.path.realpath(path), dest)


def _copy_tree(root, src, skip=()):
    dest = os.path.join(root, _in_image(src).lstrip("/"))
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if os.path.join(d, n) in skip])


def _libraries(files):
    """The shared libraries (and loader) ldd lists for `files`."""
    libs = set()
    for i in range(0, len(files), 200):
        out = subprocess.run(["ldd"] + files[i:i + 200], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                libs.add(parts[2])
            elif parts and parts[0].startswith("/") and not parts[0].endswith(":"):
                libs.add(parts[0])  # the loader
    return sorted(libs)


def _python_packages(py):
    """Top-level entries of dist-packages that numpy, pandas and psutil load."""
    probe = ("import sys\n"
             "for m in ('numpy', 'pandas', 'psutil'):\n"
             "    try:\n"
             "        __import__(m)\n"
             "    except ImportError:\n"
             "        pass\n"
             "for m in list(sys.modules.values()):\n"
             "    f = getattr(m, '__file__', None)\n"
             "    if f: print(f)\n")
    out = subprocess.run([py, "-c", probe], capture_output=True, text=True).stdout
    tops = set()
    for f in out.splitlines():
        for site in ("/usr/lib/python3/dist-packages/", "/usr/local/lib/python3"):
            if f.startswith(site) and "/dist-packages/" in f:
                base, rest = f.split("/dist-packages/", 1)
                tops.add(base + "/dist-packages/" + rest.split("/", 1)[0])
    return sorted(tops)


def make_rootfs(py):
    """The image's root file system (a directory); None and STATE.rootfs_error when it cannot be made."""
    root = os.path.join(work_dir(), "rootfs")
    if os.path.isdir(root):
        return root
    real_py = os.path.realpath(py)
    stdlib = os.path.dirname(subprocess.run(
        [py, "-c", "import os; print(os.__file__)"], capture_output=True, text=True).stdout.strip())
    if not stdlib.startswith("/usr/lib/python3"):
        STATE.rootfs_error = f"{py}'s standard library is not under /usr/lib ({stdlib or '?'})"
        return None
    os.makedirs(root)
    for d in ("usr/bin", "usr/lib", "usr/lib64", "usr/sbin", "etc", "proc", "dev", "sys", "tmp",
              "root", "var/tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for link in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + link, os.path.join(root, link))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")
    programs = [real_py] + [p for p in ("/usr/bin/true", "/usr/bin/ps") if os.path.exists(p)]
    for p in programs:
        _copy(root, p)
    os.symlink(os.path.basename(real_py), os.path.join(root, "usr/bin/python3"))
    _copy_tree(root, stdlib, skip={os.path.join(stdlib, "test")})
    for top in _python_packages(py):
        if os.path.isdir(top):
            _copy_tree(root, top)
        else:
            _copy(root, top)
    cache = "/usr/lib/python3/dist-packages/__pycache__"
    if os.path.isdir(cache):
        _copy_tree(root, cache)
    musl = "/lib/ld-musl-x86_64.so.1"  # musl_reads' loader (its libc)
    if os.path.exists(musl):
        _copy(root, musl)
    modules = []
    for base, _, names in os.walk(os.path.join(root, "usr/lib")):
        modules += [os.path.join(base, n) for n in names if ".so" in n and "python" in base]
    host = [m.replace(root, "", 1) for m in modules]
    for lib in _libraries(programs + [h for h in host if os.path.isfile(h)]):
        _copy(root, lib)
    # The loader's cache, as a Debian image has it: without one, every
    # library is looked for in each directory of the default path.
    for conf in ("/etc/ld.so.conf", "/etc/ld.so.conf.d"):
        if os.path.isdir(conf):
            _copy_tree(root, conf)
        elif os.path.exists(conf):
            _copy(root, conf)
    if shutil.which("ldconfig"):
        subprocess.run(["ldconfig", "-r", root], capture_output=True)
    return root


# ---------------------------------------------------------------- bundles

def base_config(runc):
    """runc's default config.json (`runc spec`)."""
    d = tempfile.mkdtemp(dir=work_dir())
    subprocess.run([runc, "spec", "--bundle", d], check=True, capture_output=True)
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    shutil.rmtree(d)
    return config


def bundle(runc, rootfs, key, argv, env, data):
    """A bundle directory for one row (config.json; the root is `rootfs`)."""
    path = os.path.join(work_dir(), "bundles", key)
    if os.path.isdir(path):
        return path
    os.makedirs(path)
    config = base_config(runc)
    config["root"] = {"path": rootfs, "readonly": True}
    config["hostname"] = "compare"
    p = config["process"]
    p["terminal"] = False
    p["args"] = argv
    p["env"] = [f"{k}={v}" for k, v in env.items()]
    p["cwd"] = "/"
    config["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                             "options": TMPFS_OPTIONS})
    if data:
        config["mounts"].append({"destination": data, "type": "bind", "source": data,
                                 "options": ["rbind", "ro"]})
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    return path


# ---------------------------------------------------------------- runners

def _failure(code, err):
    lines = err.strip().splitlines()
    return f"exit {code}: {lines[-1][:160] if lines else ''}"


def run_runc(runc, root, bundle_dir, cid, timeout, env):
    """`runc run`: (ns, None) or (None, reason)."""
    t0 = time.perf_counter_ns()
    try:
        p = subprocess.run([runc, "--root", root, "run", "--bundle", bundle_dir, cid],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env, cwd="/", timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run([runc, "--root", root, "delete", "--force", cid], capture_output=True)
        return None, f"timeout after {timeout:g} s"
    t1 = time.perf_counter_ns()
    if p.returncode != 0:
        return None, _failure(p.returncode, p.stderr.decode(errors="replace"))
    return t1 - t0, None


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
            return None, "create: " + _failure(c.returncode, err.read().decode(errors="replace"))
        with open(pid_file) as f:
            pid = int(f.read().strip())
        s = subprocess.run(base + ["start", cid], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
        if s.returncode != 0:
            subprocess.run(base + ["delete", "--force", cid], capture_output=True)
            os.waitpid(pid, 0)
            return None, "start: " + _failure(s.returncode, s.stderr.decode(errors="replace"))
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
            return None, f"{why}: " + _failure(code, err.read().decode(errors="replace"))
        if d.returncode != 0:
            return None, "delete: " + _failure(d.returncode, d.stderr.decode(errors="replace"))
    return t1 - t0, None


# ---------------------------------------------------------------- dockerd

def docker_env(env):
    return dict(env, DOCKER_HOST=f"unix://{os.path.join(STATE.docker_dir, 'docker.sock')}")


def start_dockerd(dockerd, docker, sup, rootfs, env):
    """Starts the script's dockerd and imports the image; False and STATE.docker_error if not."""
    d = STATE.docker_dir = tempfile.mkdtemp(prefix="compare-docker-", dir="/var/tmp")
    STATE.cgroup_parent = f"/compare-docker-{os.getpid()}"
    STATE.ipv6 = [(p, open(p).read()) for p in IPV6_SWITCHES if os.path.exists(p)]
    with open(os.path.join(d, "daemon.json"), "w") as f:
        json.dump({"runtimes": {"supervisor": {"path": sup}}}, f)
    log = open(os.path.join(d, "dockerd.log"), "w")
    STATE.dockerd = subprocess.Popen(
        [dockerd, "--data-root", os.path.join(d, "data"), "--exec-root", os.path.join(d, "exec"),
         "--pidfile", os.path.join(d, "docker.pid"), "-H", f"unix://{os.path.join(d, 'docker.sock')}",
         "--config-file", os.path.join(d, "daemon.json"), "--bridge=none", "--iptables=false",
         "--ip6tables=false", "--cgroup-parent", STATE.cgroup_parent],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd="/")
    log.close()
    deadline = time.monotonic() + 60
    while subprocess.run([docker, "version"], capture_output=True,
                         env=docker_env(env)).returncode != 0:
        if time.monotonic() > deadline or STATE.dockerd.poll() is not None:
            with open(os.path.join(d, "dockerd.log")) as f:
                tail = f.read().strip().splitlines()[-1:] or ["?"]
            STATE.docker_error = f"dockerd did not come up: {tail[0][:200]}"
            return False
        time.sleep(0.1)
    tar = subprocess.Popen(["tar", "-C", rootfs, "-cf", "-", "."], stdout=subprocess.PIPE)
    imp = subprocess.run([docker, "import", "-", IMAGE], stdin=tar.stdout, capture_output=True,
                         env=docker_env(env))
    tar.stdout.close()
    tar.wait()
    if imp.returncode != 0:
        STATE.docker_error = "docker import: " + _failure(imp.returncode, imp.stderr.decode(errors="replace"))
        return False
    return True


def _unmount_beneath(d):
    with open("/proc/self/mountinfo") as f:
        points = [l.split()[4] for l in f if l.split()[4].startswith(d + "/")]
    for p in sorted(points, key=lambda p: -p.count("/")):
        subprocess.run(["umount", "-l", p], capture_output=True)


def _remove_cgroup_parent(parent):
    """The cgroup directories of `parent` (and beneath) in every hierarchy, deepest first."""
    with open("/proc/self/mountinfo") as f:
        mounts = [l.split()[4] for l in f if l.split(" - ")[1].split()[0] in ("cgroup", "cgroup2")]
    for m in mounts:
        top = os.path.join(m, parent.lstrip("/"))
        for base, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(base)
            except OSError:
                pass


def cleanup(docker, env):
    """Removes what the OCI columns made: containers, dockerd (by pid), its files, the work dir."""
    if STATE.dockerd is not None:
        denv = docker_env(env)
        ids = subprocess.run([docker, "ps", "-aq"], capture_output=True, text=True, env=denv).stdout
        for cid in ids.split():
            subprocess.run([docker, "rm", "-f", cid], capture_output=True, env=denv)
        subprocess.run([docker, "rmi", "-f", IMAGE], capture_output=True, env=denv)
        STATE.dockerd.terminate()
        try:
            STATE.dockerd.wait(timeout=20)
        except subprocess.TimeoutExpired:
            STATE.dockerd.kill()
            STATE.dockerd.wait()
        STATE.dockerd = None
    if STATE.docker_dir:
        _unmount_beneath(STATE.docker_dir)
        shutil.rmtree(STATE.docker_dir, ignore_errors=True)
    if STATE.cgroup_parent:
        _remove_cgroup_parent(STATE.cgroup_parent)
    for path, value in STATE.ipv6:
        try:
            with open(path, "w") as f:
                f.write(value)
        except OSError:
            pass
    if STATE.dir:
        _unmount_beneath(STATE.dir)
        shutil.rmtree(STATE.dir, ignore_errors=True)


# ---------------------------------------------------------------- columns

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
            t0 = time.perf_counter_ns()
            try:
                p = subprocess.run(self.docker_argv(cmd, data), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env=docker_env(self.env), cwd="/", timeout=timeout)
            except subprocess.TimeoutExpired:
                return None, f"timeout after {timeout:g} s"
            t1 = time.perf_counter_ns()
            if p.returncode != 0:
                return None, _failure(p.returncode, p.stderr.decode(errors="replace"))
            return t1 - t0, None
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
