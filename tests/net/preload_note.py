# Prepended to the scripts that forge the preload's socket notes
# (nodelay.py, socknames.py): where in this process's memory the
# preload keeps its note of descriptor `fd`.
import ctypes
import os
import struct


def note_slot(fd):
    """The address of the preload's note of socket `fd` (its descriptor
    and inode, found in the preload's writable mapping and the anonymous
    one after it), or None where no note names it."""
    key = struct.pack("=iQ", fd, os.fstat(fd).st_ino)
    slot = None
    with open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for i, line in enumerate(lines):
        if "sandbox-fast-reads" not in line or " rw" not in line:
            continue
        for span in [line] + [l for l in lines[i + 1 : i + 2] if len(l.split()) == 5]:
            lo, hi = (int(x, 16) for x in span.split()[0].split("-"))
            at = ctypes.string_at(lo, hi - lo).find(key)
            if at >= 4:
                slot = lo + at - 4
    return slot
