# Destinations outside the sandbox: refused at once, never a timeout.
import errno, socket
for host in ("10.0.0.1", "169.254.169.254", "8.8.8.8"):
    s = socket.socket(); s.settimeout(30)
    try:
        s.connect((host, 80)); print("connected?!", host)
    except OSError as e:
        print("tcp", host, errno.errorcode.get(e.errno, e.errno))
s6 = socket.socket(socket.AF_INET6)
try:
    s6.connect(("::ffff:10.0.0.1", 443))
except OSError as e:
    print("tcp mapped", errno.errorcode.get(e.errno, e.errno))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"q", ("10.0.0.1", 53))
except OSError as e:
    print("udp", errno.errorcode.get(e.errno, e.errno))
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("raw socket?!")
except OSError as e:
    print("icmp", socket.SOCK_RAW, errno.errorcode.get(e.errno, e.errno))
# A ping socket opens (loopback is answered), but an echo request outside
# is unreachable at once.
p = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
try:
    p.sendto(b"\x08\0\0\0\0\0\0\1", ("8.8.8.8", 0)); print("echo sent?!")
except OSError as e:
    print("icmp echo", errno.errorcode.get(e.errno, e.errno))
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("packet socket?!")
except OSError as e:
    print("packet", errno.errorcode.get(e.errno, e.errno))
