# An inotify watch on directory argv[2] for opens, reads, closes and
# creates; prints the events seen ("name:EVENT", sorted) once "made" is
# created, or after 20 s. argv[1] says who acts:
#   own  - this program: it reads "existing" and creates "made" itself;
#   host - someone else: this program creates "ready" and waits while the
#          test, outside, reads "existing" and then creates "made".
# Harmless natively.
import ctypes, os, select, struct, sys, time

libc = ctypes.CDLL(None, use_errno=True)
EVENTS = {0x1: "ACCESS", 0x10: "CLOSE_NOWRITE", 0x20: "OPEN", 0x100: "CREATE"}
who, d = sys.argv[1], sys.argv[2]
if who == "own":
    with open(os.path.join(d, "existing"), "w") as f:
        f.write("data\n")
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
wd = libc.inotify_add_watch(fd, d.encode(), sum(EVENTS))
if fd < 0 or wd < 0:
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
if who == "own":
    with open(os.path.join(d, "existing")) as f:
        f.read()
    open(os.path.join(d, "made"), "w").close()
else:
    open(os.path.join(d, "ready"), "w").close()

seen, deadline = set(), time.time() + 20
while time.time() < deadline:
    select.select([fd], [], [], 0.2)
    try:
        buf = os.read(fd, 65536)
    except BlockingIOError:
        if "made:CREATE" in seen:
            break  # and nothing followed it for 0.2 s
        continue
    i = 0
    while i < len(buf):
        _, mask, _, size = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16 : i + 16 + size].rstrip(b"\0").decode()
        i += 16 + size
        seen.update(f"{name}:{n}" for bit, n in EVENTS.items() if mask & bit)
print(" ".join(sorted(seen)))
