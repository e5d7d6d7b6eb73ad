# mkdir, mkdirat, mknod and mknodat, with modes, umasks, a default ACL,
# hostile arguments and errno orders, and the coreutils that use them: run
# natively (as uid 0 without capabilities, as the guest is) and supervised
# by tests/fs/make_names.rs, whose outputs must be equal. argv[1]: a scratch
# directory; a read-only directory `ro` (holding `sub` and `f`) in it, when
# the test made one, adds the EROFS cases. Paths printed are relative.
# (After tests/fs/syscall.py: `raw`, `KERNEL`.)
import ctypes, errno, os, shutil, stat, subprocess, sys
d = sys.argv[1]
os.chdir(d)
NR = dict(mknod=133, mkdir=83, mkdirat=258, mknodat=259)
AT_FDCWD = -100
TYPES = {stat.S_IFDIR: "dir", stat.S_IFREG: "reg", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "sock",
         stat.S_IFCHR: "chr", stat.S_IFBLK: "blk", stat.S_IFLNK: "lnk"}
def kind(p):
    try:
        st = os.lstat(p)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "%s %04o rdev=%x uid=%d gid=%d" % (TYPES[stat.S_IFMT(st.st_mode)], stat.S_IMODE(st.st_mode),
                                              st.st_rdev, st.st_uid, st.st_gid)
def show(what, fn, path=None):
    try:
        fn()
        r = "ok"
    except OSError as e:
        r = "errno " + errno.errorcode[e.errno]
    print(what, r, kind(path) if path else "")

with open("f", "w") as f:
    f.write("x")
os.mkdir("dir")
os.symlink("f", "lf")
os.symlink("dir", "ld")
os.symlink("missing", "dangling")
os.symlink("loop", "loop")

print("## modes and umasks")
n = 0
for um in (0, 0o022, 0o077, 0o777, 0o7777):
    os.umask(um)
    for mode in (0o777, 0o1777, 0o2755, 0o4755, 0o7777, 0, 0o177777, 0xFFFFFFFF):
        n += 1
        print("mkdir umask=%o mode=%o" % (um, mode), raw("mkdir", b"m%d" % n, mode), kind("m%d" % n))
        print("mkdirat umask=%o mode=%o" % (um, mode), raw("mkdirat", AT_FDCWD, b"ma%d" % n, mode), kind("ma%d" % n))
        for t, name in ((stat.S_IFIFO, "fifo"), (0, "none"), (stat.S_IFREG, "reg")):
            m = (mode & 0o7777) | t
            print("mknod %s umask=%o mode=%o" % (name, um, mode), raw("mknod", b"n%s%d" % (name.encode(), n), m, 0),
                  kind("n%s%d" % (name, n)))
os.umask(0o022)
show("os.makedirs", lambda: os.makedirs("deep/a/b/c", 0o750), "deep/a/b/c")
show("os.makedirs exist_ok", lambda: os.makedirs("deep/a/b/c", 0o750, exist_ok=True), "deep/a/b")
show("os.mkfifo", lambda: os.mkfifo("fifo", 0o640), "fifo")
show("os.mknod fifo", lambda: os.mknod("fifo2", 0o604 | stat.S_IFIFO), "fifo2")
show("os.mknod default", lambda: os.mknod("plain"), "plain")

print("## types")
for name, mode, dev in (("sock", stat.S_IFSOCK | 0o600, 0), ("chr13", stat.S_IFCHR | 0o600, os.makedev(1, 3)),
                        ("blk", stat.S_IFBLK | 0o600, os.makedev(7, 0)), ("whiteout", stat.S_IFCHR, 0),
                        ("whiteout600", stat.S_IFCHR | 0o600, 0), ("chr00huge", stat.S_IFCHR, 1 << 40),
                        ("dirtype", stat.S_IFDIR | 0o700, 0), ("unknown", 0o150000 | 0o600, 0),
                        ("allbits", 0xFFFFFFFF, 0), ("fifodevhuge", stat.S_IFIFO | 0o600, (1 << 64) - 1),
                        ("regdev", stat.S_IFREG | 0o600, os.makedev(1, 3))):
    print("mknod", name, raw("mknod", name.encode(), mode, dev), kind(name))
    print("mknodat", name, raw("mknodat", AT_FDCWD, b"at_" + name.encode(), mode, dev), kind("at_" + name))
show("open socket inode", lambda: os.open("sock", os.O_RDONLY))

print("## names and errno orders")
dfd = os.open("dir", os.O_RDONLY | os.O_DIRECTORY)
pfd = os.open("dir", os.O_PATH)
ffd = os.open("f", os.O_RDONLY)
for p in (b"new", b"new/", b"new2//", b"f", b"f/", b"f/x", b"dir", b"dir/", b"lf", b"ld", b"ld/in",
          b"dangling", b"dangling/", b"loop", b"loop/x", b"missing/x", b".", b"..", b"dir/..",
          b"/", b"", b"x" * 255, b"y" * 256, b"z/" * 2100, b"/proc/new", b"/proc/self/fd/new",
          b"/proc/self/new", b"/dev/null/x", b"dir/./../dir2", d.encode() + b"/abs//new/"):
    label = (p if len(p) < 40 else b"%s...%d" % (p[:4], len(p))).replace(d.encode(), b"<D>")
    print("mkdir", label, raw("mkdir", p, 0o755), kind(p) if p[:1] not in (b"/", b"") and p[:2] != b".." and len(p) < 300 else "")
    # (the same name as a FIFO: EEXIST where mkdir made it)
    q = p + b"_n" if p[:1] not in (b"/", b"") and not p.endswith(b"/") else p
    print("mknod", label, raw("mknod", q, stat.S_IFIFO | 0o644, 0))
