# /proc/net/sockstat's `sockets: used` as the guest's sockets come and go
# (tests/net/sockstat.rs runs this natively in a fresh network namespace
# and sandboxed): the count in a fresh namespace, then what each step
# adds to it.
import socket


def used():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("sockets: used "):
                return int(line.split()[2])
    return None


base = used()
print("fresh", base)
a, b = socket.socketpair()
print("unix pair", used() - base)
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen()
client = socket.create_connection(lst.getsockname())
accepted, _ = lst.accept()
print("tcp listener, client, accepted", used() - base)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
print("udp bound", used() - base)
unbound = [socket.socket() for _ in range(10)]
print("10 unbound tcp", used() - base)
for s in unbound + [a, b, udp]:
    s.close()
print("unix pair, udp and unbound closed", used() - base)
