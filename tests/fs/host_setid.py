# No set-id program of the host's made by the guest: its stdout (a file
# of the host's the test redirected it to) and a file and a directory in
# a `--rw` mount (argv[2]) lose the set-id bits a chmod asks for; the
# layer's own files keep them, as on Linux. A program is written first
# (writes clear the bits). The probes' lines go to stderr: stdout is the
# host's file. Never run natively (host_probe.py, its head).
sys.stdout = sys.stderr
PROGRAM = b"\x7fELF\x02\x01\x01" + bytes(57)


def mode(path):
    return lambda: oct(os.stat(path).st_mode & 0o7777)


os.write(1, PROGRAM)
probe("fchmod stdout 04755", lambda: os.fchmod(1, 0o4755))
probe("chmod stdout link 06755", lambda: os.chmod("/proc/self/fd/1", 0o6755))
rw = sys.argv[2]
prog = os.path.join(rw, "prog")
fd = os.open(prog, os.O_CREAT | os.O_WRONLY, 0o755)
os.write(fd, PROGRAM)
probe("fchmod rw 04755", lambda: os.fchmod(fd, 0o4755))
probe("chmod rw 06755", lambda: os.chmod(prog, 0o6755))
probe("mode rw", mode(prog))
# Bits that make no program stay (as on Linux); execute given later goes
# through the same check.
probe("chmod rw 02644", lambda: os.chmod(prog, 0o2644))
probe("mode rw", mode(prog))
probe("chmod rw 04644", lambda: os.chmod(prog, 0o4644))
probe("mode rw", mode(prog))
probe("chmod rw 04744", lambda: os.chmod(prog, 0o4744))
probe("mode rw", mode(prog))
probe("chmod rw 0755", lambda: os.chmod(prog, 0o755))
shared = os.path.join(rw, "shared")
os.mkdir(shared)
probe("chmod rw dir 06775", lambda: os.chmod(shared, 0o6775))
probe("mode rw dir", mode(shared))
own = "/tmp/own"
with open(own, "wb") as f:
    f.write(PROGRAM)
probe("chmod own 04755", lambda: os.chmod(own, 0o4755))
probe("mode own", mode(own))
