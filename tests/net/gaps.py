"""Netstack cases TCP answers differently from AF_UNIX (issue 4), each
printing what it saw; run natively and sandboxed, the outputs must match.

    gaps.py listen     listen() on an unbound socket autobinds
    gaps.py empty      an empty send after the peer closed returns 0
    gaps.py backlog    non-blocking connect to a full backlog
"""
import errno
import select
import socket
import sys


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


def backlog():
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(0)
    addr = l.getsockname()
    filler = socket.create_connection(addr)
    c = socket.socket()
    c.setblocking(False)
    print("connect", name(c.connect_ex(addr)))
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
    l2 = socket.socket()
    l2.bind(("127.0.0.1", 0))
    l2.listen(0)
    f2 = socket.create_connection(l2.getsockname())
    d = socket.socket()
    d.setblocking(False)
    print("connect2", name(d.connect_ex(l2.getsockname())))
    l2.close()
    f2.close()
    p2 = select.poll()
    p2.register(d, select.POLLOUT)
    ev = p2.poll(10000)
    print("closed listener polls", bool(ev))
    print("so_error2", name(d.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))


{"listen": listen, "empty": empty, "backlog": backlog}[sys.argv[1]]()
print("exit 0")
