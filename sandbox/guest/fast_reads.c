/*
 * fast_reads.c: the sandbox's preload, loaded into every dynamically
 * linked guest process through the view's /etc/ld.so.preload
 * (sandbox/src/launch/fast_reads.rs says when; docs/fast-reads.md says
 * why it is safe).
 *
 * The filter traps every plain read open (no write access, O_PATH or
 * O_DIRECTORY) because one of the sandbox's own /proc files may be the
 * answer. This library's open family makes the same call with a mark in
 * a register the kernel ignores (r8, openat's fifth argument), which the
 * filter lets pass: the kernel opens natively, in the guest's own view,
 * with its own credentials. Nothing here is trusted. The guest's Landlock
 * domain (the fence) refuses any native read of the kernel's procfs but
 * /proc/sys and /proc/sysvipc, so a marked open can reach only what a
 * guest racing the supervisor's lookup reaches anyway. Correctness, not
 * security, is this file's job: an open that meets procfs or the
 * sandbox's covers (EACCES from the fence, or a descriptor whose device
 * is theirs) is closed and made again unmarked, so that the supervisor
 * serves it as before (and so is one refused EPERM for O_NOATIME, which
 * the kernel checks before the fence). An open for reading and writing
 * (O_RDWR without O_EXCL) is made marked too, and again unmarked only where the fence
 * refused it (a name made at the view's root since the start). An open
 * for writing only that the kernel refused (EACCES) is made again by
 * openat2, which the filter traps: the supervisor serves a reopen of a
 * file handed to the guest as its stdio.
 *
 * The path is read only after the kernel opened by it (to tell whether
 * its spelling keeps it off /proc): a bad pointer is the kernel's to
 * find (EFAULT), as with the C library's own open.
 *
 * fopen and fopen64 in a read mode make the same open, then hand the
 * descriptor to the C library's fdopen; any other mode goes to the C
 * library's own fopen, which glibc also exports as _IO_fopen. Another C
 * library (musl, whose dynamic loader takes this file from LD_PRELOAD)
 * has no _IO_fopen: there any other mode is opened here as musl's own
 * fopen opens it (its flags for the mode, 0666), then fdopen.
 *
 * freopen and freopen64 of a mode that writes only make the open here,
 * then put the file under the stream the C library's own freopen
 * reopened on /dev/null (the C library's freopen, found by
 * fast_reads_next.c, opens through an internal call).
 *
 * Built by sandbox/build.rs with no C library headers' inline code
 * and no start files; it needs only __errno_location, fdopen, fileno,
 * dl_iterate_phdr, memchr and strncmp, which
 * glibc (at GLIBC_2.2.5) and musl both export, and _IO_fopen, weakly.
 * One build serves both. Differences from the C library's open and
 * fopen: not a thread cancellation point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "fast_reads.h"
#include "raw_syscall.h"
#include "spelled_off_proc.h"
#include "write_reopen.h"

/* Must equal sandbox_syscalls::policy::FAST_READ_MARK (a unit test in
 * sandbox/src/launch/fast_reads.rs compares them). */
#define FAST_READ_MARK 0xa5c39e4f17b2d860UL

#define EXPORT __attribute__((visibility("default")))

/* Flags of which any one makes an open one the filter never traps, or
 * one whose work the handler does beyond the kernel's (creating). */
#define NOT_PLAIN (O_ACCMODE | O_PATH | O_DIRECTORY | O_CREAT | __O_TMPFILE | O_TRUNC)
#define NEEDS_MODE(f) (((f) & O_CREAT) || ((f) & __O_TMPFILE) == __O_TMPFILE)
/* An open for reading and writing is made marked when these flags are
 * O_RDWR alone (no O_PATH, O_DIRECTORY or O_EXCL): the fence checks it
 * as a read, and an unmarked retry after its EACCES gets the served
 * answer. Not with O_EXCL: the kernel makes an O_CREAT file before the
 * fence refuses it, and the retry would find it there (EEXIST); the
 * filter traps that one marked or not. */
#define READ_WRITE_MASK (O_ACCMODE | O_PATH | O_DIRECTORY | O_EXCL)

static long syscall5(long nr, long a, long b, long c, long d, long e)
{
    return raw_syscall6(nr, a, b, c, d, e, 0);
}

static long syscall2(long nr, long a, long b)
{
    return syscall5(nr, a, b, 0, 0, 0);
}

