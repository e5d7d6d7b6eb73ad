# What a guest sees of the sockets that egress (`--allow-net`),
# `--publish` and the DNS stub give it, printed one fact a line with ports
# replaced by their roles, so a native run (against the same 127.0.0.1
# servers, in the same network namespace) and a sandboxed one compare line
# by line: names, SO_PEERNAME, peer credentials and groups, SO_PEERSEC,
# SO_PASSCRED, /proc/self/fd and fdinfo, the served /proc/net lines of the
# socket, receives with names and control messages, errors from refused
# destinations, and /proc/net/netlink. No line may carry a host name (a
# unix family, an abstract name), a host pid, or the supervisor's sockets.
# argv: CASE, then the case's ports; roles as NAME=PORT after "--".
# Runs after faces.py (p, err, role, addr, call, raw_opt, sockaddr, ROLES).
import ctypes, errno, os, socket, struct, sys


def face(tag, s):
    """Every answer about socket s that could name its host side."""
    fd, sol = s.fileno(), socket.SOL_SOCKET
    ids = [raw_opt(fd, sol, o, 4) for o in (socket.SO_DOMAIN, socket.SO_TYPE, socket.SO_PROTOCOL)]
    p(tag, "ids", [struct.unpack("i", v)[0] if isinstance(v, bytes) else v for v in ids])
    p(tag, "name", addr(call(s.getsockname)))
    peer = call(s.getpeername)
    p(tag, "peer", addr(peer) if not isinstance(peer, str) else peer)
    pn = raw_opt(fd, sol, 28, 28 if s.family == socket.AF_INET6 else 16)  # SO_PEERNAME
    p(tag, "peername", sockaddr(pn) if isinstance(pn, bytes) else pn)
    cred = raw_opt(fd, sol, socket.SO_PEERCRED, 12)
    p(tag, "peercred", struct.unpack("iii", cred) if isinstance(cred, bytes) else cred)
    groups = raw_opt(fd, sol, 59, 64)  # SO_PEERGROUPS
    p(tag, "peergroups", "%d bytes" % len(groups) if isinstance(groups, bytes) else groups)
    p(tag, "peersec", raw_opt(fd, sol, 31, 64))  # SO_PEERSEC
    ino = os.fstat(fd).st_ino
    p(tag, "link", os.readlink("/proc/self/fd/%d" % fd) == "socket:[%d]" % ino)
    info = open("/proc/self/fdinfo/%d" % fd).read().split("\n")
    p(tag, "fdinfo", [x.split(":")[0] for x in info if x])
    for f in ("tcp", "tcp6", "udp", "udp6", "unix"):
        for ln in open("/proc/self/net/" + f).read().split("\n")[1:]:
            if (" %d " % ino) in ln + " ":
                p(tag, "procnet", f, normalize(f, ln))


def normalize(f, ln):
    cols = ln.split()
    if f == "unix":
        return cols[6:]

    def hp(x):
        h, port = x.split(":")
        return h + ":" + role(int(port, 16))
    return [hp(cols[1]), hp(cols[2]), cols[3]]


def cmsgs(anc):
    return [(lvl, t, data.hex()) for lvl, t, data in anc]


def ask_cmsgs(s):
    if s.family == socket.AF_INET:
        for o in (8, 12, 13):  # IP_PKTINFO, IP_RECVTTL, IP_RECVTOS
            s.setsockopt(socket.IPPROTO_IP, o, 1)
    else:
        for o in (socket.IPV6_RECVPKTINFO, socket.IPV6_RECVHOPLIMIT, socket.IPV6_RECVTCLASS):
            s.setsockopt(socket.IPPROTO_IPV6, o, 1)


