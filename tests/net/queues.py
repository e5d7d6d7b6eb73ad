"""The queues /proc/net/{tcp,tcp6,udp,udp6} show, natively or sandboxed.

    queues.py tcp    AF_INET: a listener with two unaccepted connections,
                     a connection whose reader does not read 20000 bytes,
                     one whose writer fills it; then reads drain them
    queues.py tcp6   the same over ::1
    queues.py udp    three unread datagrams, then read

Prints `label field value` lines (field tx or rx, in bytes or
connections). Each state is waited for (at most 10 s) by reading the file
again, so the values printed are the settled ones.
"""
import os
import socket
import sys
import time

FILES = {
    (socket.AF_INET, socket.SOCK_STREAM): "tcp",
    (socket.AF_INET6, socket.SOCK_STREAM): "tcp6",
    (socket.AF_INET, socket.SOCK_DGRAM): "udp",
    (socket.AF_INET6, socket.SOCK_DGRAM): "udp6",
}


def queues(sock):
    """(tx, rx) of `sock`'s line in its /proc/net file, by inode."""
    inode = os.fstat(sock.fileno()).st_ino
    with open("/proc/net/" + FILES[(sock.family, sock.type)]) as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[9]) == inode:
                tx, rx = fields[4].split(":")
                return int(tx, 16), int(rx, 16)
    return None


def settle(pred, socks):
    """The queues of `socks` once `pred` holds of them (or after 10 s)."""
    end = time.monotonic() + 10
    while True:
        q = {label: queues(s) for label, s in socks.items()}
        if all(v is not None for v in q.values()) and pred(q) or time.monotonic() > end:
            return q
        time.sleep(0.01)


def show(q):
    for label, v in q.items():
        tx, rx = v if v is not None else ("missing", "missing")
        print(label, "tx", tx)
        print(label, "rx", rx)


def tcp(family, host):
    l = socket.socket(family)
    l.bind((host, 0))
    l.listen(8)
    c1 = socket.create_connection(l.getsockname()[:2])
    c2 = socket.create_connection(l.getsockname()[:2])
    show(settle(lambda q: q["listener"][1] == 2, {"listener": l}))
    a1, _ = l.accept()
    a2, _ = l.accept()
    c1.sendall(b"x" * 20000)
    show(settle(lambda q: q["reader"][1] == 20000, {"listener": l, "reader": a1, "writer": c1}))
    c2.setblocking(False)
    sent = 0
    try:
        while True:
            sent += c2.send(b"y" * 65536)
    except BlockingIOError:
        pass
    full = settle(lambda q: q["full reader"][1] > 0 and q["full writer"][0] > 0,
                  {"full reader": a2, "full writer": c2})
    show(full)
    print("filled", full["full reader"][1] <= sent, full["full writer"][0] <= sent)
    got = 0
    while got < 20000:
        got += len(a1.recv(65536))
    show(settle(lambda q: q["drained reader"] == (0, 0) and q["drained writer"] == (0, 0),
                {"drained reader": a1, "drained writer": c1}))


def udp():
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.bind(("127.0.0.1", 0))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(3):
        s.sendto(b"z" * 100, r.getsockname())
    show(settle(lambda q: q["receiver"][1] > 0, {"receiver": r}))
    for _ in range(3):
        r.recv(200)
    show(settle(lambda q: q["drained receiver"] == (0, 0), {"drained receiver": r}))


case = sys.argv[1]
if case == "tcp":
    tcp(socket.AF_INET, "127.0.0.1")
elif case == "tcp6":
    tcp(socket.AF_INET6, "::1")
elif case == "udp":
    udp()
