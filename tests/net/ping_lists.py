# Where /proc/net lists ping sockets (tests/net/ping.rs runs this
# natively in a fresh network namespace and sandboxed): in icmp and
# icmp6, as Linux does, never in udp or udp6; an unbound one nowhere.
# Prints each file's header and, for each line, which socket it is and
# its columns but the slot (a hash bucket natively) and the kernel
# pointer; ephemeral ports (an identifier the autobind picked) read
# "eph". Lines are sorted: Linux walks its hash buckets.
import os, socket, struct

V4, V6 = socket.AF_INET, socket.AF_INET6


def echo(s, family):
    kind, to = (8, "127.0.0.1") if family == V4 else (128, "::1")
    s.sendto(struct.pack("!BBHHH", kind, 0, 0, 0, 1) + b"x", (to, 0))
    s.recvfrom(100)


socks = {}
for name, family in (("ping4", V4), ("ping6", V6)):
    s = socket.socket(family, socket.SOCK_DGRAM, socket.getprotobyname(
        "icmp" if family == V4 else "ipv6-icmp"))
    echo(s, family)
    socks[name] = s
bound = socket.socket(V4, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
bound.bind(("127.0.0.1", 4242))
bound.connect(("127.0.0.2", 0))
socks["ping4 bound, connected"] = bound
socks["ping4 unbound"] = socket.socket(V4, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
socks["ping6 unbound"] = socket.socket(V6, socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6)
for name, family, at in (("udp4", V4, "127.0.0.1"), ("udp6", V6, "::1")):
    u = socket.socket(family, socket.SOCK_DGRAM)
    u.bind((at, 0))
    socks[name] = u
ephemeral = set()
for name, s in socks.items():
    own = s.getsockname()
    if own[1] not in (0, 4242):
        ephemeral.add("%04X" % own[1])
        own = (own[0], "eph")
    print(name, "name", own[:2])
names = {str(os.fstat(s.fileno()).st_ino): n for n, s in socks.items()}


def address(a):
    host, port = a.split(":")
    return host + ":" + ("eph" if port in ephemeral else port)


for file in ("udp", "udp6", "icmp", "icmp6"):
    with open("/proc/net/" + file) as f:
        lines = f.read().split("\n")
    print(file, "header", repr(lines[0]))
    rows = []
    for line in filter(None, lines[1:]):
        f = line.split()
        f[1], f[2] = address(f[1]), address(f[2])
        rows.append((names.get(f[9], "other"), f[1:9], f[10], f[12], len(line)))
    for row in sorted(rows):
        print(file, *row)
