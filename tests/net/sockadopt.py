# TCP and UDP sockets made through the C library's socket() (under the
# sandbox, the preload's, which makes an AF_UNIX socket itself and hands
# it to the supervisor): IPv4 and IPv6, stream and datagram, every flag,
# protocols named and not, bad protocols; what the new socket reports
# (family, type, protocol, flags, name) and that it works (a TCP
# connection, a UDP round trip, a non-blocking connect); descriptor
# numbers reused. Prints what happened; the test compares it with a
# native run.
#
# With the argument "hostile" (supervised only) it makes the marked
# socket call itself with descriptors the supervisor must refuse, and
# prints what each call answered and what the descriptor is afterwards.
import ctypes
import errno
import fcntl
import os
import socket
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long] * 6
SYS_SOCKET = 41
MARK = 0x736F636BAD0B7ED0
NONBLOCK = socket.SOCK_NONBLOCK
CLOEXEC = socket.SOCK_CLOEXEC


def err(e):
    return errno.errorcode.get(e, e)


def c_socket(family, ty, proto=0):
    """The C library's socket(): a descriptor, or its errno's name."""
    ctypes.set_errno(0)
    fd = libc.socket(family, ty, proto)
    return fd if fd >= 0 else err(ctypes.get_errno())


def describe(fd):
    s = socket.socket(fileno=os.dup(fd))
    opt = lambda o: s.getsockopt(socket.SOL_SOCKET, o)
    nonblock = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK)
    cloexec = bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
    what = opt(socket.SO_DOMAIN), opt(socket.SO_TYPE), opt(socket.SO_PROTOCOL), nonblock, cloexec
    what += (s.getsockname(),)
    s.close()
    return what


def kinds():
    for family in (socket.AF_INET, socket.AF_INET6):
        for base, proto in ((socket.SOCK_STREAM, 0), (socket.SOCK_STREAM, socket.IPPROTO_TCP),
                            (socket.SOCK_DGRAM, 0), (socket.SOCK_DGRAM, socket.IPPROTO_UDP)):
            for flags in (0, NONBLOCK, CLOEXEC, NONBLOCK | CLOEXEC):
                fd = c_socket(family, base | flags, proto)
                print("kind", family, base, proto, flags, describe(fd) if isinstance(fd, int) else fd)
                if isinstance(fd, int):
                    os.close(fd)
    for family, ty, proto in ((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_UDP),
                              (socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_TCP),
                              (socket.AF_INET, socket.SOCK_STREAM, 300),
                              (socket.AF_INET, socket.SOCK_STREAM | 0x100, 0)):
        print("bad", family, ty, proto, c_socket(family, ty, proto))


def works():
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        srv = socket.socket(family, socket.SOCK_STREAM)
        srv.bind((host, 0))
        srv.listen(4)
        cli = socket.socket(family, socket.SOCK_STREAM)
        cli.connect(srv.getsockname())
        conn, peer = srv.accept()
        cli.sendall(b"ping")
        print("tcp", family, conn.recv(4), peer == cli.getsockname(), cli.getpeername() == srv.getsockname())
        for s in (conn, cli, srv):
            s.close()
        a = socket.socket(family, socket.SOCK_DGRAM)
        b = socket.socket(family, socket.SOCK_DGRAM)
        a.bind((host, 0))
        b.sendto(b"datagram", a.getsockname())
        data, src = a.recvfrom(16)
        print("udp", family, data, src[1] == b.getsockname()[1])
        a.close()
        b.close()
    srv = socket.create_server(("127.0.0.1", 0))
    fd = c_socket(socket.AF_INET, socket.SOCK_STREAM | NONBLOCK)
    s = socket.socket(fileno=fd)
    print("nonblocking connect", s.connect_ex(srv.getsockname()) in (0, errno.EINPROGRESS))
    s.close()
    srv.close()


def numbers():
    a = c_socket(socket.AF_INET, socket.SOCK_STREAM)
    b = c_socket(socket.AF_INET6, socket.SOCK_DGRAM)
    os.close(a)
    c = c_socket(socket.AF_INET, socket.SOCK_DGRAM)
    print("numbers", b == a + 1, c == a)
    os.close(b)
    os.close(c)


