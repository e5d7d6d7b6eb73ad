# The guest's stdin, stdout and stderr when they are the host's devices
# (stdin the host's /dev/null, stdout and stderr a terminal of the host's:
# tests/fs/pty_wrap.py): the guest reads and writes them, and changes
# neither node. Each change is harmless even where the sandbox failed
# (the node's own mode, owner and times given back). Prints one line a
# probe; never run natively (host_probe.py, its head).
import stat


def kind(fd):
    st = os.fstat(fd)
    if not stat.S_ISCHR(st.st_mode):
        return "not a device"
    return "mem" if os.major(st.st_rdev) == 1 else "tty" if os.isatty(fd) else "other"


for fd in (0, 1):
    st = os.fstat(fd)
    mode = st.st_mode & 0o7777
    link = "/proc/self/fd/%d" % fd
    print(fd, kind(fd))
    probe("%d fchmod" % fd, lambda: os.fchmod(fd, mode))
    probe("%d fchown" % fd, lambda: os.fchown(fd, -1, -1))
    probe("%d futimens" % fd, lambda: os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns)))
    probe("%d chmod link" % fd, lambda: os.chmod(link, mode))
    probe("%d chown link" % fd, lambda: os.chown(link, -1, -1))
probe("0 read", lambda: len(os.read(0, 16)))
probe("0 names", lambda: os.readlink("/proc/self/fd/0"))
probe("0 reopen", lambda: os.close(os.open("/proc/self/fd/0", os.O_WRONLY)))
probe("1 write", lambda: os.write(1, b"") or None)
probe("1 isatty", lambda: os.isatty(1))
