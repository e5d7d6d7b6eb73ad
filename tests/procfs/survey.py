"""Walk /proc (its global entries and /proc/self) and /sys, and print
every directory listing, symlink target and the first 64 KiB of every
regular file that can be read, as records:

    === KIND PATH
    <content lines>

KIND is DIR (content: the names), F (a file's bytes, latin-1), L (a
symlink's target), Z (a file whose stat size is neither 0 nor the size
read: "SIZE READ"), or a letter and an errno when a step failed (E: open,
R: read, D: listdir, S: lstat, L: readlink). Numbered /proc entries
other than self and thread-self are other processes and are skipped; so
are the task/ trees (threads repeat their process)."""
import os
import stat
import sys

LIMIT = 1 << 16
SKIP = {"/proc/self/task", "/proc/thread-self"}
out = sys.stdout


def emit(kind, path, data=b""):
    out.write("=== %s %s\n" % (kind, path))
    if data:
        out.write(data.decode("latin-1"))
        out.write("\n")


def read(path, size):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY)
    except OSError as e:
        return emit("E%d" % e.errno, path)
    try:
        chunks, n = [], 0
        while n < LIMIT:
            b = os.read(fd, LIMIT - n)
            if not b:
                break
            chunks.append(b)
            n += len(b)
        data = b"".join(chunks)
        emit("F", path, data)
        if size and size != len(data) and len(data) < LIMIT:
            emit("Z", path, b"%d %d" % (size, len(data)))
    except OSError as e:
        emit("R%d" % e.errno, path)
    finally:
        os.close(fd)


def walk(top, depth=0):
    if top in SKIP or depth > 12:
        return
    try:
        names = sorted(os.listdir(top))
    except OSError as e:
        return emit("D%d" % e.errno, top)
    emit("DIR", top, "\n".join(names).encode())
    for name in names:
        path = os.path.join(top, name)
        if top == "/proc" and (name.isdigit() or name in ("self", "thread-self")):
            continue
        try:
            st = os.lstat(path)
        except OSError as e:
            emit("S%d" % e.errno, path)
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                emit("L", path, os.readlink(path).encode())
            except OSError as e:
                emit("L%d" % e.errno, path)
        elif stat.S_ISDIR(st.st_mode):
            walk(path, depth + 1)
        elif stat.S_ISREG(st.st_mode):
            read(path, st.st_size)


for top in sys.argv[1:]:
    walk(top)