def tcp(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.create_connection((host, port))
    face("tcp", s)
    s.send(b"hi")
    d, anc, fl, src = s.recvmsg(10, 256)
    p("tcp recvmsg", d, anc, src)
    p("tcp passcred", call(lambda: s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)))
    s.close()
    n = socket.socket(fam)
    n.setblocking(False)
    p("tcp nonblocking", call(lambda: n.connect((host, port))))
    import select
    select.select([], [n], [], 30)
    p("tcp nonblocking SO_ERROR", n.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    face("tcp nonblocking", n)
    n.close()


def udp(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.settimeout(30)
    ask_cmsgs(u)
    u.sendto(b"x", (host, port))
    d, anc, fl, src = u.recvmsg(100, 512)
    p("udp recvmsg", d, addr(src), cmsgs(anc))
    face("udp", u)
    c = socket.socket(fam, socket.SOCK_DGRAM)
    c.settimeout(30)
    ask_cmsgs(c)
    c.connect((host, port))
    c.send(b"y")
    d, anc, fl, src = c.recvmsg(100, 512)
    p("udp connected recvmsg", d, addr(src), cmsgs(anc))
    c.send(b"z")
    d, src = c.recvfrom(100)
    p("udp connected recvfrom", d, addr(src))
    p("udp connected sendto peer", call(lambda: c.sendto(b"w", (host, port))), call(lambda: c.recv(100)))
    face("udp connected", c)


def refused(host, port):
    """An allowed destination where nothing listens."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    t = socket.socket(fam)
    p("refused tcp", call(lambda: t.connect((host, port))))
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.settimeout(0.5)  # a hang guard: nothing answers either way
    for i in range(2):
        p("refused sendto", i, call(lambda: u.sendto(b"x", (host, port))))
        p("refused recvfrom", i, call(lambda: u.recvfrom(100)))
    c = socket.socket(fam, socket.SOCK_DGRAM)
    c.settimeout(1)  # natively the refusal is there at once
    c.connect((host, port))
    p("refused connected send", call(lambda: c.send(b"y")))
    p("refused connected recv", call(lambda: c.recv(100)))


def publish(gp, gu):
    l = socket.socket()
    l.bind(("127.0.0.1", gp))
    l.listen()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", gu))
    ask_cmsgs(u)
    a, peer = l.accept()
    p("publish accept", addr(peer), a.recv(10))
    face("publish accepted", a)
    a.send(b"done")
    a.close()
    d, anc, fl, src = u.recvmsg(100, 512)
    p("publish udp recvmsg", d, addr(src), cmsgs(anc))
    face("publish udp", u)
    u.sendto(b"done", src)


QUERY = bytes.fromhex("12340100000100000000000007") + b"allowed\x04test\x00\x00\x01\x00\x01"


def dns():
    stub = ("127.0.0.53", 53)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(30)
    ask_cmsgs(u)
    u.sendto(QUERY, stub)
    d, anc, fl, src = u.recvmsg(512, 512)
    p("dns udp answer", d[:2], d[2] >> 7, addr(src), cmsgs(anc))
    face("dns udp", u)
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.settimeout(30)
    c.connect(stub)
    c.send(QUERY)
    d, src = c.recvfrom(512)
    p("dns connected answer", d[:2], addr(src))
    face("dns connected", c)
    t = socket.create_connection(stub)
    t.send(len(QUERY).to_bytes(2, "big") + QUERY)
    d = t.recv(4)
    p("dns tcp answer", d[2:4])
    face("dns tcp", t)


def netlink():
    """/proc/net/netlink after a read of /proc/net/tcp (which the
    sandbox serves from a sock_diag dump): the sockets of a process
    (port id not 0) are the guest's own only."""
    open("/proc/self/net/tcp").read()
    lines = open("/proc/self/net/netlink").read().split("\n")[1:]
    bound = [ln.split()[1:3] for ln in lines if ln and ln.split()[2] != "0"]
    p("netlink bound", bound)


CASES = dict(tcp=lambda a: tcp(a[0], int(a[1])), udp=lambda a: udp(a[0], int(a[1])),
             refused=lambda a: refused(a[0], int(a[1])), publish=lambda a: publish(int(a[0]), int(a[1])),
             dns=lambda a: dns(), netlink=lambda a: netlink())

args = sys.argv[2:]
if "--" in args:
    for kv in args[args.index("--") + 1:]:
        k, v = kv.split("=")
        ROLES[int(v)] = k
    args = args[:args.index("--")]
CASES[sys.argv[1]](args)
p("done")
