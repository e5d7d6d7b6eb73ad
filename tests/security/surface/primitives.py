"""The refused and answered primitives of the host-kernel surface, as
programs meet them (tests/security/surface.rs runs this natively and
under the supervisor). Each line is "same KEY: VALUE" (must read the same
in both runs) or "own KEY: VALUE" (the sandbox's answer, checked against
the expected one; natively the kernel's). Argument: a writable directory.
"""
import ctypes
import errno
import fcntl
import mmap
import os
import sys
import termios
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = dict(time=201, gettimeofday=96, mlock=149, munlock=150, msgget=68,
          io_setup=206, sync_file_range=277, eventfd=284, get_mempolicy=239, set_mempolicy=238, pkey_alloc=330,
          landlock_create_ruleset=444, prctl=157, personality=135,
          sched_get_priority_max=146, mq_open=240)


def sc(name, *args):
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in args]
    r = libc.syscall(ctypes.c_long(NR[name]), *a)
    return r if r >= 0 else -ctypes.get_errno()


def name(r):
    return errno.errorcode.get(-r, str(r)) if r < 0 else str(r)


def same(k, v):
    print(f"same {k}: {v}", flush=True)


def own(k, v):
    print(f"own {k}: {v}", flush=True)


def in_child(f):
    """f() in a forked child: what it returned (its personality changes
    stay there)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, str(f()).encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 100).decode()
    os.waitpid(pid, 0)
    os.close(r)
    return out


def set_mm_map(keep_exe):
    """prctl(PR_SET_MM, PR_SET_MM_MAP) with this process's own bounds
    (/proc/self/stat) and, unless keep_exe, a new exe link."""
    f = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    field = lambda n: int(f[n - 3])
    libc.sbrk.restype = ctypes.c_void_p
    bounds = [field(26), field(27), field(45), field(46), field(47),
              libc.sbrk(0), field(28), field(48), field(49), field(50), field(51), 0]
    exe = 0xFFFFFFFF if keep_exe else os.open("/proc/self/exe", os.O_RDONLY)
    m = (ctypes.c_uint64 * 12)(*bounds)
    buf = bytes(m) + (0).to_bytes(4, "little") + exe.to_bytes(4, "little")
    arg = ctypes.create_string_buffer(buf, len(buf))
    return name(sc("prctl", 35, 14, arg, len(buf), 0))


def aio_read(path):
    """Reads 16 bytes of path the way a libaio user does: kernel AIO when
    io_setup works, else (ENOSYS, as fio, MySQL and QEMU do) a plain pread."""
    aio = ctypes.CDLL("libaio.so.1")
    ctx = ctypes.c_ulong(0)
    fd = os.open(path, os.O_RDONLY)
    r = aio.io_setup(1, ctypes.byref(ctx))
    if r < 0:
        data = os.pread(fd, 16, 0)
        os.close(fd)
        return f"fallback after {name(r)}", data

    class Iocb(ctypes.Structure):
        _fields_ = [("data", ctypes.c_uint64), ("key", ctypes.c_uint32),
                    ("rw_flags", ctypes.c_uint32), ("opcode", ctypes.c_uint16),
                    ("reqprio", ctypes.c_int16), ("fildes", ctypes.c_uint32),
                    ("buf", ctypes.c_uint64), ("nbytes", ctypes.c_uint64),
                    ("offset", ctypes.c_int64), ("reserved2", ctypes.c_uint64),
                    ("flags", ctypes.c_uint32), ("resfd", ctypes.c_uint32)]

    class Event(ctypes.Structure):
        _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64),
                    ("res", ctypes.c_int64), ("res2", ctypes.c_int64)]

    buf = ctypes.create_string_buffer(16)
    cb = Iocb(opcode=0, fildes=fd, buf=ctypes.addressof(buf), nbytes=16)
    cbs = (ctypes.POINTER(Iocb) * 1)(ctypes.pointer(cb))
    assert aio.io_submit(ctx, 1, cbs) == 1
    ev = Event()
    assert aio.io_getevents(ctx, 1, 1, ctypes.byref(ev), None) == 1
    aio.io_destroy(ctx)
    os.close(fd)
    return "kernel", buf.raw[:ev.res]


def main(scratch):
    f = os.path.join(scratch, "primitives")
    with open(f, "wb") as fh:
        fh.write(b"0123456789abcdefXYZ")

    # sync: the sandbox's own file systems; Python's os.sync works.
    os.sync()
    same("os.sync", "ok")

    # Kernel AIO through libaio: refused, the program falls back.
    how, data = aio_read(f)
    same("aio data", data)
    own("aio path", how)

    # SysV and POSIX message queues: ENOSYS.
    q = sc("msgget", 0, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if q >= 0:
        libc.msgctl(q, 0, None)  # IPC_RMID
    own("msgget", "created" if q >= 0 else name(q))
    mq = sc("mq_open", ctypes.c_char_p(b"surface-probe"), 0o100 | 2, 0o600, None)
    if mq >= 0:
        os.close(mq)
        libc.mq_unlink(b"/surface-probe")
    own("mq_open", "opened" if mq >= 0 else name(mq))

    # Scheduler constants and clocks, answered by the supervisor.
    same("priority max FIFO", os.sched_get_priority_max(os.SCHED_FIFO))
    same("priority min RR", os.sched_get_priority_min(os.SCHED_RR))
    same("priority max OTHER", os.sched_get_priority_max(os.SCHED_OTHER))
    same("priority max 77", name(sc("sched_get_priority_max", 77)))
    for clock in ("CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_PROCESS_CPUTIME_ID",
                  "CLOCK_THREAD_CPUTIME_ID", "CLOCK_BOOTTIME"):
        same(f"clock_getres {clock}", time.clock_getres(getattr(time, clock)))
    t = sc("time", 0)
    same("time(NULL) near time.time()", abs(t - time.time()) < 5)
    tv = (ctypes.c_long * 2)()
    r = sc("gettimeofday", ctypes.byref(tv), None)
    same("gettimeofday near time.time()", (r, abs(tv[0] - time.time()) < 5))

    # A task's stat: answered from the view's procfs.
    same("getpgid(0) is getpgrp()", os.getpgid(0) == os.getpgrp())
    same("getsid(0) is getsid(pid)", os.getsid(0) == os.getsid(os.getpid()))
    same("sched_getscheduler(0)", os.sched_getscheduler(0))
    same("sched_getparam(0)", os.sched_getparam(0).sched_priority)
    for call in (os.getpgid, os.getsid, os.sched_getscheduler, os.sched_getparam):
        for pid in (-1, 999999):
            try:
                call(pid)
                same(f"{call.__name__}({pid})", "ok")
            except OSError as e:
                same(f"{call.__name__}({pid})", errno.errorcode[e.errno])
    t = os.times()
    same("os.times", (t.user >= 0, t.system >= 0, t.children_user >= 0, t.elapsed > 0))
    child = os.fork()
    if child == 0:
        os._exit(0)
    same("getsid(child) is getsid(0)", os.getsid(child) == os.getsid(0))
    os.waitpid(child, 0)

    # NUMA policy of a one-node machine.
    mode = ctypes.c_int(-1)
    mask = (ctypes.c_ulong * 2)(0xff, 0xff)
    r = sc("get_mempolicy", ctypes.byref(mode), mask, 128, None, 0)
    own("get_mempolicy", (r, mode.value, mask[0], mask[1]))
    r = sc("get_mempolicy", None, mask, 128, None, 4)  # MPOL_F_MEMS_ALLOWED
    own("mems allowed", (r, mask[0], mask[1]))
    # An address: EINVAL without MPOL_F_ADDR; with it, the policy of the
    # mapping there (EFAULT where nothing is mapped) and its page's node.
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    page = mmap.PAGESIZE
    area = libc.mmap(None, 3 * page, 3, 0x22, -1, 0)  # RW, MAP_PRIVATE|MAP_ANONYMOUS
    ctypes.memset(area, 1, page)
    libc.munmap(ctypes.c_void_p(area + page), page)
    libc.mprotect(ctypes.c_void_p(area + 2 * page), page, 0)
    for label, addr in (("mapped", area + 8), ("unmapped", area + page), ("prot_none", area + 2 * page),
                        ("vsyscall", 0xffffffffff600000)):
        for flags in (0, 2, 3, 4):  # none, MPOL_F_ADDR, | MPOL_F_NODE, MPOL_F_MEMS_ALLOWED
            mode = ctypes.c_int(-1)
            r = sc("get_mempolicy", ctypes.byref(mode), None, 0, addr, flags)
            same(f"get_mempolicy addr {label} flags {flags}", (name(r), mode.value))
    node0, node1 = ctypes.c_ulong(1), ctypes.c_ulong(2)
    own("set_mempolicy bind 0", name(sc("set_mempolicy", 2, ctypes.byref(node0), 64)))
    same("set_mempolicy bind 1", name(sc("set_mempolicy", 2, ctypes.byref(node1), 64)))
    same("set_mempolicy default", name(sc("set_mempolicy", 0, None, 0)))

    # Memory: advice by allowlist, locking refused.
    m = mmap.mmap(-1, 4 * mmap.PAGESIZE)
    m[0] = 1
    m.madvise(mmap.MADV_DONTNEED)
    same("madvise DONTNEED, then a read", m[0])
    try:
        m.madvise(12)  # MADV_MERGEABLE
        own("madvise MERGEABLE", "ok")
    except OSError as e:
        own("madvise MERGEABLE", errno.errorcode[e.errno])
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    own("mlock", name(sc("mlock", addr, mmap.PAGESIZE)))
    same("munlock", name(sc("munlock", addr, mmap.PAGESIZE)))
    own("pkey_alloc", name(sc("pkey_alloc", 0, 0)) if sc("pkey_alloc", 0, 0) < 0 else "key")

    # ioctl by allowlist: ENOTTY for the rest, as runsc answers.
    rp, wp = os.pipe()
    os.write(wp, b"hello")
    n = ctypes.c_int(0)
    same("FIONREAD", (fcntl.ioctl(rp, termios.FIONREAD, n), n.value))
    try:
        os.get_terminal_size(rp)
    except OSError as e:
        same("get_terminal_size of a pipe", errno.errorcode[e.errno])
    fd = os.open(f, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x80086601, b"\0" * 8)  # FS_IOC_GETFLAGS
        own("FS_IOC_GETFLAGS", "ok")
    except OSError as e:
        own("FS_IOC_GETFLAGS", errno.errorcode[e.errno])

    # fcntl by allowlist.
    same("F_GETFL", fcntl.fcntl(rp, fcntl.F_GETFL) & os.O_ACCMODE)
    same("F_SETPIPE_SZ", fcntl.fcntl(wp, 1031, 65536))
    try:
        fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)  # F_SETLEASE
        own("F_SETLEASE", "ok")
    except OSError as e:
        own("F_SETLEASE", errno.errorcode[e.errno])
    os.close(fd)

    # prctl by allowlist.
    libc.prctl(15, b"surface-probe", 0, 0, 0)  # PR_SET_NAME
    buf = ctypes.create_string_buffer(16)
    libc.prctl(16, buf, 0, 0, 0)  # PR_GET_NAME
    same("PR_GET_NAME", buf.value)
    tsc = ctypes.c_int(0)
    own("PR_GET_TSC", name(sc("prctl", 25, ctypes.byref(tsc), 0, 0, 0)))
    # PR_SET_MM: the map form, the one the kernel grants without privilege,
    # passes; its exe link and the single-field forms need capabilities.
    size = ctypes.c_uint(0)
    same("PR_SET_MM_MAP_SIZE",
         f'{name(sc("prctl", 35, 15, ctypes.byref(size), 0, 0))} {size.value}')
    own("PR_SET_MM_MAP", in_child(lambda: set_mm_map(keep_exe=True)))
    own("PR_SET_MM_MAP exe_fd", in_child(lambda: set_mm_map(keep_exe=False)))
    own("PR_SET_MM_START_BRK", in_child(lambda: name(sc("prctl", 35, 6, 1, 0, 0))))

    # personality: Docker's list.
    same("personality query", in_child(lambda: sc("personality", 0xFFFFFFFF)) != "")
    own("personality ADDR_NO_RANDOMIZE",
        in_child(lambda: name(sc("personality", 0x0040000))))
    own("personality READ_IMPLIES_EXEC",
        in_child(lambda: name(sc("personality", 0x0400000))))

    # Legacy and rare calls: ENOSYS, after which libc's modern forms work.
    efd = os.eventfd(0)
    os.close(efd)
    same("os.eventfd", "ok")
    own("eventfd", name(sc("eventfd", 0)) if sc("eventfd", 0) < 0 else "fd")
    own("sync_file_range", name(sc("sync_file_range", rp, 0, 0, 1)))
    own("landlock", name(sc("landlock_create_ruleset", None, 0, 1)) if
        sc("landlock_create_ruleset", None, 0, 1) < 0 else "abi")
    os.unlink(f)


main(sys.argv[1])
