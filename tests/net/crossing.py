# Netstack sockets that cross into another descriptor or process:
# SCM_RIGHTS, fork, exec, dup and its kin, pidfd_getfd, /proc/self/fd,
# /proc/net, fdinfo, and UDP sources. Each case prints what the guest
# sees of the socket's face (family, type, protocol, names, SO_PEERNAME,
# peer credentials) with ports replaced by their roles, so a native run
# and a sandboxed one compare line by line. No line may carry a host
# name (an AF_UNIX family, an abstract name) where Linux shows TCP/UDP.
# argv[1], when given, is the one case to run; argv[1] == "exec-child"
# is the exec'd receiver (argv[2] the descriptor, argv[3..] the roles).
# Runs after faces.py (p, err, role, addr, call, raw_opt, sockaddr, ROLES).
import array, ctypes, errno, os, socket, struct, subprocess, sys

def face(fd):
    """What a process sees of descriptor fd."""
    sol = socket.SOL_SOCKET
    ids = [raw_opt(fd, sol, o, 4) for o in (socket.SO_DOMAIN, socket.SO_TYPE, socket.SO_PROTOCOL)]
    ids = [struct.unpack("i", v)[0] if isinstance(v, bytes) else v for v in ids]
    s = socket.socket(fileno=os.dup(fd))
    name = addr(call(s.getsockname)); peer = call(s.getpeername)
    peer = addr(peer) if not isinstance(peer, str) else peer
    s.close()
    pn = raw_opt(fd, sol, 28, 28 if ids[0] == socket.AF_INET6 else 16)  # SO_PEERNAME
    pn = sockaddr(pn) if isinstance(pn, bytes) else pn
    cred = raw_opt(fd, sol, socket.SO_PEERCRED, 12)
    cred = struct.unpack("iii", cred) if isinstance(cred, bytes) else cred
    groups = raw_opt(fd, sol, 59, 64)  # SO_PEERGROUPS
    groups = "%d bytes" % len(groups) if isinstance(groups, bytes) else groups
    return "ids=%s name=%s peer=%s peername=%s peercred=%s peergroups=%s" % (ids, name, peer, pn, cred, groups)

def tcp_trio(fam=socket.AF_INET, host="127.0.0.1"):
    l = socket.socket(fam); l.bind((host, 0)); l.listen(8)
    ROLES[l.getsockname()[1]] = "L"
    c = socket.socket(fam); c.connect((host, l.getsockname()[1]))
    a, _ = l.accept()
    return l, c, a

def send_fds(sock, fds):
    socket.send_fds(sock, [b"x"], fds)

def recv_fds(sock, n):
    return socket.recv_fds(sock, 1, n)[1]

def scm_rights():
    # The receiver is a forked child that got the sockets only by SCM_RIGHTS:
    # they are made after the fork.
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        pa, pb = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            pa.close()
            try:
                l, c, a = recv_fds(pb, 3)
                for what, fd in (("listener", l), ("client", c), ("accepted", a)):
                    p("scm", fam.name, what, face(fd))
                # accept on the received listener, talk on the received sockets
                peer = socket.socket(fam); peer.connect((host, socket.socket(fileno=os.dup(l)).getsockname()[1]))
                buf = ctypes.create_string_buffer(28); ln = ctypes.c_uint32(28)
                fd = libc.accept(l, buf, ctypes.byref(ln))
                p("scm accept", sockaddr(buf.raw[:ln.value]) == sockaddr(buf.raw[:ln.value]) and
                  sockaddr(buf.raw[:ln.value]).startswith(host), face(fd))
                os.write(c, b"from child"); p("scm recv", os.read(a, 10))
                peer.close(); os.close(fd)
            except BaseException:
                import traceback; traceback.print_exc()
            os._exit(0)
        pb.close()
        l, c, a = tcp_trio(fam, host)
        send_fds(pa, [l.fileno(), c.fileno(), a.fileno()])
        os.waitpid(pid, 0)
        for x in (l, c, a, pa): x.close()

