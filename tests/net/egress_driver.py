# Drives allowed and denied egress end to end. Runs (natively) inside a
# fresh network namespace made by the test (`unshare -n`, plus `-m` for
# the DNS case): host servers on its loopback, the supervisor under test
# as a child, the guest's results printed one line each.
# argv: SUPERVISOR MODE REPORT_PATH; env EGRESS_AS_UID runs the supervisor
# as that unprivileged user.
# This file holds the shared helpers and the policy's modes (what is allowed,
# what is refused, names); egress_relay.py, run after it as one script
# (tests/net/egress.rs concatenates them), the relay's modes and the
# dispatch on MODE.
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading

SUP, MODE, REPORT = sys.argv[1], sys.argv[2], sys.argv[3]
# Set: the supervisor runs as this unprivileged uid (gid the same).
AS_UID = int(os.environ["EGRESS_AS_UID"]) if os.environ.get("EGRESS_AS_UID") else None
MIB = 1 << 20

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def sandbox(rules, script, *args):
    argv = [SUP, "run", "--report", REPORT]
    for r in rules:
        argv += ["--allow-net", r]
    argv += ["--", "/usr/bin/python3", "-c", script, *args]
    ids = {} if AS_UID is None else {"user": AS_UID, "group": AS_UID, "extra_groups": []}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, **ids)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        print("exit", p.returncode, p.stderr.strip())
    return p


def denied():
    with open(REPORT) as f:
        d = json.load(f)["denied_connections"]
    return ["%s %s:%d x%d" % (x["proto"], x["address"], x["port"], x["count"]) for x in d]


