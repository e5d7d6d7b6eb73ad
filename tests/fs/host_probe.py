# The probes' common head (tests/fs/host_shared.rs puts it before each
# script): refuse to run natively (the host marker, argv[1]), and
# `probe`, which prints a label and "ok", the value, or the errno's name.
import errno, os, sys

if os.path.exists(sys.argv[1]):
    sys.exit("NOT SANDBOXED: refusing to run")


def probe(label, f):
    try:
        r = f()
        print(label, "ok" if r is None else r)
    except OSError as e:
        print(label, errno.errorcode.get(e.errno, e.errno))
