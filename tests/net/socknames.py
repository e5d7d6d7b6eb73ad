# getsockname of accepted TCP connections through the C library's
# getsockname (under the sandbox, the preload's, which answers from the
# note a marked accept leaves): IPv4 and IPv6 listeners, named and
# wildcard; lengths short, zero and negative; bad, unaligned and
# read-only pointers; a descriptor number reused by another socket; a TCP
# disconnect (connect to AF_UNSPEC); threads accepting and asking at
# once; raw accepts carrying the note's mark with bad note pointers.
# Prints what happened (ports as "P" where they are the listener's);
# the test compares it with a native run. With the argument "forge"
# (supervised only) it scribbles on the preload's note table instead.
import ctypes
import errno
import mmap
import os
import socket
import struct
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)
libc.getsockname.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.syscall.restype = ctypes.c_long
MARK = 0x6E616D655EEDC0DE
PAGE = mmap.PAGESIZE


libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]


def pages(n):
    """The address of `n` fresh writable pages."""
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    return libc.mmap(None, n * PAGE, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)


def masked(raw, port):
    """The name's bytes, its port bytes as P when they are `port`'s."""
    b = bytearray(raw)
    if len(b) >= 4 and b[2:4] == struct.pack("!H", port):
        b[2:4] = b"PP"
    return bytes(b)


def pair(family, listen_host, dial_host):
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.bind((listen_host, 0))
    srv.listen(64)
    port = srv.getsockname()[1]
    cli = socket.create_connection((dial_host, port))
    conn, _ = srv.accept()
    return srv, cli, conn, port


def call(fd, addr, lenp):
    ctypes.set_errno(0)
    r = libc.getsockname(fd, addr, lenp)
    e = ctypes.get_errno() if r < 0 else 0
    return r, errno.errorcode.get(e, e)


def families():
    for family, listen, dial in [
        (socket.AF_INET, "127.0.0.1", "127.0.0.1"),
        (socket.AF_INET, "0.0.0.0", "127.0.0.1"),
        (socket.AF_INET6, "::1", "::1"),
        (socket.AF_INET6, "::", "127.0.0.1"),
        (socket.AF_INET6, "::", "::1"),
    ]:
        srv, cli, conn, port = pair(family, listen, dial)
        name = conn.getsockname()
        print("name", listen, dial, name[0], name[1] == port, name[2:])
        for room in [0, 1, 4, 16, 28, 128, -1]:
            buf = ctypes.create_string_buffer(b"\xee" * 128)
            n = ctypes.c_int(room)
            r = call(conn.fileno(), buf, ctypes.byref(n))
            print(" room", room, r, n.value, masked(buf.raw[: max(room, 0)], port)[:32])
        for s in (srv, cli, conn):
            s.close()


