# Runs tests/net/egress_crossing.py natively and under the supervisor,
# both in the fresh network namespace the test made (`unshare -n`), against
# the same servers on 127.0.0.1 and ::1 started here: TCP and UDP echo
# servers (reached sandboxed through `--allow-net` rules naming them), a
# closed port of each, a DNS responder on 127.0.0.53:53 for the native run
# (sandboxed, the supervisor's stub answers there), and the host clients of
# `--publish` (natively they dial the guest's ports themselves).
# The IPv4 TCP case and the netlink one run again as an unprivileged
# user (uid 1001), whose supervisor has no capability on the host.
# argv: SUPERVISOR GUEST_SCRIPT; prints "native CASE: LINE" and
# "sandboxed CASE: LINE" for every line each run printed.
import socket
import subprocess
import sys
import threading
import time

SUP, GUEST = sys.argv[1], sys.argv[2]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def family(ip):
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


def serve(ip, kind):
    """An echo server on ip; returns its port."""
    srv = socket.socket(family(ip), kind)
    srv.bind((ip, 0))
    if kind == socket.SOCK_DGRAM:
        def loop():
            while True:
                d, a = srv.recvfrom(100)
                srv.sendto(b"echo " + d, a)
    else:
        srv.listen()

        def loop():
            while True:
                c, _ = srv.accept()
                threading.Thread(target=echo, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


def echo(c):
    while d := c.recv(100):
        c.send(b"echo " + d)


def free(ip, kind):
    s = socket.socket(family(ip), kind)
    s.bind((ip, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def dns_responder():
    """Natively, a name server on 127.0.0.53:53 that answers anything."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.53", 53))
    t = socket.socket()
    t.bind(("127.0.0.53", 53))
    t.listen()

    def udp():
        while True:
            d, a = u.recvfrom(512)
            u.sendto(d[:2] + b"\x81\x80" + d[4:], a)

    def answer(c):
        d = c.recv(512)
        c.send(d[:4] + b"\x81\x80" + d[6:])
        c.recv(1)  # open until the client closes, as the stub keeps it
        c.close()

    def tcp():
        while True:
            c, _ = t.accept()
            threading.Thread(target=answer, args=(c,), daemon=True).start()
    for f in (udp, tcp):
        threading.Thread(target=f, daemon=True).start()


def rule(ip, port):
    return "[%s]:%d" % (ip, port) if ":" in ip else "%s:%d" % (ip, port)


def emit(who, case, out):
    for line in out.splitlines():
        print("%s %s: %s" % (who, case, line))
    sys.stdout.flush()


def run(case, args, rules=(), extra=(), client=None, uid=None):
    """Both runs of `case`; `uid`: both as that unprivileged user."""
    argv = ["/usr/bin/python3", "-c", GUEST, case, *args]
    sandboxed = [SUP, "run"] + [x for r in rules for x in ("--allow-net", r)] + list(extra) + ["--"]
    ids = {} if uid is None else {"user": uid, "group": uid, "extra_groups": [], "cwd": "/"}
    for who, prefix in (("native", []), ("sandboxed", sandboxed)):
        p = subprocess.Popen(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **ids)
        if client:
            client(who)
        out, _ = p.communicate(timeout=120)
        emit(who, case, out)


def publish_client(gp, gu, hp, hu):
    """The host side of `--publish`: retries until the guest answers."""
    def client(who):
        tp, up = (gp, gu) if who == "native" else (hp, hu)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = socket.create_connection(("127.0.0.1", tp), timeout=10)
                c.send(b"hello")
                if c.recv(10) == b"done":
                    break
            except OSError:
                time.sleep(0.1)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(0.5)
        u.connect(("127.0.0.1", up))
        while time.time() < deadline:
            u.send(b"ping")
            try:
                if u.recv(10) == b"done":
                    break
            except OSError:
                pass
    return client


for ip in ("127.0.0.1", "::1"):
    tcp_port, udp_port = serve(ip, socket.SOCK_STREAM), serve(ip, socket.SOCK_DGRAM)
    roles = ["--", "S=%d" % tcp_port, "U=%d" % udp_port]
    run("tcp", [ip, str(tcp_port)] + roles, [rule(ip, tcp_port)])
    run("udp", [ip, str(udp_port)] + roles, [rule(ip, udp_port)])
    # A port nobody binds, TCP or UDP (the namespace holds only this
    # driver's sockets).
    closed = free(ip, socket.SOCK_STREAM)
    run("refused", [ip, str(closed), "--", "C=%d" % closed], [rule(ip, closed)])

gp, gu = free("127.0.0.1", socket.SOCK_STREAM), free("127.0.0.1", socket.SOCK_DGRAM)
hp, hu = free("127.0.0.1", socket.SOCK_STREAM), free("127.0.0.1", socket.SOCK_DGRAM)
published = ["--publish", "127.0.0.1:%d:%d" % (hp, gp), "--publish", "127.0.0.1:%d:%d/udp" % (hu, gu)]
run("publish", [str(gp), str(gu), "--", "G=%d" % gp, "GU=%d" % gu], extra=published,
    client=publish_client(gp, gu, hp, hu))
dns_responder()
run("dns", ["--", "DNS=53"], ["allowed.test"])
run("netlink", [])
tcp_port = serve("127.0.0.1", socket.SOCK_STREAM)
run("tcp", ["127.0.0.1", str(tcp_port), "--", "S=%d" % tcp_port], [rule("127.0.0.1", tcp_port)], uid=1001)
run("netlink", [], uid=1001)