for what, fd in (("dirfd", dfd), ("opath", pfd), ("file", ffd), ("minus1", -1), ("huge", 99999),
                 ("int_min", -(1 << 31)), ("high_bits", (1 << 32) | dfd)):
    for p in (b"rel_%s" % what.encode(), b"%s/abs_%s" % (d.encode(), what.encode()), b"",
              b"../up_%s" % what.encode()):
        label = p.replace(d.encode(), b"<D>")
        print("mkdirat", what, label, raw("mkdirat", fd, p, 0o700))
        print("mknodat", what, label, raw("mknodat", fd, p + b"_n" if p else p, stat.S_IFIFO | 0o600, 0))
for what, a in (("NULL", None), ("one", ctypes.c_void_p(1)), ("kernel", ctypes.c_void_p(KERNEL))):
    print("mkdir path=" + what, raw("mkdir", a, 0o755))
    print("mkdirat path=" + what, raw("mkdirat", AT_FDCWD, a, 0o755))
    print("mknod path=" + what, raw("mknod", a, stat.S_IFIFO | 0o644, 0))
    print("mknodat path=" + what, raw("mknodat", AT_FDCWD, a, stat.S_IFIFO | 0o644, 0))
print("order mknod type=dir path=NULL", raw("mknod", None, stat.S_IFDIR | 0o600, 0))
print("order mknod type=unknown path=missing", raw("mknod", b"missing/x", 0o150000, 0))
print("order mknod chr path=existing", raw("mknod", b"f", stat.S_IFCHR | 0o600, os.makedev(1, 3)))
print("order mknod chr path=missing_parent", raw("mknod", b"missing/x", stat.S_IFCHR | 0o600, os.makedev(1, 3)))
print("order mknodat dirfd=-1 type=dir", raw("mknodat", -1, b"x", stat.S_IFDIR | 0o600, 0))
print("order mkdirat dirfd=-1 path=NULL", raw("mkdirat", -1, None, 0o755))
print("order mkdirat dirfd=file path=abs", raw("mkdirat", ffd, (d + "/abs_via_file").encode(), 0o755))
os.mkdir("closed", 0o555)
print("closed dir mkdir", raw("mkdir", b"closed/x", 0o755), "mknod", raw("mknod", b"closed/p", stat.S_IFIFO, 0))
print("closed dir existing", raw("mkdir", b"closed/.", 0o755))
os.chmod("closed", 0o755)
if os.path.isdir("ro"):
    print("## read-only")
    for p in (b"ro/new", b"ro/sub", b"ro/f", b"ro/missing/x", b"ro/f/x", b"ro", b"ro/.", b"ro/sub/"):
        print("mkdir", p, raw("mkdir", p, 0o755), "mknod", raw("mknod", p, stat.S_IFIFO | 0o600, 0),
              "sock", raw("mknod", p, stat.S_IFSOCK | 0o600, 0), "chr", raw("mknod", p, stat.S_IFCHR, 0))

print("## default acl")
if shutil.which("setfacl"):
    os.mkdir("acl", 0o755)
    r = subprocess.run(["setfacl", "-d", "-m", "u::rwx,g::rwx,o::r-x", "acl"], capture_output=True, text=True)
    print("setfacl", r.returncode, r.stderr.strip())
    for um in (0o022, 0o077):
        os.umask(um)
        print("umask %o mkdir" % um, raw("mkdir", b"acl/d%o" % um, 0o777), kind("acl/d%o" % um))
        print("umask %o mkfifo" % um, raw("mknod", b"acl/p%o" % um, stat.S_IFIFO | 0o666, 0), kind("acl/p%o" % um))
        print("umask %o nested" % um, raw("mkdir", b"acl/d%o/e" % um, 0o775), kind("acl/d%o/e" % um))
    os.umask(0o022)
    r = subprocess.run(["getfacl", "-c", "-p", "acl/d77", "acl/d77/e"], capture_output=True, text=True)
    print(r.stdout.strip())
else:
    print("no setfacl")

print("## coreutils")
for cmd in (["mkdir", "-p", "cu/a/b/c"], ["mkdir", "cu/a"], ["mkdir", "-m", "1777", "cu/sticky"],
            ["mkdir", "-p", "-m", "700", "cu/p/q"], ["mkfifo", "-m", "640", "cu/fifo"], ["mkfifo", "cu/fifo"],
            ["mknod", "cu/np", "p"], ["mknod", "-m", "600", "cu/null", "c", "1", "3"],
            ["mknod", "cu/wh", "c", "0", "0"], ["mkdir", "cu/nope/x"], ["mkdir", "f/x"],
            ["stat", "-c", "%F %a %n", "cu/a/b/c", "cu/sticky", "cu/p", "cu/p/q", "cu/fifo", "cu/np", "cu/wh"],
            ["sh", "-c", "umask 077; mkdir cu/um && mkfifo cu/umf && stat -c '%a %n' cu/um cu/umf"],
            ["tar", "-cf", "cu.tar", "deep", "fifo", "sock"], ["mkdir", "untar"],
            ["tar", "-xf", "cu.tar", "-C", "untar"], ["stat", "-c", "%F %a %n", "untar/deep/a/b/c", "untar/fifo"]):
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(" ".join(cmd), r.returncode, r.stdout.strip(), r.stderr.strip().replace(d, "<D>"))

print("## tree")
for root, dirs, files in sorted(os.walk(".")):
    for name in sorted(dirs + files):
        p = os.path.join(root, name)
        if not p.startswith("./ro"):
            print(p, kind(p))
