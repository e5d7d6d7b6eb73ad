"""Host side of tests/net/waits.rs, run inside a fresh network namespace
(`unshare -n`): a listener whose backlog is full (never accepts), an
echo server, and a closed port, all on 127.0.0.1; then the client
(waits.py EGRESS ...) natively and under the supervisor with
--allow-net naming those ports. Prints both transcripts.
Usage: waits_driver.py SUPERVISOR CLIENT_SCRIPT"""
import socket
import subprocess
import sys
import threading

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
sup, script = sys.argv[1], sys.argv[2]

full = socket.socket()
full.bind(("127.0.0.1", 0))
full.listen(0)
fillers = []
for _ in range(3):
    f = socket.socket()
    f.setblocking(False)
    f.connect_ex(full.getsockname())
    fillers.append(f)

echo = socket.socket()
echo.bind(("127.0.0.1", 0))
echo.listen(16)


def serve():
    while True:
        c, _ = echo.accept()
        threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(100), b"")],
                         daemon=True).start()


threading.Thread(target=serve, daemon=True).start()
closed = socket.socket()
closed.bind(("127.0.0.1", 0))
ports = [str(full.getsockname()[1]), str(echo.getsockname()[1]), str(closed.getsockname()[1])]
args = ["/usr/bin/python3", "-c", script, "EGRESS"] + ports
rules = [a for p in ports for a in ("--allow-net", "127.0.0.1:" + p)]
for side, argv in (("native", args), ("sandboxed", [sup, "run"] + rules + ["--"] + args)):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    print("==", side, out.returncode)
    print(out.stdout, end="")
    if out.returncode:
        print(out.stderr, end="")