def fork_and_exec():
    l, c, a = tcp_trio()
    pid = os.fork()
    if pid == 0:
        p("fork", "client", face(c.fileno())); p("fork", "accepted", face(a.fileno()))
        os._exit(0)
    os.waitpid(pid, 0)
    roles = ["%d=%s" % kv for kv in ROLES.items()]
    for fd in (l.fileno(), c.fileno(), a.fileno()):
        subprocess.run(sys.orig_argv[:3] + ["exec-child", str(fd)] + roles, pass_fds=[fd], check=True)
    for x in (l, c, a): x.close()

def exec_child(fd, roles):
    for kv in roles:
        k, v = kv.split("="); ROLES[int(k)] = v
    p("exec", face(fd))

def dups():
    l, c, a = tcp_trio()
    fds = {"dup": os.dup(c.fileno()), "dup2": os.dup2(c.fileno(), 100), "dup3": os.dup2(c.fileno(), 101, inheritable=False),
           "F_DUPFD": fcntl_dup(c.fileno(), 0), "F_DUPFD_CLOEXEC": fcntl_dup(c.fileno(), 1030)}
    for k, fd in fds.items():
        p(k, face(fd)); os.close(fd)
    # A closed original leaves the dup the only descriptor.
    fd = os.dup(a.fileno()); a.close(); p("dup of closed", face(fd)); os.close(fd)
    for x in (l, c): x.close()

def fcntl_dup(fd, code):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD if code == 0 else fcntl.F_DUPFD_CLOEXEC, 50)

def pidfd_getfd():
    l, c, a = tcp_trio()
    pidfd = os.pidfd_open(os.getpid())
    n = libc.syscall(438, pidfd, c.fileno(), 0)
    p("pidfd_getfd", face(n) if n >= 0 else errno.errorcode[ctypes.get_errno()])
    for x in (l, c, a): x.close()
    os.close(pidfd)

def proc_fd():
    l, c, a = tcp_trio()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    for what, s in (("listener", l), ("client", c), ("udp", u)):
        link = os.readlink("/proc/self/fd/%d" % s.fileno())
        p("readlink", what, link == "socket:[%d]" % os.fstat(s.fileno()).st_ino)
        p("open /proc/self/fd", what, call(lambda: os.close(os.open("/proc/self/fd/%d" % s.fileno(), os.O_RDWR))))
        info = open("/proc/self/fdinfo/%d" % s.fileno()).read().split("\n")
        p("fdinfo", what, [x.split(":")[0] for x in info if x], [x for x in info if x.startswith("flags")],
          "ino:\t%d" % os.fstat(s.fileno()).st_ino in info)
    for x in (l, c, a, u): x.close()

def proc_net():
    l, c, a = tcp_trio()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    inodes = {os.fstat(s.fileno()).st_ino for s in (l, c, a, u)}
    child = os.fork()
    if child == 0:
        os.read(os.pipe()[0], 1)
    for where in ("/proc/net", "/proc/self/net", "/proc/%d/net" % child, "/proc/thread-self/net",
                  "/proc/%d/task/%d/net" % (os.getpid(), os.getpid())):
        for f in sorted(os.listdir("/proc/net")):
            text = call(lambda: open(os.path.join(where, f), "rb").read())
            if isinstance(text, str):
                continue
            ours = [ln for ln in text.split(b"\n") if any((" %d " % i).encode() in ln + b" " for i in inodes)]
            if b"sbx-" in text or (f.startswith(("tcp", "udp", "unix")) and ours):
                p("procnet", where.replace(str(child), "CHILD").replace(str(os.getpid()), "SELF"), f,
                  "token" if b"sbx-" in text else "", sorted(normalize(f, ln) for ln in ours))
    os.kill(child, 9); os.waitpid(child, 0)
    for x in (l, c, a, u): x.close()

