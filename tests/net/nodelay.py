# TCP_NODELAY through the C library's setsockopt and getsockopt (under
# the sandbox, the preload's, which answers a sandbox-local connection's
# without a round trip, from its host socket's flag): a client's and an
# accepted connection's, values, lengths and bad pointers; a listener's
# inherited by its connections; set before the connect; read back by the
# supervisor (a raw call), by a forked child, by a process it was passed
# to; a descriptor number reused by another socket; SO_WIFI_STATUS, the
# flag that carries it, still the socket's own. Prints what happened; the
# test compares it with a native run. With the argument "forge"
# (supervised only) it forges notes and marks instead.
import ctypes
import errno
import mmap
import os
import socket
import struct
import subprocess
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
for f in (libc.setsockopt, libc.getsockopt):
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.setsockopt.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
SYS_SETSOCKOPT, SYS_GETSOCKOPT, SYS_CONNECT = 54, 55, 42
TCP, NODELAY = socket.IPPROTO_TCP, socket.TCP_NODELAY
SO_WIFI_STATUS = 41
NODELAY_MARK = 0x6E6F64656C61795F
PAGE = mmap.PAGESIZE


def err(r):
    e = ctypes.get_errno() if r < 0 else 0
    return r, errno.errorcode.get(e, e)


def setopt(fd, value, length=4, ptr=None):
    v = ctypes.c_int(value)
    ctypes.set_errno(0)
    r = libc.setsockopt(fd, TCP, NODELAY, ctypes.addressof(v) if ptr is None else ptr, length)
    return err(r)


def getopt(fd, room=4, vptr=None, lptr=None):
    v = ctypes.c_int(0x55555555)
    n = ctypes.c_int(room)
    ctypes.set_errno(0)
    r = libc.getsockopt(
        fd, TCP, NODELAY, ctypes.addressof(v) if vptr is None else vptr, ctypes.addressof(n) if lptr is None else lptr
    )
    return err(r) + (hex(v.value), n.value)


def raw_get(fd):
    """getsockopt made without the C library: the supervisor answers it."""
    v, n = ctypes.c_int(0), ctypes.c_int(4)
    r = libc.syscall(SYS_GETSOCKOPT, fd, TCP, NODELAY, ctypes.byref(v), ctypes.byref(n))
    return v.value if r == 0 else err(r)


def raw_set(fd, value):
    v = ctypes.c_int(value)
    return libc.syscall(SYS_SETSOCKOPT, fd, TCP, NODELAY, ctypes.byref(v), 4)


def pages(n, prot=mmap.PROT_READ | mmap.PROT_WRITE):
    return libc.mmap(None, n * PAGE, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)


def pair(family=socket.AF_INET, host="127.0.0.1", srv_nodelay=None):
    srv = socket.socket(family, socket.SOCK_STREAM)
    if srv_nodelay is not None:
        srv.setsockopt(TCP, NODELAY, srv_nodelay)
    srv.bind((host, 0))
    srv.listen(8)
    cli = socket.create_connection((host, srv.getsockname()[1]))
    conn, _ = srv.accept()
    return srv, cli, conn


def values():
    for family, host in [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]:
        srv, cli, conn = pair(family, host)
        for name, s in [("client", cli), ("accepted", conn)]:
            fd = s.fileno()
            seen = [getopt(fd)[2]]
            for v in (1, 0, 7, -1, 0):
                seen.append((setopt(fd, v), getopt(fd)[2]))
            print(family.name, name, seen)
        for s in (srv, cli, conn):
            s.close()


