# Loopback TCP as ordinary Python programs use it. Prints only lines that
# do not depend on port numbers, so a native run and a sandboxed one can
# be compared line by line. argv[1] == "v6" adds the IPv6 cases.
import asyncio, errno, http.server, multiprocessing.connection, socket
import socketserver, sys, threading, urllib.request

V6 = len(sys.argv) > 1 and sys.argv[1] == "v6"
def p(*a):
    print(*a, flush=True)

def asyncio_echo(host):
    async def handle(r, w):
        data = await r.readline()
        w.write(data.upper()); await w.drain(); w.close()
    async def main():
        server = await asyncio.start_server(handle, host, 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection(host, port)
        w.write(b"hello asyncio\n"); await w.drain()
        line = await r.readline()
        w.close(); server.close(); await server.wait_closed()
        return line
    p("asyncio", host, asyncio.run(main()))

class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("path=%s client=%s" % (self.path, self.client_address[0])).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *a):
        pass

def http_roundtrip():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    t = threading.Thread(target=srv.serve_forever); t.start()
    port = srv.server_address[1]
    for i in range(3):
        with urllib.request.urlopen("http://127.0.0.1:%d/x%d" % (port, i)) as r:
            p("http", r.status, r.read().decode())
    srv.shutdown(); srv.server_close(); t.join()

class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(self.rfile.readline()[::-1])

def socketserver_roundtrip():
    with socketserver.TCPServer(("127.0.0.1", 0), Echo) as srv:
        t = threading.Thread(target=srv.handle_request); t.start()
        with socket.create_connection(srv.server_address) as c:
            c.sendall(b"abc\n"); p("socketserver", c.makefile("rb").readline())
        t.join()

def mp_connection():
    with multiprocessing.connection.Listener(("127.0.0.1", 0), authkey=b"k") as l:
        def client():
            with multiprocessing.connection.Client(l.address, authkey=b"k") as c:
                c.send({"n": 41}); p("mp reply", c.recv())
        t = threading.Thread(target=client); t.start()
        with l.accept() as conn:
            conn.send(conn.recv()["n"] + 1)
        t.join()

def names(fam, host, wildcard):
    s = socket.socket(fam); s.bind((wildcard, 0)); s.listen()
    port = s.getsockname()[1]
    p("listener", s.getsockname()[0], 32768 <= port <= 60999)
    c = socket.socket(fam)
    try:
        c.getpeername()
    except OSError as e:
        p("unconnected getpeername", errno.errorcode[e.errno])
    p("unbound getsockname", c.getsockname()[0], c.getsockname()[1])
    c.connect((host, port))
    a, peer = s.accept()
    p("accept peer", peer[0], peer[1] == c.getsockname()[1])
    p("client peer", c.getpeername()[0], c.getpeername()[1] == port)
    p("accepted local", a.getsockname()[0], a.getsockname()[1] == port)
    p("accepted peer", a.getpeername() == c.getsockname())
    c.sendall(b"x" * 100000); c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = a.recv(65536)
        if not b: break
        got += b
    p("half-close", len(got)); a.sendall(b"after"); p("reply after half-close", c.recv(10))
    for x in (a, c, s): x.close()

def accepted_names():
    # Listeners autobound by listen (one listening twice); accept4 with an
    # address, asking for a non-blocking connection and not: the accepted
    # socket's own address, its peer, and its status and descriptor flags.
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    for twice in (False, True):
        s = socket.socket(); s.listen(4)
        if twice:
            s.listen(8)
        port = s.getsockname()[1]
        p("autobound listener", s.getsockname()[0], 32768 <= port <= 60999)
        for flags in (socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC, 0):
            c = socket.create_connection(("127.0.0.1", port))
            buf = ctypes.create_string_buffer(16); ln = ctypes.c_uint32(16)
            fd = libc.accept4(s.fileno(), buf, ctypes.byref(ln), flags)
            peer = (socket.inet_ntoa(buf.raw[4:8]), int.from_bytes(buf.raw[2:4], "big"))
            a = socket.socket(fileno=fd)
            p("accepted", a.getsockname()[0], a.getsockname()[1] == port, ln.value, peer == c.getsockname(),
              "blocking", os.get_blocking(fd), "cloexec", not os.get_inheritable(fd))
            a.close(); c.close()
        # Without an address buffer (libuv's, hence Node's, accept): the
        # connection's names are still TCP addresses, not the host's.
        for how in ("accept4", "accept"):
            c = socket.create_connection(("127.0.0.1", port))
            fd = libc.accept4(s.fileno(), None, None, 0) if how == "accept4" else libc.accept(s.fileno(), None, None)
            a = socket.socket(fileno=fd)
            p(how, "without an address", a.family == socket.AF_INET, a.getsockname()[0],
              a.getsockname()[1] == port, a.getpeername() == c.getsockname(),
              a.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN) == socket.AF_INET)
            a.sendall(b"hi"); p("data", c.recv(2))
            a.close(); c.close()
        s.close()

