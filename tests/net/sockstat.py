# /proc/net/sockstat's `sockets: used` and the `inuse` of its TCP, UDP
# and UDPLITE lines (and of sockstat6's, for IPv6) as the guest's sockets
# come and go
# (tests/net/sockstat.rs runs this natively in a fresh network namespace
# and sandboxed): the count in a fresh namespace, then what each step
# adds to it; `inuse` counts IPv4 TCP sockets that listen or are
# connected (a connection waiting to be accepted too) and IPv4 UDP
# sockets that are bound. argv[1] "udplite": the host has UDP-Lite.
# TCP connections are never closed: a closed one's count goes down once
# its state changes, when the kernel gets to it.
import socket
import sys


def sockstat(name="sockstat"):
    with open("/proc/net/" + name) as f:
        return dict((line.split(":")[0], line.split()[1:]) for line in f)


def used():
    return int(sockstat()["sockets"][1])


def inuse():
    s = sockstat()
    s.update(sockstat("sockstat6"))
    protos = ("TCP", "UDP", "UDPLITE", "TCP6", "UDP6", "UDPLITE6")
    return " ".join("%s %s" % (p, s[p][1]) for p in protos)


base = used()
print("fresh", base)
print("inuse", inuse())
a, b = socket.socketpair()
print("unix pair", used() - base)
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen()
print("inuse listener", inuse())
client = socket.create_connection(lst.getsockname())
print("inuse waiting", inuse())
accepted, _ = lst.accept()
print("tcp listener, client, accepted", used() - base)
print("inuse accepted", inuse())
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
print("udp bound", used() - base)
print("inuse udp bound", inuse())
unbound = [socket.socket() for _ in range(10)]
unbound_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print("10 unbound tcp", used() - base)
print("inuse unbound", inuse())
connected = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
connected.connect(lst.getsockname())
print("inuse udp connected", inuse())
v6 = [socket.socket(socket.AF_INET6), socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)]
for s in v6:
    s.bind(("::1", 0))
v6[0].listen()
v6.append(socket.socket(socket.AF_INET6))
v6[2].connect(v6[0].getsockname()[:2])
print("inuse ipv6", inuse())
if sys.argv[1:] == ["udplite"]:
    lite = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDPLITE)
    lite.bind(("127.0.0.1", 0))
    print("inuse udplite bound", inuse())
    lite.close()
for s in unbound + [a, b, udp, unbound_udp, connected, v6[1]]:
    s.close()
print("unix pair, udp and unbound closed", used() - base)
print("inuse closed", inuse())