def lengths_and_pointers():
    srv, cli, conn = pair()
    fd = cli.fileno()
    setopt(fd, 1)
    for room in (0, 1, 2, 3, 4, 8, -1):
        print("get room", room, getopt(fd, room))
    print("get len NULL", getopt(fd, lptr=0)[:2])
    print("get value NULL", getopt(fd, vptr=0)[:2])
    print("set short", setopt(fd, 0, length=2), getopt(fd)[2])
    print("set len -1", setopt(fd, 0, length=-1), getopt(fd)[2])
    print("set NULL", setopt(fd, 0, ptr=0), getopt(fd)[2])
    ro = pages(1)
    ctypes.memmove(ro, struct.pack("=i", 0), 4)
    libc.mprotect(ro, PAGE, mmap.PROT_READ)
    print("set read-only", setopt(fd, 9, ptr=ro), getopt(fd)[2])
    print("set long", setopt(fd, 1, length=16), getopt(fd)[2])
    for s in (srv, cli, conn):
        s.close()


def inherited_and_early():
    srv, cli, conn = pair(srv_nodelay=1)
    print("listener's, accepted", getopt(conn.fileno())[2], raw_get(conn.fileno()), "client", getopt(cli.fileno())[2])
    early = socket.socket()
    early.setsockopt(TCP, NODELAY, 1)
    early.connect(srv.getsockname())
    conn2, _ = srv.accept()
    print("set before connect", getopt(early.fileno())[2], raw_get(early.fileno()))
    nb = socket.socket()
    nb.setblocking(False)
    print("non-blocking connect", nb.connect_ex(srv.getsockname()) in (0, errno.EINPROGRESS))
    conn3, _ = srv.accept()
    print("in progress", setopt(nb.fileno(), 1), getopt(nb.fileno())[2], raw_get(nb.fileno()))
    for s in (srv, cli, conn, early, conn2, nb, conn3):
        s.close()


