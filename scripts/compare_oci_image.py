"""The image of the OCI columns of scripts/compare, and their bundles.

The image is made from the host's directories, as the OCI tests make
theirs from busybox: /usr/bin/python3 with its standard library (less
its test suite), the dist-packages the rows import (numpy, pandas,
psutil and what they load), /usr/bin/true and /usr/bin/ps, the
time-zone database (/usr/share/zoneinfo, which pandas reads), and every
shared library they and the Python extension modules need (ldd), at the
paths ldd names, in Debian's merged-/usr layout, with the loader's cache
made by `ldconfig -r` from the host's ld.so.conf, as a Debian image has it. Bundles use `runc
spec`'s config (read-only root), with the row's command, the script's
environment, a tmpfs at /tmp (Docker's `--tmpfs` options) and the data
directory bound read-only where the row reads it.

Owns the image's root file system (a directory in the work dir) and a
bundle per row; running them is scripts/compare_oci_runners.py's and
Docker's (scripts/compare_oci_docker.py).
"""

import json
import os
import shutil
import subprocess
import tempfile

from compare_oci_state import STATE, work_dir

# What `docker run --tmpfs /tmp` mounts, for the bundles' /tmp too.
TMPFS_OPTIONS = ["nosuid", "nodev", "noexec", "mode=1777", "size=65536k"]


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
    # The time-zone database, as a Debian image has it (tzdata): pandas'
    # pytz reads /usr/share/zoneinfo/tzdata.zi as it is imported.
    if os.path.isdir("/usr/share/zoneinfo"):
        _copy_tree(root, "/usr/share/zoneinfo")
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
