# A non-blocking connect whose destination has not answered yet: poll,
# select and epoll report nothing until it ends; then writable (and
# SO_ERROR 0) once the host listener makes room, or readable, writable,
# error and hang-up (SO_ERROR ECONNREFUSED) for a port nobody listens on.
# Runs the same guest natively and under the supervisor (egress allowed to
# the two host-loopback ports), inside a fresh network namespace
# (`unshare -n`). argv: SUPERVISOR MODE (native or sandboxed).
import socket
import subprocess
import sys

SUP, MODE = sys.argv[1], sys.argv[2]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

GUEST = r'''
import errno, select, socket, sys
port, refused_port = int(sys.argv[1]), int(sys.argv[2])
SEEN = select.POLLIN | select.POLLOUT | select.POLLERR | select.POLLHUP
name = lambda r: errno.errorcode.get(r, r)
s = socket.socket()
s.setblocking(False)
print("connect", name(s.connect_ex(("127.0.0.1", port))))
p = select.poll()
p.register(s, select.POLLIN | select.POLLOUT)
print("poll", p.poll(300))
print("select", select.select([s], [s], [s], 0.1) != ([], [], []))
ep = select.epoll()
ep.register(s.fileno(), select.EPOLLIN | select.EPOLLOUT)
print("epoll", ep.poll(0.1))
print("so_error pending", s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
print("again", name(s.connect_ex(("127.0.0.1", port))))
print("ready", flush=True)
sys.stdin.readline()
p = select.poll()
p.register(s, select.POLLOUT)
print("done events", [e & SEEN for _, e in p.poll(30000)])
print("epoll done", [e & select.EPOLLOUT for _, e in ep.poll(30)])
print("so_error", s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
s.setblocking(True)
s.sendall(b"ping")
print("reply", s.recv(4))
f = socket.socket()
f.setblocking(False)
print("refused connect", name(f.connect_ex(("127.0.0.1", refused_port))))
p = select.poll()
p.register(f, select.POLLOUT)
print("refused events", [e & SEEN for _, e in p.poll(30000)])
print("refused so_error", name(f.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))
'''

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(0)
port = listener.getsockname()[1]
# Backlog 0 holds one connection: this one fills it, the guest's SYN waits.
filler = socket.create_connection(("127.0.0.1", port))
free = socket.socket()
free.bind(("127.0.0.1", 0))
refused_port = free.getsockname()[1]
free.close()

argv = ["/usr/bin/python3", "-c", GUEST, str(port), str(refused_port)]
if MODE == "sandboxed":
    rules = ["--allow-net", "127.0.0.1:%d" % port, "--allow-net", "127.0.0.1:%d" % refused_port]
    argv = [SUP, "run", *rules, "--", *argv]
guest = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in guest.stdout:
    sys.stdout.write(line)
    if line == "ready\n":
        break
listener.accept()[0].close()  # room: the guest's retried SYN gets in
guest.stdin.write("\n")
guest.stdin.flush()
listener.settimeout(60)
conn, _ = listener.accept()
if conn.recv(4) == b"ping":
    conn.sendall(b"pong")
sys.stdout.write(guest.stdout.read())
print("exit", guest.wait())
