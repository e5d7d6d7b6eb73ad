"""getaddrinfo's answers and their order (glibc sorts them by RFC 3484,
connecting a UDP socket of each answer's family, an AF_INET6 one reused
for an IPv4 answer, and reading its source back), printed for a few
hosts, families and socket types."""
import socket

CASES = [
    dict(type=socket.SOCK_DGRAM),
    dict(family=socket.AF_UNSPEC, type=socket.SOCK_STREAM),
    dict(),
    dict(family=socket.AF_INET6, type=socket.SOCK_DGRAM,
         flags=socket.AI_V4MAPPED | socket.AI_ALL),
]

for args in CASES:
    for host in ["localhost", "127.0.0.1", "::1", None]:
        try:
            answers = socket.getaddrinfo(host, 80, **args)
        except OSError as e:
            answers = f"error {e}"
        print(host, args, answers)
print("done")