def conflicts():
    def bind(fam, host, port, v6only=None, reuse=False):
        s = socket.socket(fam)
        if reuse: s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if v6only is not None: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        try:
            s.bind((host, port)); return s
        except OSError as e:
            p("bind", host, "->", errno.errorcode[e.errno]); s.close()
    a = bind(socket.AF_INET, "127.0.0.1", 0); port = a.getsockname()[1]
    bind(socket.AF_INET, "127.0.0.1", port)
    bind(socket.AF_INET, "0.0.0.0", port)
    b = bind(socket.AF_INET, "127.0.0.2", port); p("second loopback address", b is not None)
    bind(socket.AF_INET, "10.1.2.3", 0)
    a.listen(); a.close()
    c = bind(socket.AF_INET, "127.0.0.1", port, reuse=True); p("rebind after close", c is not None)
    r = socket.socket()
    try:
        r.connect(("127.0.0.1", port))
    except OSError as e:
        p("connect to bound non-listener", errno.errorcode[e.errno])
    s = socket.socket(); s.bind(("127.0.0.1", 0)); free = s.getsockname()[1]; s.close()
    try:
        socket.create_connection(("127.0.0.1", free))
    except OSError as e:
        p("connect to closed port", errno.errorcode[e.errno])
    if V6:
        w = bind(socket.AF_INET6, "::", 0, v6only=0); port = w.getsockname()[1]
        bind(socket.AF_INET, "127.0.0.1", port)
        o = bind(socket.AF_INET6, "::", 0, v6only=1); port = o.getsockname()[1]
        q = bind(socket.AF_INET, "0.0.0.0", port); p("v4 beside v6only", q is not None)

def options():
    s = socket.socket()
    p("type/domain/proto", s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE),
      s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN), s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL))
    for level, name, v in ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
                           (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 30), (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 5),
                           (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3), (socket.IPPROTO_IP, socket.IP_TOS, 0x10),
                           (socket.SOL_SOCKET, socket.SO_REUSEADDR, 1), (socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)):
        before = s.getsockopt(level, name); s.setsockopt(level, name, v)
        p("opt", name, before, "->", s.getsockopt(level, name))
    try:
        s.setsockopt(socket.IPPROTO_IP, 12345, 1)
    except OSError as e:
        p("unknown ip option", errno.errorcode[e.errno])

def reconnects():
    # A connect of a connected socket: EISCONN, whether its destination
    # listens or not, from the client's side and from an accepted socket's;
    # a non-blocking connect: EINPROGRESS, then 0 once it completed, then
    # EISCONN.
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
    port = l.getsockname()[1]
    free = socket.socket(); free.bind(("127.0.0.1", 0)); closed = free.getsockname()[1]; free.close()
    c = socket.create_connection(("127.0.0.1", port)); a, _ = l.accept()
    for who, sock in (("client", c), ("accepted", a)):
        for what, dst in (("listening", port), ("closed", closed)):
            p("reconnect", who, what, errno.errorcode.get(sock.connect_ex(("127.0.0.1", dst)), 0))
    n = socket.socket(); n.setblocking(False)
    first = n.connect_ex(("127.0.0.1", port))
    import select
    select.select([], [n], [], 5)
    p("non-blocking connects", errno.errorcode.get(first, 0),
      *(errno.errorcode.get(n.connect_ex(("127.0.0.1", port)), 0) for _ in range(2)))
    an, _ = l.accept()
    # A client the program bound itself keeps its port; one whose connect
    # was refused connects again.
    b = socket.socket(); b.bind(("127.0.0.1", 0)); bport = b.getsockname()[1]
    b.connect(("127.0.0.1", port)); a2, peer = l.accept()
    p("bound client keeps its port", b.getsockname()[1] == bport, peer[1] == bport)
    r = socket.socket()
    p("refused, then", errno.errorcode.get(r.connect_ex(("127.0.0.1", closed)), 0),
      errno.errorcode.get(r.connect_ex(("127.0.0.1", port)), 0))
    a3, _ = l.accept(); p("then accepted", a3.getpeername() == r.getsockname())
    # A listener's connect, to another listener and to a closed port:
    # EISCONN (its state is not TCP_CLOSE).
    m = socket.socket(); m.bind(("127.0.0.1", 0)); m.listen()
    p("listener connects", *(errno.errorcode.get(m.connect_ex(("127.0.0.1", d)), 0) for d in (port, closed)))
    for x in (n, an, a, c, b, a2, r, a3, m, l): x.close()

asyncio_echo("127.0.0.1")
if V6:
    asyncio_echo("::1")
http_roundtrip()
socketserver_roundtrip()
mp_connection()
names(socket.AF_INET, "127.0.0.1", "0.0.0.0")
names(socket.AF_INET, "127.0.0.1", "127.0.0.1")
if V6:
    names(socket.AF_INET6, "::1", "::")
    names(socket.AF_INET6, "::ffff:127.0.0.1", "::")
accepted_names()
conflicts()
options()
reconnects()
p("done")
