# What the net tests' guest scripts print of a socket, shared by
# crossing.py and egress_crossing.py (each test runs this text, then its
# script, as one `python3 -c`): ports replaced by their roles (ROLES,
# filled by the script), addresses, errno names, raw options, so that a
# native run and a sandboxed one compare line by line.
import ctypes, errno, socket, struct

libc = ctypes.CDLL(None, use_errno=True)
ROLES = {}


def p(*a):
    print(*a, flush=True)


def err(e):
    return errno.errorcode.get(e.errno, str(e)) if e.errno else "timed out"


def role(port):
    return ROLES.get(port, "port0" if port == 0 else "eph" if 32768 <= port <= 60999 else "?%d" % port)


def addr(a):
    if isinstance(a, tuple):
        return "%s:%s" % (a[0], role(a[1]))
    return "unix:%r" % (a,)


def call(f):
    try:
        return f()
    except OSError as e:
        return err(e)


def raw_opt(fd, level, name, size):
    buf = ctypes.create_string_buffer(size)
    ln = ctypes.c_uint32(size)
    if libc.getsockopt(fd, level, name, buf, ctypes.byref(ln)) < 0:
        return errno.errorcode[ctypes.get_errno()]
    return buf.raw[:ln.value]


def sockaddr(raw):
    fam = struct.unpack_from("H", raw)[0]
    if fam == socket.AF_INET:
        return "%s:%s" % (socket.inet_ntop(socket.AF_INET, raw[4:8]), role(struct.unpack_from("!H", raw, 2)[0]))
    if fam == socket.AF_INET6 and len(raw) >= 24:
        return "%s:%s" % (socket.inet_ntop(socket.AF_INET6, raw[8:24]), role(struct.unpack_from("!H", raw, 2)[0]))
    return "family %d %r" % (fam, raw[2:])


