# A server blocked in accept (or recvfrom) and a signal. argv[1]: "sigint"
# or "udp_sigint" (the process's own SIGINT: KeyboardInterrupt must be
# raised) or "alarm" (a
# SIGALRM handler fires while clients connect: none may be lost).
import os, signal, socket, sys, threading, time

if sys.argv[1] == "udp_sigint":
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        u.recvfrom(100)
        print("received?!")
    except KeyboardInterrupt:
        print("KeyboardInterrupt in recvfrom", flush=True)
    sys.exit(3)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
port = s.getsockname()[1]
if sys.argv[1] == "sigint":
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        s.accept()
        print("accepted?!")
    except KeyboardInterrupt:
        print("KeyboardInterrupt in accept", flush=True)
    sys.exit(3)

fired = 0
def on_alarm(*_):
    global fired
    fired += 1
signal.signal(signal.SIGALRM, on_alarm)
N = 40
def clients():
    for i in range(N):
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"%d\n" % i)
            c.recv(10)
        time.sleep(0.01)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
t = threading.Thread(target=clients); t.start()
got = []
for _ in range(N):
    conn, _ = s.accept()
    got.append(int(conn.makefile().readline()))
    conn.sendall(b"ok"); conn.close()
signal.setitimer(signal.ITIMER_REAL, 0)
t.join()
print("accepted", len(got), "in order", got == list(range(N)), "alarms fired", fired > 0)
