"""UDP ancillary data over loopback (IPv4, IPv6, a wildcard receiver):
control messages set per packet by sendmsg or per socket by setsockopt
(hop limit/TTL, traffic class/TOS) as the receiver's recvmsg reports
them with IP_PKTINFO/IP_RECVTTL/IP_RECVTOS and IPV6_RECVPKTINFO/
IPV6_RECVHOPLIMIT/IPV6_RECVTCLASS, then cut by short control buffers
(MSG_CTRUNC). Prints a transcript to compare with a native run."""
import socket
import struct

IP_RECVTTL, IP_PKTINFO = 12, 8  # not exported by Python's socket module


def run(fam, host):
    s = socket.socket(fam, socket.SOCK_DGRAM); s.bind((host, 0))
    c = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        for o in (socket.IPV6_RECVHOPLIMIT, socket.IPV6_RECVTCLASS, socket.IPV6_RECVPKTINFO):
            s.setsockopt(socket.IPPROTO_IPV6, o, 1)
        c.sendmsg([b"a"], [], 0, s.getsockname())
        c.sendmsg([b"b"], [(socket.IPPROTO_IPV6, socket.IPV6_HOPLIMIT, struct.pack("i", 2)),
                           (socket.IPPROTO_IPV6, socket.IPV6_TCLASS, struct.pack("i", 0x20))], 0, s.getsockname())
        c.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 7)
        c.sendto(b"c", s.getsockname())
        try:
            c.sendmsg([b"d"], [(socket.IPPROTO_IPV6, socket.IPV6_HOPLIMIT, struct.pack("i", 300))], 0, s.getsockname())
        except OSError as e: print("bad hop", e.errno)
    else:
        for o in (IP_RECVTTL, socket.IP_RECVTOS, IP_PKTINFO):
            s.setsockopt(socket.IPPROTO_IP, o, 1)
        c.sendto(b"a", s.getsockname())
        c.sendmsg([b"b"], [(socket.IPPROTO_IP, socket.IP_TTL, struct.pack("i", 3))], 0, s.getsockname())
        c.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x10)
        c.sendto(b"c", s.getsockname())
    c.sendto(b"e", s.getsockname()); c.sendto(b"f", s.getsockname()); c.sendto(b"g", s.getsockname())
    for size in (1024, 1024, 1024, socket.CMSG_SPACE(4), socket.CMSG_SPACE(20)+17, socket.CMSG_LEN(4)-1):
        d, anc, fl, _ = s.recvmsg(10, size)
        print(fam.name, size, d, [(lv, t, x.hex()) for lv, t, x in anc], fl & socket.MSG_CTRUNC)
        
run(socket.AF_INET, "127.0.0.1")
run(socket.AF_INET6, "::1")
run(socket.AF_INET, "0.0.0.0")
