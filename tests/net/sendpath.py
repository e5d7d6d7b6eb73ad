# Sends on TCP and UDP sockets that take a msghdr (sendmsg with and
# without MSG_NOSIGNAL, sendmmsg), with names, with SCM_RIGHTS and
# SCM_CREDENTIALS (which Linux's TCP and UDP accept and ignore), and on
# the guest's own unix sockets (whose SCM_RIGHTS must still carry a
# descriptor); then recvmmsg's error after its first message, which the
# socket keeps for its next call. Prints what happened; the test
# compares it with a native run. Servers are on 127.0.0.1 only.
import array
import ctypes
import errno
import os
import socket
import struct

libc = ctypes.CDLL(None, use_errno=True)


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.POINTER(Iovec)),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", Msghdr), ("len", ctypes.c_uint32)]


def sockaddr_in(addr):
    ip, port = addr
    return struct.pack("=H", socket.AF_INET) + struct.pack("!H4s8x", port, socket.inet_aton(ip))


def err(e):
    return errno.errorcode.get(e, str(e))


keep = []


def mmsgs(payloads, names=None, control=None, bad_iov=()):
    """An mmsghdr array for payloads (and names: raw sockaddr bytes)."""
    vec = (Mmsghdr * len(payloads))()
    for i, data in enumerate(payloads):
        buf = ctypes.create_string_buffer(data, len(data))
        iov = Iovec(ctypes.cast(buf, ctypes.c_void_p) if i not in bad_iov else 8, len(data))
        iovs = (Iovec * 1)(iov)
        keep.extend([buf, iovs])
        h = vec[i].hdr
        h.iov = iovs
        h.iovlen = 1
        if names and names[i] is not None:
            nb = ctypes.create_string_buffer(names[i], len(names[i]))
            keep.append(nb)
            h.name = ctypes.cast(nb, ctypes.c_void_p)
            h.namelen = len(names[i])
        if control:
            cb = ctypes.create_string_buffer(control, len(control))
            keep.append(cb)
            h.control = ctypes.cast(cb, ctypes.c_void_p)
            h.controllen = len(control)
    return vec


def sendmmsg(sock, vec, flags=0):
    n = libc.sendmmsg(sock.fileno(), vec, len(vec), flags)
    if n < 0:
        return err(ctypes.get_errno())
    return (n, [vec[i].len for i in range(n)])


def recvmmsg(sock, sizes, bad=()):
    vec = (Mmsghdr * len(sizes))()
    bufs = []
    for i, size in enumerate(sizes):
        buf = ctypes.create_string_buffer(size)
        bufs.append(buf)
        iovs = (Iovec * 1)(Iovec(8 if i in bad else ctypes.cast(buf, ctypes.c_void_p), size))
        keep.append(iovs)
        vec[i].hdr.iov = iovs
        vec[i].hdr.iovlen = 1
    n = libc.recvmmsg(sock.fileno(), vec, len(vec), socket.MSG_DONTWAIT, None)
    if n < 0:
        return err(ctypes.get_errno())
    return (n, [bufs[i].raw[: vec[i].len] for i in range(n)])


def cmsg(level, kind, data):
    head = struct.pack("Qii", 16 + len(data), level, kind)
    return head + data + b"\0" * (-len(data) % 8)


def drain(sock):
    out = []
    while True:
        try:
            data, anc, flags, _ = sock.recvmsg(100, 256, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return out
        out.append((data, [(l, t) for l, t, _ in anc], flags))


def try_(label, f):
    try:
        print(label, f())
    except OSError as e:
        print(label, err(e.errno))


rd, wr = os.pipe()
rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [rd]))]
creds = [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("iII", os.getpid(), os.getuid(), os.getgid()))]
unknown = [(socket.SOL_SOCKET, 99, struct.pack("i", 0))]

# ---- UDP sendmsg with a name, with and without MSG_NOSIGNAL. ----
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("127.0.0.1", 0))
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for flags in (0, socket.MSG_NOSIGNAL, socket.MSG_NOSIGNAL | socket.MSG_DONTWAIT):
    try_("udp sendmsg name flags=%#x" % flags, lambda: tx.sendmsg([b"d%d" % flags], [], flags, rx.getsockname()))
for label, anc in (("rights", rights), ("creds", creds), ("unknown", unknown)):
    try_("udp sendmsg name " + label, lambda: tx.sendmsg([b"c"], anc, socket.MSG_NOSIGNAL, rx.getsockname()))
print("udp got", [(d, a, f) for d, a, f in drain(rx)])

# ---- connected UDP: control messages without a name. ----
tx.connect(rx.getsockname())
for label, anc in (("rights", rights), ("creds", creds), ("unknown", unknown), ("none", [])):
    try_("udp connected sendmsg " + label, lambda: tx.sendmsg([b"k" + label.encode()], anc, socket.MSG_NOSIGNAL))
