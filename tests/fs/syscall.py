# Raw system calls for the scripts in tests/fs, which their tests run with
# this text put before theirs: raw(name, *args) makes the call numbered
# NR[name] (each script's own table) and answers its result, or the name
# of its errno. Arguments: bytes (a C string), int (a long), or ctypes.
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KERNEL = 0xFFFF888000000000
def arg(a):
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    if isinstance(a, int):
        return ctypes.c_long(a)
    return a
def raw(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]), *[arg(a) for a in args])
    return r if r >= 0 else errno.errorcode[ctypes.get_errno()]
