"""Netstack cases TCP answers differently from AF_UNIX (issue 4), each
printing what it saw; run natively and sandboxed, the outputs must match.

    gaps.py listen     listen() on an unbound socket autobinds
    gaps.py empty      an empty send after the peer closed returns 0
    gaps.py backlog    non-blocking connect to a full backlog
    gaps.py procnet    /proc/net/{tcp,tcp6,udp,udp6,unix} list the sockets
    gaps.py udpconnect UDP connect to a port nobody has bound succeeds
"""
import errno
import os
import select
import socket
import sys
import time


def name(r):
    return errno.errorcode.get(r, r)


def listen():
    for fam, loop in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.listen()
        host, port = s.getsockname()[:2]
        print(fam.name, "autobound", host, 32768 <= port <= 60999)
        c = socket.create_connection((loop, port))
        conn, _ = s.accept()
        c.sendall(b"hi")
        print(fam.name, "data", conn.recv(2))
        for x in (c, conn, s):
            x.close()
    b = socket.socket()
    b.bind(("127.0.0.1", 0))
    port = b.getsockname()[1]
    b.listen()
    print("bound keeps its port", b.getsockname()[1] == port)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.listen()
    except OSError as e:
        print("udp listen", name(e.errno))


def empty():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    c = socket.create_connection(s.getsockname())
    conn, _ = s.accept()
    c.close()
    print("recv after close", conn.recv(10))
    print("empty send", conn.send(b""))
    conn.sendall(b"")
    print("sendall empty ok")
    u = socket.socket()
    u.bind(("127.0.0.1", 0))
    try:
        u.send(b"")
    except OSError as e:
        print("unconnected empty send", name(e.errno) in ("EPIPE", "ENOTCONN"))


def connect_to_full(label):
    """A listener whose backlog of 0 one connection fills, and a
    non-blocking connect to it, its result printed after `label`:
    (listener, filler, connecting socket)."""
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(0)
    filler = socket.create_connection(l.getsockname())
    c = socket.socket()
    c.setblocking(False)
    print(label, name(c.connect_ex(l.getsockname())))
    return l, filler, c


def backlog():
    l, filler, c = connect_to_full("connect")
    addr = l.getsockname()
    p = select.poll()
    p.register(c, select.POLLIN | select.POLLOUT)
    print("poll", p.poll(0))
    print("so_error pending", c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    print("again", name(c.connect_ex(addr)))
    first, _ = l.accept()
    print("done events", [ev for _, ev in p.poll(10000)])
    print("so_error", c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    print("connect after", name(c.connect_ex(addr)))
    print("name", c.getsockname()[0], c.getpeername() == addr)
    c.setblocking(True)
    c.sendall(b"ping")
    second, peer = l.accept()
    print("accepted", second.recv(4), peer == c.getsockname())
    second.sendall(b"pong")
    print("reply", c.recv(4))
    # A full backlog whose listener closes: refused.
    l2, f2, d = connect_to_full("connect2")
    l2.close()
    f2.close()
    p2 = select.poll()
    p2.register(d, select.POLLOUT)
    ev = p2.poll(10000)
    print("closed listener polls", bool(ev))
    print("so_error2", name(d.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))
    # A connect closed before the listener makes room never arrives.
    l3, f3, e = connect_to_full("connect3")
    e.close()
    time.sleep(0.3)
    got, _ = l3.accept()
    print("first accepted", got.getpeername() == f3.getsockname())
    time.sleep(0.5)
    l3.setblocking(False)
    try:
        l3.accept()
        print("abandoned connect accepted")
    except BlockingIOError:
        print("abandoned connect never arrives")


def udpconnect():
    for fam, loop in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        p = socket.socket(fam, socket.SOCK_DGRAM)
        p.bind((loop, 0))
        port = p.getsockname()[1]
        p.close()
        s = socket.socket(fam, socket.SOCK_DGRAM)
        print(fam.name, "connect", s.connect_ex((loop, port)))
        host, lport = s.getsockname()[:2]
        print(fam.name, "autobound", host, 32768 <= lport <= 60999)
        print(fam.name, "peer", s.getpeername()[:2] == (loop, port))
        # Linux: the send succeeds, the receive after it is refused (a
        # plain recv under the sandbox: ECONNRESET, udp_refused.rs).
        s.settimeout(5)
        try:
            s.send(b"x")
            s.recvfrom(10)
            print(fam.name, "no refusal")
        except OSError as e:
            print(fam.name, "refused", name(e.errno))
        r = socket.socket(fam, socket.SOCK_DGRAM)
        r.bind((loop, 0))
        print(fam.name, "reconnect", s.connect_ex(r.getsockname()[:2]),
              s.getsockname()[1] == lport)
        s.send(b"hi")
        data, src = r.recvfrom(10)
        print(fam.name, "delivered", data, src[1] == lport)
        r.close()
        s.close()
    # The "UDP connect trick": the local address toward a destination.
    t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t.connect(("127.0.0.1", 9))
    print("trick", t.getsockname()[0])


def proc_lines(name):
    with open("/proc/net/" + name) as f:
        return f.read().splitlines()[1:]


def hex_addr(text):
    ip, port = text.split(":")
    raw = bytes.fromhex(ip)
    # The kernel prints each 32-bit word of the address in host order.
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    fam = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
    return socket.inet_ntop(fam, raw), int(port, 16)


def procnet():
    made = []
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen()
    l6 = socket.socket(socket.AF_INET6)
    l6.bind(("::1", 0))
    l6.listen()
    c = socket.create_connection(l.getsockname())
    a, _ = l.accept()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u6.bind(("::1", 0))
    unbound = socket.socket()
    made = {"listener": l, "listener6": l6, "client": c, "accepted": a, "udp": u, "udp6": u6,
            "unbound": unbound}
    by_inode = {os.fstat(s.fileno()).st_ino: name for name, s in made.items()}
    found = []
    for f in ("tcp", "tcp6", "udp", "udp6"):
        for line in proc_lines(f):
            fields = line.split()
            name = by_inode.get(int(fields[9]))
            if name is None:
                continue
            s = made[name]
            local = hex_addr(fields[1])
            remote = hex_addr(fields[2])
            mine = s.getsockname()[:2]
            try:
                peer = s.getpeername()[:2]
            except OSError:
                peer = None
            found.append("%s %s state %s local %s remote %s uid %s" % (
                f, name, fields[3], local == mine,
                remote == peer if peer else remote[1] == 0,
                int(fields[7]) == os.geteuid()))
    # Established connections come in the kernel's hash order.
    print("\n".join(sorted(found)))
    us = socket.socket(socket.AF_UNIX)
    tag = "gaps-%d" % os.getpid()
    us.bind("\0" + tag)
    us.listen()
    unix = proc_lines("unix")
    print("unix own", sum(line.endswith("@" + tag) for line in unix))
    print("unix netstack names", sum("@sbx-" in line for line in unix))
    import psutil
    port = l.getsockname()[1]
    seen = sorted(c.status for c in psutil.net_connections("tcp") if c.laddr and c.laddr.port == port)
    print("psutil", seen)


{"listen": listen, "empty": empty, "backlog": backlog, "procnet": procnet,
 "udpconnect": udpconnect}[sys.argv[1]]()
print("exit 0")