print("udp connected got", drain(rx))

# ---- sendmmsg on UDP: names, connected, errors after the first. ----
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
name = sockaddr_in(rx.getsockname())
print("sendmmsg udp names", sendmmsg(u2, mmsgs([b"m1", b"m22", b"m333"], [name] * 3), socket.MSG_NOSIGNAL))
print("sendmmsg udp got", drain(rx))
bad_name = struct.pack("H", socket.AF_UNIX) + b"\0nowhere"
print("sendmmsg udp bad first", sendmmsg(u2, mmsgs([b"x", b"y"], [bad_name, name])))
print("sendmmsg udp bad second", sendmmsg(u2, mmsgs([b"x", b"y"], [name, bad_name])))
print("sendmmsg udp fault second", sendmmsg(u2, mmsgs([b"x", b"y"], [name, name], bad_iov=(1,))))
print("sendmmsg udp no name", sendmmsg(u2, mmsgs([b"x"])))
print("sendmmsg udp got", drain(rx))
print("sendmmsg udp rights", sendmmsg(tx, mmsgs([b"r1", b"r2"], control=cmsg(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", rd)))))
print("sendmmsg udp connected", sendmmsg(tx, mmsgs([b"c1", b"c22"])))
print("sendmmsg udp connected got", drain(rx))

# ---- TCP: SCM_RIGHTS and SCM_CREDENTIALS go through, ignored. ----
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
cli = socket.create_connection(srv.getsockname())
acc, _ = srv.accept()
for label, anc in (("rights", rights), ("creds", creds), ("unknown", unknown)):
    for flags in (0, socket.MSG_NOSIGNAL):
        try_("tcp sendmsg %s flags=%#x" % (label, flags), lambda: cli.sendmsg([b"t"], anc, flags))
try_("tcp sendmsg rights name", lambda: cli.sendmsg([b"n"], rights, socket.MSG_NOSIGNAL, ("127.0.0.1", 9)))
print("tcp sendmmsg", sendmmsg(cli, mmsgs([b"s1", b"s22"], control=cmsg(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", rd)))))
print("tcp sendmmsg nosignal", sendmmsg(cli, mmsgs([b"s333"]), socket.MSG_NOSIGNAL))
got = b""
while len(got) < 14:
    data, anc, flags, _ = acc.recvmsg(100, 256)
    got += data
    print("tcp got", data, [(l, t) for l, t, _ in anc])
print("tcp total", got)
lone = socket.socket()
try_("tcp unconnected sendmsg nosignal", lambda: lone.sendmsg([b"z"], [], socket.MSG_NOSIGNAL))
print("tcp unconnected sendmmsg", sendmmsg(lone, mmsgs([b"z"]), socket.MSG_NOSIGNAL))

# ---- the guest's own unix sockets: descriptors still travel. ----
a, b = socket.socketpair()
print("unix sendmsg nosignal", a.sendmsg([b"f"], rights, socket.MSG_NOSIGNAL))
data, anc, flags, _ = b.recvmsg(10, 64)
fds = [struct.unpack("i", d[:4])[0] for _, _, d in anc]
os.write(wr, b"through")
print("unix got", data, len(fds), os.read(fds[0], 7))
da, db = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
print("unix sendmmsg", sendmmsg(da, mmsgs([b"p", b"qq"]), socket.MSG_NOSIGNAL))
print("unix sendmmsg got", drain(db))

# ---- recvmmsg: an error after the first message is the next call's. ----
r2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r2.bind(("127.0.0.1", 0))
for d in (b"one", b"two", b"three"):
    u2.sendto(d, r2.getsockname())
print("recvmmsg fault second", recvmmsg(r2, [16, 16, 16], bad=(1,)))
print("so_error", r2.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
print("so_error again", r2.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
print("recvmmsg then", recvmmsg(r2, [16, 16]))
for d in (b"four", b"five", b"six", b"seven"):
    u2.sendto(d, r2.getsockname())
print("recvmmsg fault second", recvmmsg(r2, [16, 16], bad=(1,)))
try_("recvfrom after", lambda: r2.recvfrom(16)[0])
try_("recvfrom then", lambda: r2.recvfrom(16)[0])
print("recvmmsg fault first", recvmmsg(r2, [16], bad=(0,)))
print("so_error last", r2.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
print("recvmmsg empty", recvmmsg(r2, [16]))

# ---- SO_SNDBUF and SO_RCVBUF: a fresh socket's, then after sets. ----
for fam in (socket.AF_INET, socket.AF_INET6):
    for kind, ty in (("tcp", socket.SOCK_STREAM), ("udp", socket.SOCK_DGRAM)):
        s = socket.socket(fam, ty)
        got = [(s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))]
        for v in (1, 100000, 10**9, -1):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, v)
            got.append((s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, v)
            got.append((s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)))
        print("buffers", fam, kind, got)
        s.close()