def marked(fd, family=socket.AF_INET, ty=socket.SOCK_STREAM, proto=0):
    """The preload's marked call, made by hand: its answer."""
    ctypes.set_errno(0)
    r = libc.syscall(SYS_SOCKET, family, ty, proto, MARK, fd)
    return r if r >= 0 else err(ctypes.get_errno())


def unix_name(fd):
    """What getsockname says of `fd`, by its own family."""
    s = socket.socket(fileno=os.dup(fd))
    try:
        return s.family, s.getsockname()
    except OSError as e:
        return s.family, err(e.errno)
    finally:
        s.close()


def unix(ty=socket.SOCK_STREAM):
    return socket.socket(socket.AF_UNIX, ty)


def hostile():
    r, w = os.pipe()
    f = os.open("/proc/self/status", os.O_RDONLY)
    print("unopened", marked(-1), marked(9999))
    print("pipe", marked(r), "file", marked(f))
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    print("netlink", marked(nl.fileno()), unix_name(nl.fileno())[0] == socket.AF_NETLINK)
    seq = unix(socket.SOCK_SEQPACKET)
    print("seqpacket", marked(seq.fileno()), unix_name(seq.fileno()))
    st = unix()
    print("stream for udp", marked(st.fileno(), ty=socket.SOCK_DGRAM), unix_name(st.fileno()))
    dg = unix(socket.SOCK_DGRAM)
    print("dgram for tcp", marked(dg.fileno()), unix_name(dg.fileno()))
    bound = unix()
    bound.bind("\0sockadopt-%d" % os.getpid())
    print("bound", marked(bound.fileno()), unix_name(bound.fileno())[1][:10])
    left, right = socket.socketpair()
    print("connected", marked(left.fileno()), unix_name(left.fileno()))
    tcp = socket.socket()
    print("netstack", marked(tcp.fileno()), unix_name(tcp.fileno()))
    tcp.bind(("127.0.0.1", 0))
    print("netstack after", tcp.getsockname()[0])
    if os.fstat(0).st_mode & 0o170000 == 0o140000:
        print("stdin", marked(0), unix_name(0))
    # The policy's refusals come first: nothing is adopted.
    raw = unix()
    print("raw", marked(raw.fileno(), ty=socket.SOCK_RAW), unix_name(raw.fileno()))
    print("bad protocol", marked(raw.fileno(), proto=socket.IPPROTO_UDP), unix_name(raw.fileno()))
    # A fresh one is adopted once; again, or through a dup, is refused.
    fresh = unix()
    fd = fresh.detach()
    print("fresh", marked(fd) == fd, unix_name(fd))
    print("again", marked(fd), "dup", marked(os.dup(fd)))
    s = socket.socket(fileno=fd)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    c = socket.create_connection(s.getsockname())
    conn, _ = s.accept()
    c.sendall(b"adopted")
    print("adopted works", conn.recv(16), s.family == socket.AF_INET)
    race()
    print("done")


def race():
    """A socket closed and its number reused while it is handed over: any
    answer, but no hang, and the sandbox's sockets go on working."""
    stop = threading.Event()
    fds = []

    def churn():
        while not stop.is_set():
            if fds:
                try:
                    os.close(fds[-1])
                except OSError:
                    pass
                fds.append(os.open("/dev/null", os.O_RDONLY))

    t = threading.Thread(target=churn)
    t.start()
    answers = set()
    for _ in range(300):
        u = unix()
        fds.append(u.detach())
        a = marked(fds[-1])
        answers.add("fd" if isinstance(a, int) else a)
    stop.set()
    t.join()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    print("race", answers <= {"EBADF", "fd"})
    srv = socket.create_server(("127.0.0.1", 0))
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    print("after race", conn.getpeername() == cli.getsockname())


if sys.argv[1:] == ["hostile"]:
    hostile()
else:
    kinds()
    works()
    numbers()
    print("done")
