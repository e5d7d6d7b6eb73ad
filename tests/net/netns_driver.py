# Runs tests/c/netns_escape.c natively or sandboxed next to a host process's
# abstract unix sockets (a datagram socket and a stream listener under one
# random name) and a host UDP echo server on 127.0.0.1 (the sandboxed run
# may reach it through --allow-net, so the escape tries run on an egress
# relay's socket too). Runs inside a fresh network namespace made by the
# test, so the supervisor, the listeners and the server share it.
# argv: SUPERVISOR PROG CDIR MODE (native | sandboxed)
# Prints the program's lines, then what the host sockets received. When the
# program asks for the unix name behind one of its UDP sockets (the sandbox
# hides them from the guest), the driver reads it from the sandbox's
# /proc/net/unix through the supervisor's children and answers.
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


def netstack_name(sup_pid, port):
    """The abstract name behind the guest's UDP socket on PORT, read in the
    sandbox's network namespace through the supervisor's children (init,
    the socket factory); empty when there is none (natively)."""
    suffix = "/udp/127.0.0.1/%s" % port
    try:
        kids = open("/proc/%d/task/%d/children" % (sup_pid, sup_pid)).read().split()
    except OSError:
        kids = []
    for kid in kids:
        try:
            lines = open("/proc/%s/net/unix" % kid).read().splitlines()
        except OSError:
            continue
        for line in lines:
            at = line.find("@")
            if at >= 0 and line.endswith(suffix):
                return line[at + 1:]
    return ""


p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
timer = threading.Timer(120, p.kill)
timer.start()
for line in p.stdout:
    if line.startswith("own unix to a netstack name: ask "):
        asked = line.split()[-1]
        p.stdin.write(netstack_name(p.pid, asked) + "\n")
        p.stdin.flush()
        line = "own unix to a netstack name: asked\n"
    sys.stdout.write(line)
p.stdin.close()
err = p.stderr.read()
code = p.wait()
timer.cancel()
if code != 0:
    print("exit", code, err.strip())

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
