# Loopback UDP as Python uses it; no port numbers printed. argv[1] == "v6"
# adds IPv6.
import asyncio, errno, socket, sys
V6 = len(sys.argv) > 1 and sys.argv[1] == "v6"
def p(*a):
    print(*a, flush=True)

def plain(fam, host):
    r = socket.socket(fam, socket.SOCK_DGRAM); r.bind((host, 0))
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(b"ping", r.getsockname())
    data, a = r.recvfrom(100)
    p("udp", a[0], data, a[1] == s.getsockname()[1])
    r.sendto(b"pong", a); p("back", s.recvfrom(100)[0])
    c = socket.socket(fam, socket.SOCK_DGRAM); c.connect(r.getsockname()); c.send(b"conn")
    d, a2 = r.recvfrom(10)
    p("connected", a2[0], d, a2 == c.getsockname(), c.getpeername() == r.getsockname())
    r.setblocking(False)
    try:
        r.recvfrom(10)
    except BlockingIOError:
        p("nothing waiting: EAGAIN")
    r.settimeout(0.2)
    try:
        r.recvfrom(10)
    except socket.timeout:
        p("timeout")
    big = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        big.sendto(b"x" * 70000, r.getsockname())
    except OSError as e:
        p("oversized", errno.errorcode[e.errno])
    for x in (r, s, c, big): x.close()

def asyncio_udp(host):
    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, t): self.t = t
        def datagram_received(self, data, addr): self.t.sendto(data.upper(), addr)
    class Client(asyncio.DatagramProtocol):
        def __init__(self, fut): self.fut = fut
        def datagram_received(self, data, addr): self.fut.set_result(data)
    async def main():
        loop = asyncio.get_running_loop()
        st, _ = await loop.create_datagram_endpoint(Echo, local_addr=(host, 0))
        fut = loop.create_future()
        ct, _ = await loop.create_datagram_endpoint(lambda: Client(fut), remote_addr=st.get_extra_info("sockname")[:2])
        ct.sendto(b"ping")
        got = await asyncio.wait_for(fut, 10)
        ct.close(); st.close()
        return got
    p("asyncio udp", host, asyncio.run(main()))

plain(socket.AF_INET, "127.0.0.1")
asyncio_udp("127.0.0.1")
if V6:
    plain(socket.AF_INET6, "::1")
    asyncio_udp("::1")
p("done")
