# SO_REUSEPORT on loopback TCP: a second listener on the same address
# binds (one without the option does not), both accept connections, and
# the second still takes them once the first has closed.
import select, socket
def listener(port=0):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    l.bind(("127.0.0.1", port))
    l.listen(64)
    return l
a = listener()
port = a.getsockname()[1]
b = listener(port)
print("second bind", b.getsockname() == a.getsockname())
plain = socket.socket()
try:
    plain.bind(("127.0.0.1", port))
    print("without SO_REUSEPORT bound")
except OSError as e:
    print("without SO_REUSEPORT", e.errno == 98)
clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
got = {a: 0, b: 0}
while sum(got.values()) < 32:
    for l in select.select([a, b], [], [], 5)[0]:
        c, peer = l.accept()
        got[l] += 1
        c.close()
print("accepted", sum(got.values()), "both", got[a] > 0 and got[b] > 0)
a.close()
c = socket.create_connection(("127.0.0.1", port))
b.settimeout(5)
conn, _ = b.accept()
print("after the first closes", conn.getsockname()[1] == port)