def pattern(n, seed):
    block = hashlib.sha256(seed).digest() * 2048  # 64 KiB
    return (block * (n // len(block) + 1))[:n]


ACCEPTED = []


def tcp_server(ip="127.0.0.1"):
    """Reads until EOF (the guest's half close), then answers 1 MiB."""
    srv = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET)
    srv.bind((ip, 0))
    srv.listen()

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            ACCEPTED.append(1)
            got = bytearray()
            while chunk := c.recv(65536):
                got += chunk
            c.sendall(b"%d %s\n" % (len(got), hashlib.sha256(got).hexdigest()[:16].encode()))
            c.sendall(pattern(MIB, b"down"))
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


GUEST_TCP = r"""
import errno, hashlib, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
def pattern(n, seed):
    block = hashlib.sha256(seed).digest() * 2048
    return (block * (n // len(block) + 1))[:n]
try:
    s = socket.create_connection((host, port))
except OSError as e:
    print("connect", errno.errorcode[e.errno]); sys.exit(0)
up = pattern(1 << 20, b"up")
s.sendall(up)
s.shutdown(socket.SHUT_WR)
got = bytearray()
while chunk := s.recv(65536):
    got += chunk
head, _, body = bytes(got).partition(b"\n")
print("server got", head.decode() == "%d %s" % (len(up), hashlib.sha256(up).hexdigest()[:16]))
print("down", len(body), body == pattern(1 << 20, b"down"))
print("peer", s.getpeername()[1] == port)
"""


def mode_tcp():
    port = tcp_server()
    sandbox(["127.0.0.1:%d" % port], GUEST_TCP, "127.0.0.1", str(port))
    print("denied", denied())
    print("host accepted", len(ACCEPTED))
    # Without a rule naming it, 127.0.0.1 is the sandbox's own loopback
    # (where nothing listens): the host server is never reached.
    for rules in ([], ["0.0.0.0/0", "::/0"], ["127.0.0.1:%d" % (port ^ 1)]):
        sandbox(rules, GUEST_TCP, "127.0.0.1", str(port))
    print("host accepted", len(ACCEPTED))
    # Allowed, but nothing listens: the host's refusal, not a denial.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    free = closed.getsockname()[1]
    closed.close()
    sandbox(["127.0.0.1:%d" % free], GUEST_TCP, "127.0.0.1", str(free))
    print("denied", denied())


GUEST_UDP = r"""
import socket, sys
port, host = int(sys.argv[1]), sys.argv[2]
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM)
s.settimeout(30)
for i in range(3):
    s.sendto(b"ping %d" % i, (host, port))
    data, src = s.recvfrom(100)
    print("unconnected", data.decode(), src[:2] == (host, port))
c = socket.socket(fam, socket.SOCK_DGRAM)
c.settimeout(30)
c.connect((host, port))
c.send(b"hello")
print("connected", c.recv(100).decode(), c.getpeername()[:2] == (host, port))
data, src = (c.send(b"again"), c.recvfrom(100))[1]
print("connected recvfrom", data.decode(), src[:2] == (host, port))
"""


def mode_udp(ip="127.0.0.1"):
    srv = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind((ip, 0))
    port = srv.getsockname()[1]

    def echo():
        while True:
            data, src = srv.recvfrom(65536)
            srv.sendto(b"echo " + data, src)

    threading.Thread(target=echo, daemon=True).start()
    rule = "[%s]:%d" % (ip, port) if ":" in ip else "%s:%d" % (ip, port)
    sandbox([rule], GUEST_UDP, str(port), ip)
    print("denied", denied())


def mode_tcp6():
    """The TCP case over IPv6: a host server on ::1, reached only by a
    rule naming [::1]:PORT; otherwise ::1 is the sandbox's own loopback."""
    port = tcp_server("::1")
    sandbox(["[::1]:%d" % port], GUEST_TCP, "::1", str(port))
    print("denied", denied())
    print("host accepted", len(ACCEPTED))
    for rules in ([], ["::/0"], ["127.0.0.1:%d" % port], ["[::1]:%d" % (port ^ 1)]):
        sandbox(rules, GUEST_TCP, "::1", str(port))
    print("host accepted", len(ACCEPTED))


def address_server(ip):
    """A TCP server on `ip` that answers each connection with the address
    it was reached at; returns its port."""
    srv = socket.socket()
    srv.bind((ip, 0))
    srv.listen()

    def serve():
        while True:
            c, _ = srv.accept()
            c.recv(10)
            c.sendall(b"%s served\n" % c.getsockname()[0].encode())
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


GUEST_DNS = r"""
import errno, socket, sys
port = int(sys.argv[1])
infos = socket.getaddrinfo("allowed.test", port, socket.AF_INET, socket.SOCK_STREAM)
addr = infos[0][4]
print("allowed.test", addr[0])
# AI_ADDRCONFIG (curl's and getent's): glibc asks DNS only if an IPv4
# address other than 127.0.0.1 is configured (the stub's, on lo).
flagged = socket.getaddrinfo("allowed.test", port, socket.AF_UNSPEC, socket.SOCK_STREAM,
                             0, socket.AI_ADDRCONFIG)
print("AI_ADDRCONFIG", sorted({i[4][0] for i in flagged}))
# Several addresses: the host's getaddrinfo sorts them (and probes
# NETLINK_ROUTE for that, which the supervisor's filter refuses).
multi = socket.getaddrinfo("multi.test", port, socket.AF_UNSPEC, socket.SOCK_STREAM)
print("multi.test", sorted({i[4][0] for i in multi}))
# The stub over TCP (two-byte length prefix), by hand.
import struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in "allowed.test".split("."))
q += b"\0" + struct.pack(">HH", 1, 1)
t = socket.create_connection(("127.0.0.53", 53))
t.sendall(struct.pack(">H", len(q)) + q)
n = struct.unpack(">H", t.recv(2))[0]
r = b""
while len(r) < n:
    r += t.recv(n - len(r))
print("tcp dns", r[:2] == b"\x12\x34", socket.inet_ntoa(r[-4:]))
s = socket.create_connection(addr)
s.shutdown(socket.SHUT_WR)
print("dialled", s.recv(100).split(b" ")[0].decode())
try:
    socket.getaddrinfo("other.test", port)
    print("other.test resolved")
except socket.gaierror as e:
    print("other.test gaierror", e.errno == socket.EAI_NONAME)
try:
    socket.create_connection(("203.0.113.6", port))
    print("203.0.113.6 connected")
except OSError as e:
    print("203.0.113.6", errno.errorcode[e.errno])
"""


def mode_dns():
    # A private /etc/hosts (this mount namespace only) stands in for the
    # host's DNS; the addresses are on this namespace's loopback.
    # (A copy of /etc over /etc: the sandbox's overlay on /etc refuses a
    # lower layer with a file mounted inside it.)
    etc = "/tmp/egress-etc-%d" % os.getpid()
    subprocess.run(["cp", "-a", "/etc", etc], check=True)
    with open(etc + "/hosts", "a") as f:
        f.write("203.0.113.5 allowed.test\n203.0.113.6 other.test\n"
                "203.0.113.7 multi.test\n2001:db8::7 multi.test\n")
    subprocess.run(["mount", "--bind", etc, "/etc"], check=True)
    for ip in ("203.0.113.5", "203.0.113.6"):
        subprocess.run(["ip", "addr", "add", ip + "/32", "dev", "lo"], check=True)
    port = address_server("0.0.0.0")
    sandbox(["allowed.test", "multi.test"], GUEST_DNS, str(port))
    print("denied", [d.replace(str(port), "PORT") for d in denied()])
    subprocess.run(["umount", "/etc"], check=True)
    subprocess.run(["rm", "-rf", etc], check=True)


GUEST_REAL_DNS = r"""
import socket, sys
port = int(sys.argv[1])
addr = socket.getaddrinfo("real.test", port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
print("real.test", addr[0])
s = socket.create_connection(addr)
s.shutdown(socket.SHUT_WR)
print("dialled", s.recv(100).split(b" ")[0].decode())
try:
    socket.getaddrinfo("absent.test", port, socket.AF_INET)
    print("absent.test resolved")
except socket.gaierror as e:
    print("absent.test gaierror", e.errno == socket.EAI_NONAME)
"""


def dns_answer(query, names):
    """A DNS response to `query`: A records from `names`, else NXDOMAIN."""
    import struct
    qid, _, qd = struct.unpack(">HHH", query[:6])
    i, labels = 12, []
    while query[i]:
        labels.append(query[i + 1:i + 1 + query[i]].decode())
        i += 1 + query[i]
    qtype = struct.unpack(">H", query[i + 1:i + 3])[0]
    question = query[12:i + 5]
    name = ".".join(labels).lower()
    if name not in names:
        return struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    answers = b""
    if qtype == 1:
        answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(names[name])
    count = 1 if answers else 0
    return struct.pack(">HHHHHH", qid, 0x8180, 1, count, 0, 0) + question + answers


def mode_realdns():
    """The stub asks the host's resolver, which asks a real name server
    (a tiny one on this namespace's 127.0.0.1:53, named by a private
    /etc/resolv.conf): no /etc/hosts entry is involved."""
    etc = "/tmp/egress-etc-%d" % os.getpid()
    subprocess.run(["cp", "-a", "/etc", etc], check=True)
    with open(etc + "/resolv.conf", "w") as f:
        f.write("nameserver 127.0.0.1\noptions attempts:1 timeout:2\n")
    subprocess.run(["mount", "--bind", etc, "/etc"], check=True)
    subprocess.run(["ip", "addr", "add", "203.0.113.5/32", "dev", "lo"], check=True)
    ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ns.bind(("127.0.0.1", 53))
    queries = []

    def serve_dns():
        while True:
            q, src = ns.recvfrom(512)
            queries.append(q)
            ns.sendto(dns_answer(q, {"real.test": "203.0.113.5"}), src)

    threading.Thread(target=serve_dns, daemon=True).start()
    port = address_server("203.0.113.5")
    sandbox(["real.test", "absent.test"], GUEST_REAL_DNS, str(port))
    print("name server asked", len(queries) > 0)
    print("denied", [d.replace(str(port), "PORT") for d in denied()])
    subprocess.run(["umount", "/etc"], check=True)
    subprocess.run(["rm", "-rf", etc], check=True)


# Destinations no rule short of naming them unlocks; one TCP connect and
# one UDP sendto each. Nothing leaves this fresh namespace in any case.
SPECIAL = ["10.0.0.1", "192.168.1.1", "172.16.0.1", "100.64.0.1", "169.254.169.254",
           "::ffff:10.0.0.1", "fe80::1", "fc00::1", "224.0.0.1"]

GUEST_DENY = r"""
import errno, socket, sys
for host in sys.argv[1:]:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    try:
        s.connect((host, 80))
        out = "connected"
    except OSError as e:
        out = errno.errorcode[e.errno]
    u = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        u.sendto(b"x", (host, 53))
        uout = "sent"
    except OSError as e:
        uout = errno.errorcode[e.errno]
    print(host, out, uout)
"""


def mode_deny():
    sandbox(["203.0.113.0/24"], GUEST_DENY, *SPECIAL, "8.8.8.8")
    print("denied", denied())
    # Catch-all rules unlock no special range; 8.8.8.8 is then allowed and
    # the host's own error comes back (this namespace has no route).
    sandbox(["0.0.0.0/0", "::/0"], GUEST_DENY, *SPECIAL, "8.8.8.8")
    print("denied", denied())