def shared():
    """The value is the socket's, whoever holds it."""
    srv, cli, conn = pair()
    fd = cli.fileno()
    setopt(fd, 1)
    print("raw get", raw_get(fd))
    print("raw set 0", raw_set(fd, 0), getopt(fd)[2])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(r, 1)
        os._exit(getopt(fd)[2] == "0x1")
    setopt(fd, 1)
    os.write(w, b"x")
    print("forked child sees the parent's", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    pid = os.fork()
    if pid == 0:
        setopt(fd, 0)
        os._exit(0)
    os.waitpid(pid, 0)
    print("parent sees the child's", getopt(fd)[2])
    setopt(fd, 1)
    child = (
        "import ctypes, socket, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "a = socket.socket(fileno=int(sys.argv[1]))\n"
        "got = a.recvmsg(1, socket.CMSG_SPACE(4))\n"
        "fd = struct.unpack('=i', got[1][0][2][:4])[0] if got[1] else -1\n"
        "v, n = ctypes.c_int(0), ctypes.c_int(4)\n"
        "r = libc.syscall(55, fd, 6, 1, ctypes.byref(v), ctypes.byref(n))\n"
        "s = socket.socket(fileno=fd)\n"
        "print('passed raw', r, v.value, 'lib', s.getsockopt(6, 1), flush=True)\n"
        "s.setsockopt(6, 1, 0)\n"
        "a.send(b'k')\n"
    )
    a, b = socket.socketpair()
    sys.stdout.flush()
    p = subprocess.Popen([sys.executable, "-c", "import struct\n" + child, str(b.fileno())], pass_fds=[b.fileno()])
    socket.send_fds(a, [b"x"], [fd])
    a.recv(1)
    p.wait()
    print("after the other process set 0", getopt(fd)[2])
    for s in (srv, cli, conn, a, b):
        s.close()


def reuse():
    """A noted number closed and taken by another socket."""
    srv, cli, conn = pair()
    fd = cli.fileno()
    setopt(fd, 1)
    u1, u2 = socket.socketpair()
    os.dup2(u1.fileno(), fd)
    print("unix in its place", setopt(fd, 1), getopt(fd)[:2])
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    os.dup2(udp.fileno(), fd)
    print("udp in its place", setopt(fd, 1), getopt(fd)[:2])
    lst = socket.create_server(("127.0.0.1", 0))
    os.dup2(lst.fileno(), fd)
    print("listener in its place", getopt(fd)[2], setopt(fd, 1), getopt(fd)[2])
    os.close(fd)
    for s in (srv, conn, u1, u2, udp, lst):
        s.close()


def carrier():
    """SO_WIFI_STATUS stays the socket's own."""
    srv, cli, conn = pair()
    fd = cli.fileno()
    setopt(fd, 1)
    w = lambda: cli.getsockopt(socket.SOL_SOCKET, SO_WIFI_STATUS)
    print("wifi after nodelay", w())
    cli.setsockopt(socket.SOL_SOCKET, SO_WIFI_STATUS, 1)
    setopt(fd, 0)
    print("wifi set, nodelay cleared", w(), getopt(fd)[2])
    cli.setsockopt(socket.SOL_SOCKET, SO_WIFI_STATUS, 0)
    setopt(fd, 1)
    print("wifi cleared, nodelay set", w(), getopt(fd)[2])
    for s in (srv, cli, conn):
        s.close()


def marked(nr, fd, value):
    v, n = ctypes.c_int(value), ctypes.c_int(4)
    arg = ctypes.byref(v) if nr == SYS_SETSOCKOPT else ctypes.byref(n)
    r = libc.syscall(nr, fd, socket.SOL_SOCKET, SO_WIFI_STATUS, ctypes.byref(v), arg if nr == SYS_GETSOCKOPT else 4,
                     ctypes.c_uint64(NODELAY_MARK))
    return r, v.value


def forge():
    """Forged marks and notes change only what the guest tells itself."""
    srv = socket.create_server(("127.0.0.1", 0))
    print("forge marked set on a listener", marked(SYS_SETSOCKOPT, srv.fileno(), 1)[0])
    print("forge listener's own", srv.getsockopt(TCP, NODELAY), srv.getsockopt(socket.SOL_SOCKET, SO_WIFI_STATUS))
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    print("forge accepted", conn.getsockopt(TCP, NODELAY))
    u1, u2 = socket.socketpair()
    print("forge marked on its own unix socket", marked(SYS_SETSOCKOPT, u1.fileno(), 1)[0], marked(SYS_GETSOCKOPT, u1.fileno(), 0))
    marked(SYS_SETSOCKOPT, cli.fileno(), 1)
    print("forge marked on a connection is its nodelay", raw_get(cli.fileno()), cli.getsockopt(TCP, NODELAY))
    ok = []
    for blocking in (True, False):
        c = socket.socket()
        c.setblocking(blocking)
        addr = struct.pack("=H", socket.AF_INET) + struct.pack("!H4s8x", srv.getsockname()[1], socket.inet_aton("127.0.0.1"))
        buf = ctypes.create_string_buffer(addr)
        r = libc.syscall(SYS_CONNECT, c.fileno(), buf, 16, 0, ctypes.c_uint64(NODELAY_MARK), 0)
        c.setblocking(True)
        a, _ = srv.accept()
        a.send(b"y")
        ok.append((r & ~(1 << 62) == os.fstat(c.fileno()).st_ino, r >> 62, c.recv(1)))
        c.close()
        a.close()
    print("forge marked connects learn their own inode", ok)
    # A note claimed for the guest's own unix socket: the preload believes it.
    slot = note_slot(cli.fileno())
    print("forge slot found", slot is not None)
    if slot is not None:
        ctypes.memmove(slot + 4, struct.pack("=iQ", cli.fileno(), os.fstat(u1.fileno()).st_ino), 12)
        os.dup2(u1.fileno(), cli.fileno())
        print("forge believed", setopt(cli.fileno(), 1), getopt(cli.fileno())[:3])
        print("forge kernel", err(raw_set(cli.fileno(), 1)))
    for s in (srv, cli, conn, u1, u2):
        s.close()


if sys.argv[1:] == ["forge"]:
    forge()
else:
    values()
    lengths_and_pointers()
    inherited_and_early()
    shared()
    reuse()
    carrier()
print("done")
