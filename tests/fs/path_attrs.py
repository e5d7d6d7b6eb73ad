# Times, truncate and statfs by path, with hostile arguments, and the
# coreutils that use them: run natively and supervised by tests/fs/path_attrs.rs,
# whose outputs must be equal. argv[1]: a scratch directory (same path inside).
# (After tests/fs/syscall.py: `raw`, `KERNEL`.)
import ctypes, errno, os, struct, subprocess, sys
d = sys.argv[1]
os.chdir(d)
NR = dict(truncate=76, utime=132, statfs=137, utimes=235, futimesat=261, utimensat=280)
def show(what, fn):
    try: print(what, fn())
    except OSError as e: print(what, "errno", errno.errorcode[e.errno])
def times(p):
    st = os.lstat(p)
    return st.st_atime_ns, st.st_mtime_ns
AT_FDCWD, NOFOLLOW = -100, 0x100
OMIT, NOW = (1 << 30) - 2, (1 << 30) - 1
def ts(*pairs):
    return ctypes.create_string_buffer(b"".join(struct.pack("qq", s, n) for s, n in pairs))

with open("f", "w") as f:
    f.write("hello world\n")
os.mkdir("d")
os.symlink("f", "l")
os.symlink("missing", "dangling")
os.mkfifo("fifo")

print("## truncate")
show("shrink", lambda: (os.truncate("f", 5), os.stat("f").st_size))
show("grow via link", lambda: (os.truncate("l", 4096), os.stat("f").st_size))
show("missing", lambda: os.truncate("missing", 0))
show("dangling", lambda: os.truncate("dangling", 0))
show("dir", lambda: os.truncate("d", 0))
show("fifo", lambda: os.truncate("fifo", 0))
show("not a dir", lambda: os.truncate("f/x", 0))
show("/dev/null", lambda: os.truncate("/dev/null", 0))
for name, a in [("len=-1", (b"f", -1)), ("len=LONG_MAX", (b"f", (1 << 63) - 1)),
                ("path=NULL", (None, 0)), ("path=one", (ctypes.c_void_p(1), 0)),
                ("path=kernel", (ctypes.c_void_p(KERNEL), 0)), ("path=long", (b"x" * 5000, 0)),
                ("order len=-1 path=missing", (b"missing", -1))]:
    print("raw truncate", name, raw("truncate", *a))
print("size", os.stat("f").st_size)

