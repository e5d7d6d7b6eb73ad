# A connected UDP socket to a 127.0.0.1 port nobody has bound (argv[1]):
# loopback answers each datagram with a port unreachable, which the
# socket keeps as its error (ECONNREFUSED) and reports once, at its next
# receive, send or SO_ERROR. Under the supervisor the socket is an egress
# relay's end (`--allow-net 127.0.0.1:PORT`), whose host socket meets the
# refusal; tests/net/egress_refused.rs compares the lines with a native
# run. The refusal comes back asynchronously (under the relay, a thread's
# poll away): the send cases repeat until a send reports it.
import errno, socket, struct, sys, time

port = int(sys.argv[1])
dst = ("127.0.0.1", port)


def p(*a):
    print(*a, flush=True)


def call(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def rcvtimeo(s, secs):
    """A hang guard the serviced receive honours too (set after the
    connect: the relay's end replaces the socket that held it before)."""
    whole = int(secs)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                 struct.pack("ll", whole, int((secs - whole) * 1e6)))


def refused_at_send(s, send):
    """Datagrams until `send` fails: what it failed with."""
    for _ in range(500):
        # A plain send meets a refusal that came late (under the relay,
        # a thread's poll away) as the mark's ECONNRESET: taken, and on.
        call(lambda: s.send(b"d"))
        time.sleep(0.01)
        r = call(send)
        if r != "ok":
            return r
    return "never"


c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.connect(dst)
rcvtimeo(c, 10)
p("send", call(lambda: c.send(b"a")))
p("recvfrom", call(lambda: c.recvfrom(100)))
rcvtimeo(c, 0.3)
p("recvfrom again", call(lambda: c.recvfrom(100)))
rcvtimeo(c, 10)
p("send", call(lambda: c.send(b"b")))
p("recvmsg", call(lambda: c.recvmsg(100)))
p("send", call(lambda: c.send(b"c")))
for _ in range(1000):
    e = c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if e:
        break
    time.sleep(0.01)
p("so_error", errno.errorcode.get(e, e))
p("so_error again", c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
p("sendmsg", refused_at_send(c, lambda: c.sendmsg([b"e"])))
p("sendto peer", refused_at_send(c, lambda: c.sendto(b"e", dst)))

# An unconnected socket is told of no refusal (without IP_RECVERR).
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rcvtimeo(u, 0.3)
p("unconnected sendto", call(lambda: u.sendto(b"x", dst)))
p("unconnected recvfrom", call(lambda: u.recvfrom(100)))

# Last: a receive that passes the filter (recv, read) is the host AF_UNIX
# socket's own, which meets the relay's mark as ECONNRESET.
rcvtimeo(c, 0.3)
c.send(b"f")
time.sleep(0.1)
p("recv", call(lambda: c.recv(100)))
p("done")