/* The devices of the view's procfs and of the covers' tmpfs, learned at
 * the first fast open of each process (two path stats, which pass the
 * filter). 0: not learned yet; UNKNOWN: no /proc, so no fast opens. */
#define UNKNOWN ((unsigned long)-1)
static unsigned long proc_dev, cover_dev;

static int learn_devices(void)
{
    /* Release and acquire: a thread that sees proc_dev sees cover_dev. */
    unsigned long p = __atomic_load_n(&proc_dev, __ATOMIC_ACQUIRE);
    if (p == 0) {
        struct stat st;
        p = UNKNOWN;
        if (syscall2(SYS_stat, (long)"/proc", (long)&st) == 0) {
            unsigned long c = st.st_dev;
            p = st.st_dev;
            /* Every cover is a file of one tmpfs, and /proc/sys/fs/file-nr
             * always has one under the fence. */
            if (syscall2(SYS_stat, (long)"/proc/sys/fs/file-nr", (long)&st) == 0)
                c = st.st_dev;
            __atomic_store_n(&cover_dev, c, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&proc_dev, p, __ATOMIC_RELEASE);
    }
    return p != UNKNOWN;
}

/* Whether descriptor `fd`, opened marked, is a file the supervisor may
 * serve (spelled_off_proc.h's maybe_served_file); an fstat that fails
 * says yes. */
static int maybe_served(long fd)
{
    struct stat st;
    if (syscall2(SYS_fstat, fd, (long)&st) != 0)
        return 1;
    return maybe_served_file(st.st_dev, st.st_mode, __atomic_load_n(&proc_dev, __ATOMIC_RELAXED),
                             __atomic_load_n(&cover_dev, __ATOMIC_RELAXED));
}


/* A plain read made marked by openat2 with RESOLVE_NO_SYMLINKS (0x04),
 * which the fenced filter passes marked: a descriptor, or the error of a
 * resolution through no symlink; -ELOOP where a symlink was met or the
 * call cannot be made so (EINVAL, ENOSYS, E2BIG). */
static long open_without_symlinks(int dirfd, const char *path, int flags)
{
    struct {
        unsigned long long flags, mode, resolve;
    } how = {(unsigned)flags, 0, 0x04};
    long fd = syscall5(437 /* openat2 */, dirfd, (long)path, (long)&how, sizeof how, FAST_READ_MARK);
    if (fd == -EINVAL || fd == -ENOSYS || fd == -E2BIG)
        return -ELOOP;
    return fd;
}

/* An open for writing only that the kernel refused (EACCES) made again
 * by openat2, which the filter always traps (write_reopen.h): the first
 * answer `refused` stands unless the second is a descriptor. */
static long write_open_trapped(int dirfd, const char *path, int flags, mode_t mode, long refused)
{
    struct write_reopen_how how;
    if (!write_reopen(refused, flags, mode, &how))
        return refused;
    long fd = syscall5(437 /* openat2 */, dirfd, (long)path, (long)&how, sizeof how, 0);
    return fd >= 0 ? fd : refused;
}

static int answer(long ret)
{
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (int)ret;
}

/* An open as this library makes it, the answer as the kernel's (-errno):
 * marked where the flags allow, made again unmarked where the answer may
 * be the supervisor's. Also the call of a rewritten site of the dynamic
 * loader's or the C library's own open (fast_reads_rewrite.c). */
long fast_open(int dirfd, const char *path, int flags, mode_t mode)
{
    long fd;
    if ((flags & READ_WRITE_MASK) == O_RDWR && learn_devices()) {
        /* Reading and writing: the kernel's answer is the one the
         * supervisor would give (CONTINUE, or its open as the caller),
         * unless the fence refused it. */
        fd = syscall5(SYS_openat, dirfd, (long)path, flags, NEEDS_MODE(flags) ? mode : 0,
                      FAST_READ_MARK);
        if (fd != -EACCES)
            return fd;
    } else if ((flags & NOT_PLAIN) == 0 && learn_devices()) {
        /* First with no symlink followed: what a path spelled off /proc
         * opened needs no check (docs/fast-reads.md, "The check"). */
        fd = open_without_symlinks(dirfd, path, flags);
        if (fd >= 0 && spelled_off_proc(path))
            return fd;
        if (fd == -ELOOP)
            fd = syscall5(SYS_openat, dirfd, (long)path, flags, 0, FAST_READ_MARK);
        if (fd >= 0 && !maybe_served(fd))
            return fd;
        if (fd >= 0)
            syscall2(SYS_close, fd, 0);
        else if (!refused_maybe_served(fd, flags))
            return fd;
        /* procfs, a cover, or refused by the fence or for O_NOATIME:
         * the supervisor's. */
    }
    fd = syscall5(SYS_openat, dirfd, (long)path, flags, NEEDS_MODE(flags) ? mode : 0, 0);
    return write_open_trapped(dirfd, path, flags, mode, fd);
}

static int open_at(int dirfd, const char *path, int flags, mode_t mode)
{
    return answer(fast_open(dirfd, path, flags, mode));
}

/* The C library's fortified open without a mode for a creating open. */
static void __attribute__((noreturn)) invalid_open_call(void)
{
    static const char msg[] = "*** invalid open call: O_CREAT or O_TMPFILE without mode ***: terminated\n";
    syscall5(SYS_write, 2, (long)msg, sizeof msg - 1, 0, 0);
    long pid = syscall5(SYS_getpid, 0, 0, 0, 0, 0);
    long tid = syscall5(SYS_gettid, 0, 0, 0, 0, 0);
    syscall5(SYS_tgkill, pid, tid, SIGABRT, 0, 0);
    for (;;)
        syscall5(SYS_exit_group, 127, 0, 0, 0, 0);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return NEEDS_MODE(flags) ? (mode_t)va_arg(ap, int) : 0;
}

/* open and openat, under their names and their 64-bit ones (the same
 * call on x86_64). */
#define OPENAT(name)                                                   \
    EXPORT int name(int dirfd, const char *path, int flags, ...)      \
    {                                                                  \
        va_list ap;                                                    \
        va_start(ap, flags);                                           \
        mode_t mode = mode_arg(flags, ap);                             \
        va_end(ap);                                                    \
        return open_at(dirfd, path, flags, mode);                      \
    }
#define OPEN(name)                                                     \
    EXPORT int name(const char *path, int flags, ...)                 \
    {                                                                  \
        va_list ap;                                                    \
        va_start(ap, flags);                                           \
        mode_t mode = mode_arg(flags, ap);                             \
        va_end(ap);                                                    \
        return open_at(AT_FDCWD, path, flags, mode);                   \
    }
OPENAT(openat)
OPENAT(openat64)
OPEN(open)
OPEN(open64)

/* The fortified forms, which take no mode (glibc's __open_2 ...). */
#define FORTIFIED_OPENAT(name)                                         \
    EXPORT int name(int dirfd, const char *path, int flags)           \
    {                                                                  \
        if (NEEDS_MODE(flags))                                         \
            invalid_open_call();                                       \
        return open_at(dirfd, path, flags, 0);                         \
    }
#define FORTIFIED_OPEN(name)                                           \
    EXPORT int name(const char *path, int flags)                      \
    {                                                                  \
        if (NEEDS_MODE(flags))                                         \
            invalid_open_call();                                       \
        return open_at(AT_FDCWD, path, flags, 0);                      \
    }
FORTIFIED_OPENAT(__openat_2)
FORTIFIED_OPENAT(__openat64_2)
FORTIFIED_OPEN(__open_2)
FORTIFIED_OPEN(__open64_2)

/* glibc's fopen under its other exported name: this library defines
 * fopen, not _IO_fopen. Weak: musl has none, and then it is NULL. */
extern FILE *_IO_fopen(const char *path, const char *mode) __attribute__((weak));

/* The open flags of `mode` when it is a read mode whose every letter this
 * file handles as the C library's fopen does: 'r', then at most six of
 * b and t (ignored), m (fdopen maps the file) and e (close-on-exec).
 * -1 for any other mode: '+', 'x', 'c', ",ccs=", writing. */
static int read_mode_flags(const char *mode)
{
    int flags = O_RDONLY;
    if (mode[0] != 'r')
        return -1;
    for (int i = 1; mode[i] != '\0'; i++) {
        if (i > 6)
            return -1;
        switch (mode[i]) {
        case 'b':
        case 't':
        case 'm':
            break;
        case 'e':
            flags |= O_CLOEXEC;
            break;
        default:
            return -1;
        }
    }
    return flags;
}

/* Whether `s` holds the letter `c`. */
static int has(const char *s, char c)
{
    for (; *s != '\0'; s++)
        if (*s == c)
            return 1;
    return 0;
}

/* The open flags musl's fopen gives `mode` (its __fmodeflags); -1 (and
 * EINVAL) when the first letter is none of r, w, a, as in musl. */
static int other_mode_flags(const char *mode)
{
    if (mode[0] != 'r' && mode[0] != 'w' && mode[0] != 'a')
        return -1;
    int flags = has(mode, '+') ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
    if (has(mode, 'x'))
        flags |= O_EXCL;
    if (has(mode, 'e'))
        flags |= O_CLOEXEC;
    if (mode[0] != 'r')
        flags |= O_CREAT;
    if (mode[0] == 'w')
        flags |= O_TRUNC;
    if (mode[0] == 'a')
        flags |= O_APPEND;
    return flags;
}

/* glibc's own fopen of a mode that writes only ('w', 'a', no '+'), made
 * again as write_open_trapped makes an open when the kernel refused it:
 * the C library opens through an internal call this library cannot
 * reach (`tee /dev/stderr` with stderr a host file, as root). */
static FILE *fopen_for_writing(const char *path, const char *mode)
{
    FILE *file = _IO_fopen(path, mode);
    int flags = other_mode_flags(mode);
    if (file != NULL || errno != EACCES || flags < 0)
        return file;
    long fd = write_open_trapped(AT_FDCWD, path, flags, 0666, -EACCES);
    if (fd < 0)
        return NULL;
    file = fdopen((int)fd, mode);
    if (file == NULL) {
        int saved = errno;
        syscall2(SYS_close, fd, 0);
        errno = saved;
    }
    return file;
}

static FILE *fopen_common(const char *path, const char *mode)
{
    int flags = read_mode_flags(mode);
    if (flags < 0 && _IO_fopen != NULL)
        return fopen_for_writing(path, mode);
    if (flags < 0)
        flags = other_mode_flags(mode);
    if (flags < 0) {
        errno = EINVAL;
        return NULL;
    }
    int fd = open_at(AT_FDCWD, path, flags, 0666);
    if (fd < 0)
        return NULL;
    FILE *file = fdopen(fd, mode);
    if (file == NULL) {
        int saved = errno;
        syscall2(SYS_close, fd, 0);
        errno = saved;
    }
    return file;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
    return fopen_common(path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopen_common(path, mode);
}

typedef FILE *freopen_fn(const char *path, const char *mode, FILE *file);

/* freopen of a mode that writes only ('w' or 'a', no '+' or 'x') and a
 * path: the open made here (so a write-only open the kernel refused is
 * made again by openat2, which the C library's own freopen, opening
 * through an internal call, cannot do), then the stream reopened on
 * /dev/null by the C library's freopen (its state, its descriptor's
 * number and close-on-exec flag as for `path`) and the file put in its
 * descriptor's place, as the C library's freopen puts its own open's.
 * Where this open fails, or there is no /dev/null, the C library's
 * freopen of `path` gives the answer. Any other call is the C
 * library's. */
static FILE *freopen_common(const char *path, const char *mode, FILE *file, const char *name,
                            const char *other)
{
    freopen_fn *own = next_definition(name);
    if (own == NULL)
        own = next_definition(other);
    if (own == NULL) {
        errno = ENOSYS;
        return NULL;
    }
    int flags = path != NULL ? other_mode_flags(mode) : -1;
    if (flags < 0 || (flags & (O_ACCMODE | O_EXCL)) != O_WRONLY)
        return own(path, mode, file);
    int fd = open_at(AT_FDCWD, path, flags, 0666);
    if (fd < 0)
        return own(path, mode, file);
    FILE *got = own("/dev/null", mode, file);
    if (got == NULL || syscall5(SYS_dup3, fd, fileno(got), flags & O_CLOEXEC, 0, 0) < 0) {
        syscall2(SYS_close, fd, 0);
        return own(path, mode, got != NULL ? got : file);
    }
    syscall2(SYS_close, fd, 0);
    return got;
}

EXPORT FILE *freopen(const char *path, const char *mode, FILE *file)
{
    return freopen_common(path, mode, file, "freopen", "freopen64");
}

EXPORT FILE *freopen64(const char *path, const char *mode, FILE *file)
{
    return freopen_common(path, mode, file, "freopen64", "freopen");
}
