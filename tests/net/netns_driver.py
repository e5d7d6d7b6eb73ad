# Runs tests/c/netns_escape.c natively or sandboxed next to a host process's
# abstract unix sockets (a datagram socket and a stream listener under one
# random name) and a host UDP echo server on 127.0.0.1 (the sandboxed run
# may reach it through --allow-net, so the escape tries run on an egress
# relay's socket too). Runs inside a fresh network namespace made by the
# test, so the supervisor, the listeners and the server share it.
# argv: SUPERVISOR PROG CDIR MODE (native | sandboxed)
# Prints the program's lines, then what the host sockets received.
import os
import socket
import subprocess
import sys
import threading

SUP, PROG, CDIR, MODE = sys.argv[1:5]

name = "netns-probe-%s" % os.urandom(8).hex()
dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
dgram.bind(b"\0" + name.encode())
stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
stream.bind(b"\0" + name.encode())
stream.listen(16)

echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
echo.bind(("127.0.0.1", 0))
port = echo.getsockname()[1]


def serve_echo():
    while True:
        data, peer = echo.recvfrom(2048)
        echo.sendto(data, peer)


threading.Thread(target=serve_echo, daemon=True).start()

argv = [PROG, name, str(port)]
if MODE != "native":
    argv = [SUP, "run", "--ro", "%s:%s" % (CDIR, CDIR),
            "--allow-net", "127.0.0.1:%d" % port, "--"] + argv
p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
sys.stdout.write(p.stdout)
if p.returncode != 0:
    print("exit", p.returncode, p.stderr.strip())

dgram.setblocking(False)
stream.setblocking(False)
got, conns = 0, 0
while True:
    try:
        dgram.recv(64)
        got += 1
    except BlockingIOError:
        break
while True:
    try:
        stream.accept()[0].close()
        conns += 1
    except BlockingIOError:
        break
print("host datagrams", got)
print("host connections", conns)
