
# The relay's modes of the egress driver (appended to egress_driver.py, whose
# helpers and SUP they use): its figures (bulk and round trip, native and
# through allowed egress) and the guest's TCP options on the relay's host
# socket. Then the dispatch on MODE, over both files' modes.


GUEST_BENCH = r"""
import socket, sys, time
port = int(sys.argv[1])
best_bulk, best_rtt = 0.0, 1e9
for _ in range(3):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"r")
    t = time.perf_counter()
    for _ in range(2000):
        s.sendall(b"x")
        s.recv(1)
    best_rtt = min(best_rtt, (time.perf_counter() - t) / 2000)
    s.sendall(b"b")
    block = b"\0" * 65536
    t = time.perf_counter()
    for _ in range(1024):
        s.sendall(block)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    best_bulk = max(best_bulk, 64 / (time.perf_counter() - t))
    s.close()
print("%.1f MiB/s %.1f us" % (best_bulk, best_rtt * 1e6))
"""


def mode_bench():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve():
        while True:
            c, _ = srv.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.recv(1)
            for _ in range(2000):
                c.sendall(c.recv(1))
            c.recv(1)
            while c.recv(1 << 20):
                pass
            c.sendall(b"k")
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    native = subprocess.run(["/usr/bin/python3", "-c", GUEST_BENCH, str(port)],
                            capture_output=True, text=True, check=True).stdout
    print("native", native.strip())
    sys.stdout.write("sandboxed ")
    sys.stdout.flush()
    sandbox(["127.0.0.1:%d" % port], GUEST_BENCH, str(port))


GUEST_NODELAY = r"""
import select, socket, sys
port = int(sys.argv[1])
conns = {}
for tag, before in (("A", False), ("B", True), ("C", None)):
    s = socket.socket()
    if before:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect(("127.0.0.1", port))
    if before is False:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(tag.encode())
    s.recv(1)
    conns[tag] = s
# D: non-blocking, TCP_NODELAY set while the connect is in progress.
s = socket.socket()
s.setblocking(False)
s.connect_ex(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
select.select([], [s], [], 10)
s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
s.setblocking(True)
s.sendall(b"D")
s.recv(1)
conns["D"] = s
# E: keep-alive and its timers before connect; F: after.
for tag in ("E", "F"):
    s = socket.socket()
    opts = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1), (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 30),
            (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 7), (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 4)]
    if tag == "E":
        for o in opts:
            s.setsockopt(*o)
    s.connect(("127.0.0.1", port))
    if tag == "F":
        for o in opts:
            s.setsockopt(*o)
    s.sendall(tag.encode())
    s.recv(1)
    conns[tag] = s
    print(tag, "keepalive", s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
          "idle", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE))
print("ready", flush=True)
sys.stdin.readline()
conns["A"].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
conns["B"].sendall(b"x")
conns["B"].recv(1)
print("ready", flush=True)
sys.stdin.readline()
"""


def nodelay_of(pid, ports):
    """TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL and
    TCP_KEEPCNT of the TCP sockets process `pid` holds whose local port is
    a key of `ports`, by the value there (a guest connection's tag)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    by_inode = {}
    for name in ("tcp", "tcp6"):
        with open("/proc/net/" + name) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                port = int(fields[1].split(":")[1], 16)
                if port in ports:
                    by_inode[int(fields[9])] = ports[port]
    pidfd = os.pidfd_open(pid)
    found = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        inode = int(link[8:-1]) if link.startswith("socket:[") else None
        if inode not in by_inode:
            continue
        dup = libc.syscall(438, pidfd, int(fd), 0)  # pidfd_getfd
        if dup < 0:
            found[by_inode[inode]] = "pidfd_getfd errno %d" % ctypes.get_errno()
            continue
        s = socket.socket(fileno=dup)
        tcp = lambda o: s.getsockopt(socket.IPPROTO_TCP, o)
        found[by_inode[inode]] = "%s/%d/%d/%d/%d" % (
            tcp(socket.TCP_NODELAY) != 0, s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            tcp(socket.TCP_KEEPIDLE), tcp(socket.TCP_KEEPINTVL), tcp(socket.TCP_KEEPCNT))
        s.close()
    os.close(pidfd)
    return found


def mode_nodelay():
    """TCP_NODELAY and keep-alive as the guest set them, on the socket that
    carries each connection: natively the guest's own, sandboxed the
    relay's host socket."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    ports = {}

    def serve():
        while True:
            c, peer = srv.accept()
            ports[peer[1]] = c.recv(1).decode()
            c.sendall(b"k")
            threading.Thread(target=lambda c=c: [c.sendall(c.recv(1)), c.recv(1)],
                             daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    guest = ["/usr/bin/python3", "-c", GUEST_NODELAY, str(port)]
    for label, argv in (("native", guest),
                        ("sandboxed", [SUP, "run", "--allow-net", "127.0.0.1:%d" % port, "--"]
                         + guest)):
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for step in ("connected", "A cleared"):
            ready = p.stdout.readline().strip()
            while ready not in ("ready", ""):  # "": the guest ended
                print(label, ready)
                ready = p.stdout.readline().strip()
            found = nodelay_of(p.pid, dict(ports))
            print(label, step, ready, " ".join("%s %s" % kv for kv in sorted(found.items())))
            p.stdin.write("\n")
            p.stdin.flush()
        p.wait(timeout=60)
        ports.clear()


{"bench": mode_bench, "nodelay": mode_nodelay, "tcp": mode_tcp, "udp": mode_udp, "dns": mode_dns, "deny": mode_deny,
 "tcp6": mode_tcp6, "realdns": mode_realdns, "udp6": lambda: mode_udp("::1")}[MODE]()