def normalize(f, ln):
    cols = ln.decode().split()
    if f == "unix":
        return cols[7:8]
    def hp(x):
        h, port = x.split(":"); return h + ":" + role(int(port, 16))
    return [hp(cols[1]), hp(cols[2]), cols[3]]

def tools():
    l, c, a = tcp_trio()
    import shutil
    for argv in (["ss", "-tan"], ["ss", "-x", "-a"], ["ss", "-tanp"], ["netstat", "-an"], ["netstat", "-xa"]):
        if not shutil.which(argv[0]):
            p("tool", argv[0], "absent"); continue
        out = subprocess.run(argv, capture_output=True)
        text = out.stdout + out.stderr
        p("tool", " ".join(argv), "token" if b"sbx-" in text else "no token", "rc", out.returncode)
    for x in (l, c, a): x.close()

def sock_diag():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)  # NETLINK_SOCK_DIAG
    except OSError as e:
        p("sock_diag socket", err(e)); return
    l, c, a = tcp_trio()
    # unix_diag_req: family, protocol, pad, states, ino, show, cookie
    req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xffffffff, 0, 0x1, 0xffffffff, 0xffffffff)
    s.send(struct.pack("=IHHII", 16 + len(req), 20, 0x301, 1, 0) + req)
    data = b""
    while True:
        b = s.recv(65536); data += b
        if not b or struct.unpack_from("=H", b, 4)[0] in (2, 3):
            break
    p("sock_diag unix", "token" if b"sbx-" in data else "no token")
    for x in (l, c, a, s): x.close()

def udp():
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        r = socket.socket(fam, socket.SOCK_DGRAM); r.bind((host, 0)); ROLES[r.getsockname()[1]] = "R"
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.sendto(b"one", r.getsockname())
        p("udp", fam.name, "implicit bind", face(s.fileno()))
        d, src = r.recvfrom(10); p("udp recvfrom", addr(src) == addr(s.getsockname()) or addr(src), d)
        s.sendto(b"two", r.getsockname())
        d, anc, fl, src = r.recvmsg(10, 0); p("udp recvmsg", addr(src), d)
        s.sendto(b"three", r.getsockname())
        d, anc, fl, src = r.recvmsg(10, 0, socket.MSG_CMSG_CLOEXEC); p("udp recvmsg cloexec", addr(src), d)
        s.sendto(b"four", r.getsockname())
        p("udp recvmmsg", recvmmsg(r.fileno()))
        s.connect(r.getsockname()); p("udp connected", face(s.fileno()))
        pa, pb = socket.socketpair(); send_fds(pa, [s.fileno()]); fd = recv_fds(pb, 1)[0]
        p("udp scm", face(fd)); os.write(fd, b"five"); p("udp recv via scm", addr(r.recvfrom(10)[1]) == addr(s.getsockname()))
        for x in (r, s, pa, pb): x.close()
        os.close(fd)

def recvmmsg(fd, count=1, flags=0):
    """recvmmsg of count messages: (n, [(name, data), ...]) or the errno."""
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    class msghdr(ctypes.Structure):
        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)),
                    ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                    ("flags", ctypes.c_int)]
    class mmsghdr(ctypes.Structure):
        _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
    data = [ctypes.create_string_buffer(16) for _ in range(count)]
    names = [ctypes.create_string_buffer(28) for _ in range(count)]
    iovs = [iovec(ctypes.cast(d, ctypes.c_void_p), 16) for d in data]
    ms = (mmsghdr * count)(*[mmsghdr(msghdr(ctypes.cast(nm, ctypes.c_void_p), 28, ctypes.pointer(io), 1, None, 0, 0), 0)
                             for nm, io in zip(names, iovs)])
    n = libc.recvmmsg(fd, ms, count, flags, None)
    if n < 0:
        return errno.errorcode[ctypes.get_errno()]
    return n, [(sockaddr(names[i].raw[:ms[i].hdr.namelen]) if ms[i].hdr.namelen else "no name", data[i].raw[:ms[i].len])
               for i in range(n)]

