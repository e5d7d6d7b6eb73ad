"""Serviced waits (tests/net/waits.rs): SO_RCVTIMEO on a receive with an
address and on accept; an allowed egress TCP connect (to the host's
127.0.0.1, named by --allow-net) that is non-blocking (EINPROGRESS, then
EALREADY, then SO_ERROR), one to a listener whose backlog is full that a
signal interrupts, and one that a signal interrupts without raising
(Python then waits for the connection, PEP 475). Usage: waits.py
TIMEOUTS | EGRESS FULL_PORT ECHO_PORT CLOSED_PORT. Prints a transcript to
compare with a native run."""
import errno
import select
import signal
import socket
import struct
import sys

TIMEO = struct.pack("ll", 0, 200_000)


def name(e):
    return errno.errorcode.get(e.errno, e.errno)


def timeouts():
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        u = socket.socket(fam, socket.SOCK_DGRAM)
        u.bind((host, 0))
        u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, TIMEO)
        try:
            u.recvfrom(10)
        except OSError as e:
            print(fam.name, "recvfrom", name(e))
        t = socket.socket(fam, socket.SOCK_STREAM)
        t.bind((host, 0))
        t.listen()
        t.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, TIMEO)
        try:
            t.accept()
        except OSError as e:
            print(fam.name, "accept", name(e))
        # Still usable after the timeout.
        c = socket.create_connection(t.getsockname()[:2])
        conn, _ = t.accept()
        c.sendall(b"x")
        print(fam.name, "then", conn.recv(1))


class Alarm(Exception):
    pass


def connect_nonblocking(port, what):
    """A non-blocking connect to 127.0.0.1:`port`, its error printed after
    `what`, waited for until writable; the socket."""
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except OSError as e:
        print(what, name(e))
    select.select([], [s], [], 10)
    return s


def egress(full, echo, closed):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", full))
    except OSError as e:
        print("non-blocking to a full backlog", name(e))
    try:
        s.connect(("127.0.0.1", full))
    except OSError as e:
        print("again", name(e))
    s.close()

    def raise_alarm(*_):
        raise Alarm()

    signal.signal(signal.SIGALRM, raise_alarm)
    b = socket.socket()
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        b.connect(("127.0.0.1", full))
        print("blocking connect returned")
    except Alarm:
        print("blocking connect interrupted by the handler")
    b.close()

    n = connect_nonblocking(echo, "non-blocking to a server")
    print("SO_ERROR", n.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    n.setblocking(True)
    n.sendall(b"echo me")
    print("echo", n.recv(100))
    n.close()

    r = connect_nonblocking(closed, "non-blocking to a closed port")
    print("SO_ERROR", errno.errorcode.get(r.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))

    # A handler that returns: the blocking connect goes on (PEP 475).
    ticks = []
    signal.signal(signal.SIGALRM, lambda *_: ticks.append(1))
    w = socket.socket()
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    w.connect(("127.0.0.1", echo))
    signal.setitimer(signal.ITIMER_REAL, 0)
    w.sendall(b"after signals")
    print("echo", w.recv(100))


if sys.argv[1] == "TIMEOUTS":
    timeouts()
else:
    egress(*map(int, sys.argv[2:5]))
print("done")
