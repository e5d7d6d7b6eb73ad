# A connected UDP socket to a 127.0.0.1 port nobody has bound (argv[1]):
# Linux answers each datagram with a port unreachable, which the socket
# keeps as its error (ECONNREFUSED, `sk_err`): poll reports POLLERR, a
# waiting receive wakes, and the next receive or send fails with it once.
# tests/net/udp_refused.rs runs it natively and under the supervisor (the
# sandbox's loopback, and an egress relay to the host's) and compares the
# lines. Every wait has a guard (SO_RCVTIMEO, a poll timeout), so a run
# that never sees the refusal prints "EAGAIN" or "none", not a hang.
import ctypes, errno, select, socket, struct, sys

port = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)


def p(*a):
    print(*a, flush=True)


def call(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def polled(s, events, ms=10000):
    pl = select.poll()
    pl.register(s, events)
    got = pl.poll(ms)
    bits = got[0][1] if got else 0
    names = [("IN", select.POLLIN), ("OUT", select.POLLOUT),
             ("ERR", select.POLLERR), ("HUP", select.POLLHUP)]
    return "|".join(n for n, b in names if bits & b) or "none"


def recvmmsg(s):
    """One message's recvmmsg, not waiting: its count or errno."""
    buf = ctypes.create_string_buffer(64)
    iov = struct.pack("PQ", ctypes.addressof(buf), 64)
    iovb = ctypes.create_string_buffer(iov, len(iov))
    hdr = struct.pack("PIxxxxPQPQiI", 0, 0, ctypes.addressof(iovb), 1, 0, 0, 0, 0)
    vec = ctypes.create_string_buffer(hdr, 64)
    n = libc.recvmmsg(s.fileno(), vec, 1, socket.MSG_DONTWAIT, None)
    return str(n) if n >= 0 else errno.errorcode[ctypes.get_errno()]


c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
p("connect", call(lambda: c.connect(("127.0.0.1", port))))
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 10, 0))
p("send", call(lambda: c.send(b"a")))
# A plain receive that waits: the refusal wakes it.
p("recv", call(lambda: c.recv(100)))
p("recv again", call(lambda: c.recv(100, socket.MSG_DONTWAIT)))
p("poll again", polled(c, select.POLLIN, 0))
p("send", call(lambda: c.send(b"b")))
p("poll", polled(c, select.POLLIN))
p("poll in|out", polled(c, select.POLLIN | select.POLLOUT))
p("recvfrom", call(lambda: c.recvfrom(100)))
p("poll after", polled(c, select.POLLIN | select.POLLOUT, 0))
p("send", call(lambda: c.send(b"c")))
p("poll", polled(c, select.POLLIN))
p("send after", call(lambda: c.send(b"d")))
p("send", call(lambda: c.send(b"e")))
p("poll", polled(c, select.POLLIN))
p("so_error", errno.errorcode.get(c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))
p("so_error again", c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
p("send", call(lambda: c.send(b"f")))
p("poll", polled(c, select.POLLIN))
p("recvmmsg", recvmmsg(c))
p("recvmmsg again", recvmmsg(c))
p("done")
