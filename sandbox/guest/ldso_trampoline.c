/*
 * ldso_trampoline.c: the code the supervisor writes into the padding
 * that ends the executable segment of the guest's copy of glibc's
 * dynamic loader (sandbox/src/launch/ldso_patch.rs; docs/fast-reads.md,
 * "The loader's own opens, from its first instruction"). The loader's
 * non-cancellable open site (site_patch.h's pattern) becomes, in that
 * copy, a jump to `ldso_slot`, so its opens before the preload is loaded
 * (the preload list, the preload, ld.so.cache, every library) are made
 * as the preload makes them: a plain read marked, made again unmarked
 * where the answer may be the supervisor's; every other call as built.
 *
 * Built (sandbox/build.rs) into one flat, position-independent image
 * linked at 0 (ldso_trampoline.ld): no data, no relocations, no C
 * library, general registers only, nothing written anywhere but the
 * stack. Its first five bytes are `jmp` back to the site's `syscall`'s
 * successor, whose displacement the patcher writes; the slot follows.
 *
 * Owns: what a call made through the copy's site becomes. Does not own
 * the pattern, the slot's bytes or the entry (site_patch.c), the file's
 * patch (ldso_patch.rs), the preload's open (fast_reads.c), whose check
 * this one does without state (below).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>

#include "raw_syscall.h"
#include "site_patch.h"
#include "spelled_off_proc.h"

/* Must equal sandbox_syscalls::policy::FAST_READ_MARK (fast_reads.c's). */
#define FAST_READ_MARK 0xa5c39e4f17b2d860UL
/* fast_reads.c's: a plain read has none of these. */
#define NOT_PLAIN (O_ACCMODE | O_PATH | O_DIRECTORY | O_CREAT | __O_TMPFILE | O_TRUNC)
#define PROC_SUPER_MAGIC 0x9fa0L
#define TMPFS_MAGIC 0x01021994L
#define EACCES_ 13
#define ELOOP_ 40
#define EINVAL_ 22
#define ENOSYS_ 38
#define E2BIG_ 7

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)

/* Offset 0: the jump back (its displacement written by the patcher);
 * offset 5: the slot the site jumps to, made of site_patch.h's bytes:
 * the site's three moves, the step over the red zone, the call of the
 * shared entry, the step back. */
__asm__(".section .text.ldso_slot,\"ax\",@progbits\n"
        ".globl ldso_back\n"
        "ldso_back:\n"
        "  .byte 0xe9\n"
        "  .long 0\n"
        ".globl ldso_slot\n"
        "ldso_slot:\n"
        "  .byte " STR(NOCANCEL_MOVE_BYTES) "\n"
        "  .byte " STR(SLOT_DOWN_BYTES) "\n"
        "  call rewrite_entry\n"
        "  .byte " STR(SLOT_UP_BYTES) "\n"
        "  jmp ldso_back\n"
        ".text\n");

static long sys(long nr, long a, long b, long c, long d, long e)
{
    return raw_syscall6(nr, a, b, c, d, e, 0);
}

/* Whether `fd`, opened marked, may be a file the supervisor serves: one
 * of a procfs or of a tmpfs (the covers' is one), or one fstatfs cannot
 * tell. The preload's check compares the devices of the view's /proc and
 * of the covers, learned once a process; the loader's copy keeps no
 * state, so it asks the file system's type, which covers both and more
 * (a library on /tmp goes to the supervisor: served as before). */
static int maybe_served(long fd)
{
    long st[15]; /* struct statfs: f_type first */
    if (sys(SYS_fstatfs, fd, (long)st, 0, 0, 0) != 0)
        return 1;
    return st[0] == PROC_SUPER_MAGIC || st[0] == TMPFS_MAGIC;
}

/* A plain read as the preload makes it (fast_reads.c's fast_open):
 * marked through openat2 with no symlink followed, needing no check when
 * its path is spelled off /proc; else marked through openat and checked;
 * made again unmarked, for the supervisor, after the fence's EACCES or a
 * check that says it may be served. */
static long plain_read(long dirfd, const char *path, long flags)
{
    struct {
        unsigned long long flags, mode, resolve;
    } how = {(unsigned long long)(unsigned)flags, 0, 0x04 /* RESOLVE_NO_SYMLINKS */};
    long fd = sys(437 /* openat2 */, dirfd, (long)path, (long)&how, sizeof how, (long)FAST_READ_MARK);
    if (fd >= 0 && spelled_off_proc(path))
        return fd;
    if (fd == -ELOOP_ || fd == -EINVAL_ || fd == -ENOSYS_ || fd == -E2BIG_)
        fd = sys(SYS_openat, dirfd, (long)path, flags, 0, (long)FAST_READ_MARK);
    if (fd >= 0 && !maybe_served(fd))
        return fd;
    if (fd >= 0)
        sys(SYS_close, fd, 0, 0, 0, 0);
    else if (fd != -EACCES_)
        return fd;
    return sys(SYS_openat, dirfd, (long)path, flags, 0, 0);
}

/* The site's call: its moves left openat(AT_FDCWD, path, flags, mode).
 * A plain read is made as the preload makes it; every other call (any
 * other flags, or a jump into the slot or the entry from elsewhere with
 * other registers) exactly as asked. */
long rewritten_call(const struct saved *s)
{
    if (s->rax == SYS_openat && ((long)s->rdx & NOT_PLAIN) == 0)
        return plain_read((long)s->rdi, (const char *)s->rsi, (long)s->rdx);
    return raw_syscall6((long)s->rax, (long)s->rdi, (long)s->rsi, (long)s->rdx, (long)s->r10, (long)s->r8,
                        (long)s->r9);
}
