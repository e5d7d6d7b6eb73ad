# Runs argv[1:] natively (it is the supervisor) with stdin the host's
# /dev/null and stdout and stderr the slave of a new pseudo-terminal of
# the host's; relays what it writes (CR LF as LF), then says whether the
# slave's node was changed (its change time), and exits with its status.
import os, pty, subprocess, sys

master, slave = pty.openpty()
path = os.ttyname(slave)
before = os.stat(path).st_ctime_ns
null = os.open("/dev/null", os.O_RDONLY)
child = subprocess.Popen(sys.argv[1:], stdin=null, stdout=slave, stderr=slave)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
code = child.wait()
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
print("host terminal", "unchanged" if os.stat(path).st_ctime_ns == before else "CHANGED")
sys.exit(code)
