"""The dockerd of the `docker-runc` and `docker-supervisor` columns of
scripts/compare: started with a data root, exec root, socket, config
file (registering `supervisor` as a runtime) and `--cgroup-parent` of
its own, no bridge, no iptables, the image imported; and the clean-up of
everything the OCI columns made (containers, dockerd by pid, its mounts,
cgroups and files, the host sysctls it changed, the work dir). The
machine's Docker configuration is never read or written.

Owns dockerd and the clean-up; the `docker run` of a row is
scripts/compare_oci.py's.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time

from compare_oci_state import IMAGE, STATE, failure

# The host sysctls dockerd changes (it turns IPv6 off host-wide); put back at the end.
IPV6_SWITCHES = [f"/proc/sys/net/ipv6/conf/{i}/disable_ipv6" for i in ("all", "default", "lo")]


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
        STATE.docker_error = "docker import: " + failure(imp.returncode, imp.stderr.decode(errors="replace"))
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
