# What a guest shares with the host it may use but never change: the
# devices bound from the host's /dev, the sysctls, procfs's host-wide
# files and directories. Each probe is harmless even where the sandbox
# failed: a sysctl is written its own value, a device or directory given
# its own mode; the mode changes of a global procfs file (0400, 0644) are
# checked by the test, which restores the mode.
# Prints one line a probe; never run natively (host_probe.py, its head).
import tempfile


def same_mode(path):
    return lambda: os.chmod(path, os.stat(path).st_mode & 0o7777)


def write_back(path):
    def f():
        value = open(path, "rb").read()
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, value)
        finally:
            os.close(fd)
    return f


# The host's devices: used as ever, changed never.
probe("write /dev/null", lambda: open("/dev/null", "w").write("x") and None)
probe("read /dev/urandom", lambda: len(open("/dev/urandom", "rb").read(4)))
probe("write /dev/full", lambda: os.write(os.open("/dev/full", os.O_WRONLY), b"x"))
probe("chmod /dev/zero", same_mode("/dev/zero"))
probe("chown /dev/zero", lambda: os.chown("/dev/zero", -1, -1))
probe("utime /dev/null", lambda: os.utime("/dev/null"))
probe("setxattr /dev/zero", lambda: os.setxattr("/dev/zero", "user.x", b"1"))
fd = os.open("/dev/zero", os.O_RDONLY)
probe("fchmod /dev/zero", lambda: os.fchmod(fd, os.fstat(fd).st_mode & 0o7777))
os.close(fd)

# Sysctls: read, never written.
probe("read kernel/ostype", lambda: open("/proc/sys/kernel/ostype").read().strip())
probe("write vm/swappiness", write_back("/proc/sys/vm/swappiness"))
probe("write kernel/core_pattern", write_back("/proc/sys/kernel/core_pattern"))
if os.path.exists("/proc/sysrq-trigger"):
    # Opened, never written: an open that succeeds fails the test.
    probe("open sysrq-trigger", lambda: os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY)))
else:
    print("open sysrq-trigger absent")

# procfs's host-wide entries: their modes are the same in every procfs.
probe("chmod /proc/tty", same_mode("/proc/tty"))
fd = os.open("/proc/tty", os.O_RDONLY | os.O_DIRECTORY)
probe("fchmod /proc/tty", lambda: os.fchmod(fd, os.fstat(fd).st_mode & 0o7777))
os.close(fd)
probe("read /proc/tty/drivers", lambda: len(open("/proc/tty/drivers").readline()) > 0)
probe("chmod /proc/execdomains 0400", lambda: os.chmod("/proc/execdomains", 0o400))
fd = os.open("/proc/execdomains", os.O_RDONLY)
probe("fchmod /proc/execdomains 0400", lambda: os.fchmod(fd, 0o400))
probe("fchmod /proc/execdomains 0444", lambda: os.fchmod(fd, 0o444))
# Read kept, write given: passed the filter until 2026-12-01, and showed
# in every procfs mounted after (the test looks in a fresh sandbox's).
probe("fchmod /proc/execdomains 0644", lambda: os.fchmod(fd, 0o644))
os.close(fd)
probe("mode /proc/execdomains", lambda: oct(os.stat("/proc/execdomains").st_mode & 0o7777))

# The guest's own: as ever.
probe("write oom_score_adj", write_back("/proc/self/oom_score_adj"))
d = tempfile.mkdtemp()
p = os.path.join(d, "f")
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
probe("fchmod own 0600", lambda: os.fchmod(fd, 0o600))
probe("mode own", lambda: oct(os.stat(p).st_mode & 0o7777))
probe("chmod own 0640", lambda: os.chmod(p, 0o640))
probe("mode own", lambda: oct(os.stat(p).st_mode & 0o7777))