def unlabelled_udp():
    """A UDP socket on an ephemeral 127.0.0.1 port that no role names:
    the kernel may give a UDP socket the number of a TCP listener
    labelled L (another protocol's port), which would print as L."""
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
        if s.getsockname()[1] not in ROLES:
            return s
        s.close()

def mmsg_batch():
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 0)); ROLES[r.getsockname()[1]] = "R"
    s = unlabelled_udp()
    for d in (b"a", b"bb", b"ccc"):
        s.sendto(d, r.getsockname())
    p("recvmmsg waitforone", recvmmsg(r.fileno(), 4, 0x10000))  # MSG_WAITFORONE
    p("recvmmsg dontwait empty", recvmmsg(r.fileno(), 2, socket.MSG_DONTWAIT))
    for x in (r, s): x.close()

def peer_options():
    l, c, a = tcp_trio()
    p("SO_PEERNAME v4 len 28", raw_opt(c.fileno(), socket.SOL_SOCKET, 28, 28))
    short = raw_opt(c.fileno(), socket.SOL_SOCKET, 28, 4)
    p("SO_PEERNAME v4 len 4", short if isinstance(short, str) else (len(short), struct.unpack_from("H", short)[0]))
    cred = raw_opt(c.fileno(), socket.SOL_SOCKET, socket.SO_PEERCRED, 4)
    p("SO_PEERCRED len 4", cred if isinstance(cred, str) else struct.unpack("i", cred))
    p("setsockopt SO_PEERNAME", call(lambda: c.setsockopt(socket.SOL_SOCKET, 28, 1)))
    p("setsockopt SO_PEERCRED", call(lambda: c.setsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 1)))
    for x in (l, c, a): x.close()

def tcp_recv_names():
    l, c, a = tcp_trio()
    c.send(b"abc")
    p("tcp recvfrom", call(lambda: a.recvfrom(1)))
    c.send(b"d")
    r = call(lambda: a.recvmsg(1, 0, socket.MSG_CMSG_CLOEXEC))
    p("tcp recvmsg cloexec", r if isinstance(r, str) else (r[0], r[3]))
    c.send(b"e"); r = a.recvmsg(1); p("tcp recvmsg", r[0], r[3])
    c.send(b"fg"); p("tcp recvmmsg", recvmmsg(a.fileno()))
    for x in (l, c, a): x.close()

def options_passcred():
    l, c, a = tcp_trio()
    p("passcred set", call(lambda: a.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)),
      call(lambda: a.getsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED)))
    c.send(b"x"); d, anc, fl, src = a.recvmsg(1, 64); p("passcred recvmsg", d, anc, src)
    c.send(b"y"); d, anc, fl, src = a.recvmsg(1, 64, socket.MSG_CMSG_CLOEXEC); p("passcred recvmsg cloexec", d, anc)
    p("peerpidfd", call(lambda: a.getsockopt(socket.SOL_SOCKET, 77 - 1)))
    p("peersec", raw_opt(a.fileno(), socket.SOL_SOCKET, 31, 64))  # SO_PEERSEC
    for x in (l, c, a): x.close()

def socketpairs():
    for fam in (socket.AF_INET, socket.AF_INET6):
        for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            p("socketpair", fam.name, t.name, call(lambda: socket.socketpair(fam, t) and "made"))

CASES = dict(scm_rights=scm_rights, fork_and_exec=fork_and_exec, dups=dups, pidfd_getfd=pidfd_getfd,
             proc_fd=proc_fd, proc_net=proc_net, tools=tools, sock_diag=sock_diag, udp=udp,
             tcp_recv_names=tcp_recv_names, mmsg_batch=mmsg_batch, peer_options=peer_options, options_passcred=options_passcred, socketpairs=socketpairs)

if len(sys.argv) > 1 and sys.argv[1] == "exec-child":
    exec_child(int(sys.argv[2]), sys.argv[3:])
elif len(sys.argv) > 1:
    CASES[sys.argv[1]]()
else:
    for f in CASES.values():
        f()
    p("done")