def bad_pointers():
    srv, cli, conn, port = pair(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    fd = conn.fileno()
    buf = ctypes.create_string_buffer(128)
    # Two pages: the second inaccessible, the first read-only later.
    base = pages(2)
    ctypes.memmove(base, struct.pack("=i", 16), 4)
    libc.mprotect(base + PAGE, PAGE, 0)
    lenbuf = ctypes.create_string_buffer(8)
    ctypes.memmove(ctypes.addressof(lenbuf) + 1, struct.pack("=i", 16), 4)
    n = ctypes.c_int(16)
    cases = [
        ("len NULL", buf, None),
        ("len 1", buf, 1),
        ("len unaligned", buf, ctypes.addressof(lenbuf) + 1),
        ("len unmapped", buf, base + PAGE),
        ("addr NULL", None, ctypes.byref(n)),
        ("addr 1", 1, ctypes.byref(n)),
        ("addr unmapped", base + PAGE, ctypes.byref(n)),
        ("addr straddles", base + PAGE - 8, ctypes.byref(n)),
    ]
    for what, addr, lenp in cases:
        n.value = 16
        r = call(fd, addr, lenp)
        print("bad", what, r, n.value)
    print("unaligned len after", struct.unpack("=i", lenbuf.raw[1:5])[0])
    # A read-only length: readable, not writable.
    libc.mprotect(base, PAGE, mmap.PROT_READ)
    print("bad len read-only", call(fd, buf, base), struct.unpack("=i", ctypes.string_at(base, 4))[0])
    zero = ctypes.c_int(0)
    print("bad addr with room 0", call(fd, 1, ctypes.byref(zero)), zero.value)
    for s in (srv, cli, conn):
        s.close()


def reuse():
    srv, cli, conn, port = pair(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    fd = conn.fileno()
    print("reuse before", conn.getsockname()[1] == port)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    os.dup2(udp.fileno(), fd)
    buf = ctypes.create_string_buffer(128)
    n = ctypes.c_int(128)
    r = call(fd, buf, ctypes.byref(n))
    got = socket.socket(fileno=os.dup(fd)).getsockname()
    print("reuse udp", r, n.value, got == udp.getsockname(), got[1] == port)
    a, b = socket.socketpair()
    os.dup2(a.fileno(), fd)
    n.value = 128
    print("reuse unix", call(fd, buf, ctypes.byref(n)), n.value, buf.raw[:2])
    os.close(fd)
    conn.detach()
    # The number again, from an accept of another listener.
    srv2, cli2, conn2, port2 = pair(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    print("reuse accept", conn2.getsockname()[1] == port2)
    for s in (srv, cli, udp, a, b, srv2, cli2, conn2):
        s.close()


def disconnect():
    for listen in ["127.0.0.1", "0.0.0.0"]:
        srv, cli, conn, port = pair(socket.AF_INET, listen, "127.0.0.1")
        before = conn.getsockname()
        unspec = struct.pack("=H", socket.AF_UNSPEC) + bytes(14)
        r = libc.connect(conn.fileno(), unspec, len(unspec))
        after = conn.getsockname()
        print("disconnect", listen, before[0], r, after[0], after[1] == port)
        for s in (srv, cli, conn):
            s.close()


def threads():
    bad = []

    def worker(i):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        want = srv.getsockname()
        for _ in range(40):
            cli = socket.create_connection(want)
            conn, _ = srv.accept()
            if conn.getsockname() != want or cli.getpeername() != want:
                bad.append((i, conn.getsockname(), want))
            cli.close()
            conn.close()
        srv.close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("threads wrong", bad)


def marked_raw_accepts():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    ro = pages(1)
    libc.mprotect(ro, PAGE, mmap.PROT_READ)
    for what, note in [
        ("NULL", 0),
        ("1", 1),
        ("kernel", 0xFFFFFFFFFF600000),
        ("end of space", 0xFFFFFFFFFFFFFFF0),
        ("read-only", ro),
        ("straddling", ro - 8),
    ]:
        cli = socket.create_connection(("127.0.0.1", port))
        fd = libc.syscall(288, srv.fileno(), 0, 0, 0, ctypes.c_uint64(MARK), ctypes.c_uint64(note))
        conn = socket.socket(fileno=fd)
        conn.sendall(b"x")
        print("marked", what, fd > 0, conn.getsockname()[1] == port, cli.recv(1))
        conn.close()
        cli.close()
    srv.close()


def forge():
    """Scribbles on the preload's note of a connection: its length, then its
    name. A length no note has is ignored; a name is believed, by this
    process only."""
    srv, cli, conn, port = pair(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    slot = note_slot(conn.fileno())
    print("forge slot found", slot is not None)
    if slot is None:
        return
    ctypes.memmove(slot + 16, struct.pack("=Q", 200), 8)
    print("forge long", conn.getsockname()[1] == port)
    ctypes.memmove(slot + 16, struct.pack("=Q", 16), 8)
    fake = struct.pack("=H", socket.AF_INET) + struct.pack("!H4s8x", 9, socket.inet_aton("192.0.2.9"))
    ctypes.memmove(slot + 24, fake, 16)
    print("forge name", conn.getsockname())
    print("forge peer", cli.getsockname() == conn.getpeername())
    conn.close()
    srv2, cli2, conn2, port2 = pair(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    print("forge next", conn2.getsockname()[1] == port2)
    for s in (srv, cli, srv2, cli2, conn2):
        s.close()


if sys.argv[1:] == ["forge"]:
    forge()
else:
    families()
    bad_pointers()
    reuse()
    disconnect()
    threads()
    marked_raw_accepts()
print("done")
