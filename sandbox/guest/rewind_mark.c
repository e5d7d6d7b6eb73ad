/*
 * rewind_mark.c: the preload's lseek. The filter traps a rewind
 * (lseek(fd, 0, SEEK_SET)) so that a served /proc file kept open is
 * rendered again (syscalls/src/handlers/lseek.rs), and every other file's
 * rewind pays that round trip only to be passed to the kernel (CONTINUE).
 * Every file the supervisor serves is a memfd, which no directory links:
 * a file whose fstat shows a link (a file of the view, procfs's own files
 * installed as they are, a pipe's or socket's inode) is rewound here
 * marked, FAST_READ_MARK in r10, which the kernel ignores for lseek's
 * three arguments and the filter passes. One fstat in place of a round
 * trip (procps rewinds /proc/meminfo twice a `ps`, Python seeks a file to
 * 0 where it rereads it). An fstat that fails, or no link (a memfd, a
 * deleted file), makes the call unmarked: the supervisor's, as without
 * the preload.
 *
 * Nothing here is trusted: a marked rewind is the kernel's seek, which
 * gives the guest nothing (docs/procfs.md). Only calls through the lseek
 * symbol come here; the C library's own seeks (fseek, rewind) stay
 * trapped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "raw_syscall.h"

/* Must equal sandbox_syscalls::policy::FAST_READ_MARK (a unit test in
 * sandbox/src/launch/fast_reads.rs compares them). */
#define FAST_READ_MARK 0xa5c39e4f17b2d860UL

#define EXPORT __attribute__((visibility("default")))

/* Whether `fd` is a file no served one can be: fstat shows a link. */
static int linked(int fd)
{
    struct stat st;
    return raw_syscall6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && st.st_nlink != 0;
}

static off_t seek(int fd, off_t offset, int whence)
{
    long mark = offset == 0 && whence == SEEK_SET && linked(fd) ? (long)FAST_READ_MARK : 0;
    long ret = raw_syscall6(SYS_lseek, fd, (long)offset, whence, mark, 0, 0);
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return (off_t)ret;
}

/* lseek and its 64-bit name (the same call on x86_64). */
EXPORT off_t lseek(int fd, off_t offset, int whence)
{
    return seek(fd, offset, whence);
}

EXPORT off_t lseek64(int fd, off_t offset, int whence)
{
    return seek(fd, offset, whence);
}