print("## times")
show("utime ns", lambda: (os.utime("f", ns=(1_000_000_000_123_456_789, 1_100_000_000_987_654_321)), times("f")))
show("utime via link", lambda: (os.utime("l", ns=(5, 6)), times("f")))
show("utime link itself", lambda: (os.utime("l", ns=(7_000_000_001, 8_000_000_002), follow_symlinks=False), times("l")))
show("utime now", lambda: os.utime("d"))
show("utime missing", lambda: os.utime("missing"))
show("utime dangling nofollow", lambda: (os.utime("dangling", ns=(9, 10), follow_symlinks=False), times("dangling")))
show("utime dotdot", lambda: (os.utime("d/../f", ns=(11, 12)), times("f")))
cases = [
    ("utimensat times", "utimensat", (AT_FDCWD, b"f", ts((3, 4), (5, 6)), 0)),
    ("utimensat nsec=-1", "utimensat", (AT_FDCWD, b"f", ts((3, -1), (5, 6)), 0)),
    ("utimensat nsec=1e9", "utimensat", (AT_FDCWD, b"f", ts((3, 0), (5, 10**9)), 0)),
    ("utimensat omit both missing", "utimensat", (AT_FDCWD, b"missing", ts((0, OMIT), (0, OMIT)), 0)),
    ("utimensat omit and now", "utimensat", (AT_FDCWD, b"f", ts((0, OMIT), (0, NOW)), 0)),
    ("utimensat times=one", "utimensat", (AT_FDCWD, b"f", ctypes.c_void_p(1), 0)),
    ("utimensat times=kernel", "utimensat", (AT_FDCWD, b"f", ctypes.c_void_p(KERNEL), 0)),
    ("utimensat path=one", "utimensat", (AT_FDCWD, ctypes.c_void_p(1), None, 0)),
    ("utimensat flags=all", "utimensat", (AT_FDCWD, b"f", None, -1)),
    ("utimensat flags=nofollow", "utimensat", (AT_FDCWD, b"l", ts((21, 22), (23, 24)), NOFOLLOW)),
    ("utimensat dirfd=-1", "utimensat", (-1, b"f", None, 0)),
    ("utimensat dirfd=-1 abs", "utimensat", (-1, (d + "/f").encode(), None, 0)),
    ("utimensat empty", "utimensat", (AT_FDCWD, b"", None, 0)),
    ("utime buf", "utime", (b"f", ts((31, 32)))),
    ("utime NULL", "utime", (b"f", None)),
    ("utime buf=one", "utime", (b"f", ctypes.c_void_p(1))),
    ("utime order buf=one missing", "utime", (b"missing", ctypes.c_void_p(1))),
    ("utimes usec=999999", "utimes", (b"f", ts((41, 999_999), (42, 0)))),
    ("utimes usec=1e6", "utimes", (b"f", ts((41, 1_000_000), (42, 0)))),
    ("utimes usec=-1", "utimes", (b"f", ts((41, -1), (42, 0)))),
    ("utimes path=NULL", "utimes", (None, None)),
    ("futimesat dirfd", "futimesat", (os.open("d", os.O_RDONLY), b"../f", ts((51, 5), (52, 6)))),
    ("futimesat dirfd=-1", "futimesat", (-1, b"f", None)),
]
for what, name, a in cases:
    os.utime("f", ns=(1, 2))
    print("raw", what, raw(name, *a), times("f")[1] if times("f")[1] < 10**12 else "now")

print("## statfs")
def statfs(p):
    b = ctypes.create_string_buffer(120)
    r = raw("statfs", p, b)
    if not isinstance(r, int):
        return r
    f_type, f_bsize = struct.unpack_from("qq", b.raw, 0)
    f_blocks = struct.unpack_from("Q", b.raw, 16)[0]
    namelen = struct.unpack_from("q", b.raw, 64)[0]
    return hex(f_type), f_bsize, f_blocks, namelen
for p in [b".", b"f", b"l", b"d/..", b"/proc", b"missing", b"dangling", b"f/", b""]:
    print("statfs", p, statfs(p))
for what, a in [("buf=NULL", (b"f", None)), ("buf=one", (b"f", ctypes.c_void_p(1))),
                ("buf=kernel", (b"f", ctypes.c_void_p(KERNEL))), ("path=NULL", (None, ctypes.create_string_buffer(120))),
                ("path=long", (b"/" + b"x" * 5000, ctypes.create_string_buffer(120))),
                ("order missing buf=one", (b"missing", ctypes.c_void_p(1)))]:
    print("raw statfs", what, raw("statfs", *a))
v = os.statvfs(".")
# (Not f_flag: the view's binds add nosuid and nodev.)
print("statvfs", v.f_bsize, v.f_frsize, v.f_blocks, v.f_namemax)

print("## coreutils")
for cmd in (["truncate", "-s", "3", "f"], ["stat", "-c", "%s", "f"], ["truncate", "-s", "1", "nosuch/x"],
            ["touch", "-h", "-d", "2001-02-03 04:05:06", "l"], ["stat", "-c", "%Y", "l"],
            ["touch", "-d", "2002-02-03 04:05:06", "d"], ["stat", "-c", "%Y", "d"],
            ["stat", "-f", "-c", "%T %S %l %b", "."], ["stat", "-f", "-c", "%T", "/proc"],
            ["df", "--output=itotal,size", "."]):
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(" ".join(cmd), r.returncode, r.stdout.strip(), r.stderr.strip())
